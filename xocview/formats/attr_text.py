"""NNVM/MXNet attribute strings (``"(3, 3)"``, ``"True"``, ``"1e-05"``) as values, never by eval.

Every MXNet and TVM attribute value is a string written by C++ or Python ``str()``: tuples
``"(1, 1)"``/``"(8L,)"``, lists ``"[3, 3]"``, ``"True"``/``"False"``/``"None"``, numbers, enum
words, and JSON held in a string (``__init__`` is ``"[\\"zero\\", {}]"``). ``parse`` turns the
forms it recognises into Python values and leaves any other text as the string itself, so a
file can never make it fail, run code or recurse without bound.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = ["MAX_DEPTH", "parse", "parse_attrs"]

MAX_DEPTH = 32  # deeper nesting is kept as text: no file needs it, and it bounds the recursion
_MAX_DIGITS = 4000  # longer integers stay text (Python's int() refuses past 4,300 digits)

_INT = re.compile(r"[+-]?\d+[lL]?")  # Python 2 longs ("8L") appear in old __shape__ values
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_WORDS: dict[str, Any] = {"True": True, "False": False, "None": None, "true": True, "false": False}
# Inside brackets JSON's words count too ("[\"zero\", {\"a\": null}]"); at the top level a bare
# "null" stays text, since MXNet enums use it (BatchNorm-era ``normalization="null"``).
_INNER_WORDS: dict[str, Any] = {**_WORDS, "null": None}
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<open>[(\[{]) | (?P<close>[)\]}]) | (?P<comma>,) | (?P<colon>:)
      | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<num>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[lL]?)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_SINGLE_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_CLOSE = {"(": ")", "[": "]", "{": "}"}


def parse(text: str) -> Any:
    """The value ``text`` stands for; text of no recognised form is returned unchanged.

    Tuples and lists become lists (XOC JSON has no tuples), ``"1"`` an int, ``"1e-05"`` a
    float, ``"True"``/``"None"`` a bool/None, a JSON object a dict.
    """
    s = text.strip()
    if not s:
        return text
    if s in _WORDS:
        return _WORDS[s]
    if _INT.fullmatch(s):
        return int(s.rstrip("lL")) if len(s) <= _MAX_DIGITS else text
    if _FLOAT.fullmatch(s):
        return float(s)
    if s[0] in _CLOSE:
        try:
            value, end = _Parser(s).value(0, 0)
        except _NotRecognised:
            return text
        return value if end == len(s) else text
    return text


def parse_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Every string value parsed; values that are already numbers or booleans kept.

    Graphs repeat a few texts ("(3, 3)", "relu") thousands of times, so parses are cached;
    each node gets its own copy of a list or dict, since metadata may be edited in place.
    """
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        if isinstance(v, str):
            v = _cached(v)
            if isinstance(v, (list, dict)):
                v = _fresh(v)
        out[k] = v
    return out


_cached = lru_cache(maxsize=4096)(parse)


def _fresh(value: Any) -> Any:
    """A copy of nested lists and dicts (their scalars are immutable and shared)."""
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


class _NotRecognised(Exception):
    """The text is not a bracketed value this parser knows; the caller keeps the text."""


class _Parser:
    """Recursive descent over tokens of one bracketed value."""

    def __init__(self, text: str) -> None:
        self.text = text

    def token(self, pos: int) -> tuple[str, str, int]:
        m = _TOKEN.match(self.text, pos)
        if m is None or m.lastgroup is None:
            raise _NotRecognised
        return m.lastgroup, m.group(m.lastgroup), m.end()

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        kind, tok, end = self.token(pos)
        if kind == "open":
            if depth >= MAX_DEPTH:
                raise _NotRecognised
            if tok == "{":
                return self.mapping(end, depth + 1)
            return self.sequence(end, _CLOSE[tok], depth + 1)
        if kind == "num":
            bare = tok.rstrip("lL")
            if not _INT.fullmatch(tok):
                return float(bare), end
            if len(bare) > _MAX_DIGITS:
                raise _NotRecognised  # Python refuses to convert it; the text is kept
            return int(bare), end
        if kind == "str":
            return _unquote(tok), end
        if kind == "word" and tok in _INNER_WORDS:
            return _INNER_WORDS[tok], end
        raise _NotRecognised

    def sequence(self, pos: int, close: str, depth: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        kind, tok, end = self.token(pos)
        if kind == "close":
            if tok != close:
                raise _NotRecognised
            return items, end
        while True:
            item, pos = self.value(pos, depth)
            items.append(item)
            kind, tok, pos = self.token(pos)
            if kind == "close" and tok == close:
                return items, pos
            if kind != "comma":
                raise _NotRecognised
            kind, tok, end = self.token(pos)
            if kind == "close" and tok == close:  # "(8L,)": Python's one-element tuple
                return items, end

    def mapping(self, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        kind, tok, end = self.token(pos)
        if kind == "close":
            if tok != "}":
                raise _NotRecognised
            return out, end
        while True:
            kind, tok, pos = self.token(pos)
            if kind != "str":
                raise _NotRecognised
            key = _unquote(tok)
            kind, _, pos = self.token(pos)
            if kind != "colon":
                raise _NotRecognised
            out[key], pos = self.value(pos, depth)
            kind, tok, pos = self.token(pos)
            if kind == "close" and tok == "}":
                return out, pos
            if kind != "comma":
                raise _NotRecognised


def _unquote(tok: str) -> str:
    """A quoted token's text: JSON's rules for double quotes, Python's common escapes for single."""
    if tok[0] == '"':
        try:
            return str(json.loads(tok))
        except ValueError as e:  # a bad escape: not a value we recognise
            raise _NotRecognised from e
    return _SINGLE_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), tok[1:-1])
