"""onnxruntime's Tokenizer (com.microsoft): strings split into tokens along a new last axis.

The separators and tokenexp are RE2 expressions; Python's ``re`` reads the common subset
(classes, repetitions, alternation, escapes) the same way, and refuses what it cannot read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.contrib_qlinear import MS
from xocview.executor.registry import kernel

__all__ = ["tokenizer"]

_START, _END = "\x02", "\x03"


def _text(v: str | bytes) -> str:
    return v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v)


def _compile(op: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(f"{op}: expression {pattern!r} cannot be read ({e.msg})") from None


def _splitter(
    op: str, separators: Sequence[str | bytes] | None, tokenexp: str | bytes
) -> tuple[str, re.Pattern[str] | None]:
    """("chars", None), ("split", separators) or ("match", tokenexp): the mode and its regex."""
    seps = [_text(s) for s in separators or []]
    exp = _text(tokenexp)
    if bool(seps) == bool(exp):
        raise ValueError(f"{op}: exactly one of separators and tokenexp must be set")
    if seps == [""] or exp == ".":
        return "chars", None
    if exp:
        return "match", _compile(op, exp)
    if "" in seps:
        raise ValueError(f"{op}: an empty separator must be the only one")
    return "split", _compile(op, "|".join(f"(?:{s})" for s in seps))


def _tokens(text: str, mode: str, regex: re.Pattern[str] | None, mincharnum: int) -> list[str]:
    if mode == "chars":
        found = list(text)
    elif mode == "split":
        assert regex is not None
        found = [t for t in regex.split(text) if t]
    else:
        assert regex is not None
        found = [m.group(0) for m in regex.finditer(text) if m.group(0)]
    return [t for t in found if len(t) >= mincharnum]


@kernel("Tokenizer", domain=MS)
def tokenizer(
    X: np.ndarray,
    *,
    mark: int,
    mincharnum: int,
    pad_value: str | bytes,
    separators: Sequence[str | bytes] | None = None,
    tokenexp: str | bytes = "",
) -> np.ndarray:
    """[C] -> [C, D] and [N, C] -> [N, C, D]: each string's tokens (by removing separators, or
    by matching tokenexp left to right; [""] and "." split into characters), those shorter
    than mincharnum dropped, framed by 0x02 and 0x03 with ``mark``, padded with pad_value."""
    op = "Tokenizer"
    if X.dtype.kind not in "OUS":
        raise ValueError(f"{op}: X of dtype {X.dtype} is not supported; expected strings")
    if X.ndim not in (1, 2):
        raise ValueError(f"{op}: X has shape {list(X.shape)}; expected [C] or [N, C]")
    if X.size == 0:
        return np.empty(X.shape, dtype=object)
    mode, regex = _splitter(op, separators, tokenexp)
    rows = [_tokens(_text(s), mode, regex, int(mincharnum)) for s in X.reshape(-1)]
    if mark:
        rows = [[_START, *r, _END] for r in rows]
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), _text(pad_value), dtype=object)
    for i, r in enumerate(rows):  # one row per string: the tokens are Python strings anyway
        out[i, : len(r)] = r
    return out.reshape(*X.shape, width)
