from ._dist_info import __version__  # noqa: F401
