"""Everything Qt: the application, windows, canvas, panels. The only package importing PySide6."""
