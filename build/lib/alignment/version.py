"""The package version (`alignment --version`), in a module of its own so any module can read it."""

__version__ = "0.1.0"
