"""Names of JSON value types for error messages ("is a number; expected a string")."""

from __future__ import annotations

from typing import Any

__all__ = ["json_type"]


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type with its article."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
