"""File formats: one sub-package per format plus the registry that detects and dispatches."""

from xocview.formats.registry import FORMATS, check, detect, load, save

__all__ = ["FORMATS", "check", "detect", "load", "save"]
