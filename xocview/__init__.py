"""xocview: view, edit and profile neural-network computation graphs."""

__version__ = "0.1.0"
