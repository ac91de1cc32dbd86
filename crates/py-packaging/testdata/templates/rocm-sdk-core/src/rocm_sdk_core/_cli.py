import importlib.util, os, sys
from pathlib import Path


def clang():
    from ._dist_info import ALL_PACKAGES
    name = ALL_PACKAGES["core"].get_py_package_name()
    root = Path(importlib.util.find_spec(name).origin).parent
    exe = root / "lib" / "llvm" / "bin" / "clang"
    os.execv(exe, [str(exe)] + sys.argv[1:])
