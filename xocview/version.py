"""The version of xocview, in a module of its own so that the window and the command line can
name it without importing the package root (which offers the API, above the ``ui`` layer)."""

__version__ = "0.1.0"
