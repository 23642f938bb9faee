"""The only module that knows where the resources/ folder (icons, styles, op data) lives."""

from __future__ import annotations

from pathlib import Path

__all__ = ["resource_path"]

_ROOT = Path(__file__).resolve().parent.parent / "resources"


def resource_path(name: str) -> Path:
    """Path of a file in resources/; FileNotFoundError names it when it is missing."""
    path = _ROOT / name
    if not path.exists():
        raise FileNotFoundError(f"resource '{name}' not found in {_ROOT}")
    return path
