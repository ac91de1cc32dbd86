"""Profiler fixture package."""
