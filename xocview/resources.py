"""The only module that knows where the resources/ folder (icons, styles, op data) lives."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["packaging_path", "resource_path"]


def _base() -> Path:
    """The checkout (or install) root; a PyInstaller build unpacks its data to ``_MEIPASS``."""
    frozen = getattr(sys, "_MEIPASS", None)
    return Path(frozen) if frozen else Path(__file__).resolve().parent.parent


_ROOT = _base() / "resources"


def resource_path(name: str) -> Path:
    """Path of a file in resources/; FileNotFoundError names it when it is missing."""
    path = _ROOT / name
    if not path.exists():
        raise FileNotFoundError(f"resource '{name}' not found in {_ROOT}")
    return path


def packaging_path(name: str) -> Path:
    """Path of a file in packaging/ (desktop files); FileNotFoundError when it is missing."""
    path = _base() / "packaging" / name
    if not path.exists():
        raise FileNotFoundError(f"packaging file '{name}' not found in {path.parent}")
    return path
