"""Dotted keys: ``{"perf.time.cpu": 1}`` <-> ``{"perf": {"time": {"cpu": 1}}}``."""

from __future__ import annotations

from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_METADATA_DEPTH",
    "DottedKeyConflict",
    "expand_dotted",
    "expand_dotted_if_possible",
    "flatten_dotted",
    "has_dotted_keys",
    "nesting",
]

# A JSON document (a graph file, a metadata entry) nests at most this deep when read
# (formats/json_text.py); the walkers of metadata stay far inside Python's stack.
MAX_DEPTH = 200
# Expanding dotted keys never makes metadata nest deeper than this (the dict itself counts as
# one level), so that the written file, where metadata sits a few levels down, reads back.
MAX_METADATA_DEPTH = MAX_DEPTH - 8


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
    stack = [mapping]
    while stack:
        for key, value in stack.pop().items():
            if "." in key:
                return True
            if isinstance(value, dict) and value:
                stack.append(value)
    return False


def expand_dotted(mapping: dict[str, Any], kept: list[str] | None = None) -> dict[str, Any]:
    """A new nested dict with every dotted key split into levels; input order is kept.

    A key whose levels would make the result nest deeper than ``MAX_METADATA_DEPTH`` is kept
    whole, as are keys with empty parts (``a..b``); the dotted places of the first kind
    (``outer.a.a.a…``) are added to ``kept`` when it is given. Works without recursion, so
    that no depth of input can exhaust the stack. Raises DottedKeyConflict when a dotted key
    would overwrite a non-dict value or two keys name the same leaf.
    """
    stack = [_Level(mapping, 1, "")]
    while True:
        level = stack[-1]
        for key, value in level.items:
            if isinstance(value, dict):
                stack.append(_Level(value, level.depth + 1, key))
                break
            level.place(key, value, nesting(value), stack, kept)
        else:
            stack.pop()
            if not stack:
                return level.out
            stack[-1].place(level.key, level.out, level.height, stack, kept)


class _Level:
    """One dict being expanded: its items still to place, what is placed, how deep it is."""

    def __init__(self, source: dict[str, Any], depth: int, key: str) -> None:
        self.items = iter(source.items())
        self.depth = depth  # 1 for the top dict; its ancestors' splits are checked by them
        self.key = key  # its key in the dict above
        self.out: dict[str, Any] = {}
        self.height = 1  # levels of the placed result, this dict included

    def place(
        self, key: str, value: Any, height: int, stack: list[_Level], kept: list[str] | None
    ) -> None:
        parts = key.split(".") if "." in key else [key]
        if any(not p for p in parts):
            parts = [key]  # "a..b", ".a" are not paths; keep such keys whole
        elif self.depth + len(parts) - 1 + height > MAX_METADATA_DEPTH:
            if kept is not None:
                kept.append(".".join([*(lv.key for lv in stack[1:]), key]))
            parts = [key]
        _put(self.out, parts, value, key)
        self.height = max(self.height, len(parts) + height)


def nesting(value: Any) -> int:
    """Levels of dicts and lists in ``value`` (0 for a scalar), without recursion."""
    if not isinstance(value, (dict, list)):
        return 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        inner = item.values() if isinstance(item, dict) else item
        stack.extend((v, depth + 1) for v in inner if isinstance(v, (dict, list)))
    return deepest


def _put(out: dict[str, Any], parts: list[str], value: Any, key: str) -> None:
    """Place ``value`` at ``parts`` under ``out``, merging dicts that meet at one place."""
    work: list[tuple[dict[str, Any], list[str], Any, tuple[str, ...]]] = [(out, parts, value, ())]
    while work:
        node, parts, value, base = work.pop()  # ``base``: where ``node`` sits (for errors)
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise DottedKeyConflict(key, ".".join([*base, *parts[: depth + 1]]))
            node = child
        last = parts[-1]
        if last not in node:
            node[last] = value
            continue
        existing = node[last]
        if not (isinstance(existing, dict) and isinstance(value, dict)):
            raise DottedKeyConflict(key, ".".join([*base, *parts]))
        where = (*base, *parts)
        work.extend((existing, [k], v, where) for k, v in reversed(value.items()))


def flatten_dotted(mapping: dict[str, Any], prefix: str | None = None) -> dict[str, Any]:
    """Leaves of a nested dict under dotted keys; an empty dict stays as a leaf."""
    out: dict[str, Any] = {}
    stack = [(iter(mapping.items()), prefix)]
    while stack:
        items, above = stack[-1]
        for key, value in items:
            path = key if above is None else f"{above}.{key}"
            if isinstance(value, dict) and value:
                stack.append((iter(value.items()), path))
                break
            out[path] = value
        else:
            stack.pop()
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
