"""Dotted keys: ``{"perf.time.cpu": 1}`` <-> ``{"perf": {"time": {"cpu": 1}}}``."""

from __future__ import annotations

from typing import Any

__all__ = [
    "DottedKeyConflict",
    "expand_dotted",
    "expand_dotted_if_possible",
    "flatten_dotted",
    "has_dotted_keys",
]


class DottedKeyConflict(ValueError):
    """Two keys claim one place (``"a": 1`` and ``"a.b": 2``).

    ``key`` is the key being placed when the clash shows, ``path`` the full dotted place taken.
    """

    def __init__(self, key: str, path: str) -> None:
        self.key = key
        self.path = path
        super().__init__(f"key '{key}' conflicts with the value already at '{path}'")


def has_dotted_keys(mapping: dict[str, Any]) -> bool:
    """True when any key at any depth contains a dot (the cheap test before expanding)."""
    for key, value in mapping.items():
        if "." in key:
            return True
        if isinstance(value, dict) and value and has_dotted_keys(value):
            return True
    return False


def expand_dotted(mapping: dict[str, Any]) -> dict[str, Any]:
    """A new nested dict with every dotted key split into levels; input order is kept.

    Raises DottedKeyConflict when a dotted key would overwrite a non-dict value or two keys
    name the same leaf.
    """
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            value = expand_dotted(value)
        parts = key.split(".") if "." in key else [key]
        if any(not p for p in parts):
            parts = [key]  # "a..b", ".a" are not paths; keep such keys whole
        _put(out, parts, value, key)
    return out


def _put(
    out: dict[str, Any], parts: list[str], value: Any, key: str, base: tuple[str, ...] = ()
) -> None:
    """Place ``value`` at ``parts`` under ``out``; ``base`` is where ``out`` sits (for errors)."""
    node = out
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise DottedKeyConflict(key, ".".join([*base, *parts[: depth + 1]]))
        node = child
    last = parts[-1]
    if last in node:
        existing = node[last]
        if isinstance(existing, dict) and isinstance(value, dict):
            for k, v in value.items():
                _put(existing, [k], v, key, (*base, *parts))
            return
        raise DottedKeyConflict(key, ".".join([*base, *parts]))
    node[last] = value


def flatten_dotted(mapping: dict[str, Any], prefix: str | None = None) -> dict[str, Any]:
    """Leaves of a nested dict under dotted keys; an empty dict stays as a leaf."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        path = key if prefix is None else f"{prefix}.{key}"
        if isinstance(value, dict) and value:
            out.update(flatten_dotted(value, path))
        else:
            out[path] = value
    return out


def expand_dotted_if_possible(mapping: dict[str, Any]) -> dict[str, Any]:
    """``mapping`` with dotted keys expanded (the form XOC JSON reads back), or unchanged when
    it has none or two of its keys conflict. Loaders use it on names they do not control
    (ONNX metadata_props, custom attribute and param names)."""
    if not mapping or not has_dotted_keys(mapping):
        return mapping
    try:
        return expand_dotted(mapping)
    except DottedKeyConflict:
        return mapping
