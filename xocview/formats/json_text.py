"""JSON from files, nested at most ``MAX_DEPTH`` deep whatever the caller's stack.

``json.loads`` recurses in C: it gives up somewhere under 1,000 levels, and where exactly
depends on how deep the caller's own stack is, so one file could open in ``check`` and fail in
``info``; what it does read may still be too deep for the Python walkers that come after it
(metadata expansion, the writer, copies). So the depth is measured first, on the bytes, with
no recursion: a document deeper than ``MAX_DEPTH`` is refused (``JsonTooDeep``) with its line,
column and, where the rest of the document can be read, the JSON path of the place.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from xocview.model.dotted import MAX_DEPTH

__all__ = ["MAX_DEPTH", "JsonTooDeep", "loads"]

_KIND = np.zeros(256, dtype=np.int8)  # 1 opens, -1 closes a container, 2 is a quote
_KIND[[ord("{"), ord("[")]] = 1
_KIND[[ord("}"), ord("]")]] = -1
_KIND[ord('"')] = 2
_BACKSLASH = ord("\\")
_CHUNK = 1 << 20  # bytes scanned at once: the arrays of a chunk stay a few MB
_MARK = "\u0000xocview: too deep\u0000"
_SHOWN_PARTS = 5  # a place names this many levels, then "…"


class JsonTooDeep(ValueError):
    """A document nested ``depth`` deep, more than ``MAX_DEPTH``; the first container past the
    limit opens at ``line``/``column`` (1-based, bytes) and sits at ``place`` ('' if unknown)."""

    def __init__(
        self, depth: int, line: int, column: int, place: str, limit: int = MAX_DEPTH
    ) -> None:
        self.depth, self.line, self.column, self.place = depth, line, column, place
        self.limit = limit
        super().__init__(
            f"{place or f'line {line} column {column}'}: nested {depth:,} deep; "
            f"at most {limit} levels of arrays and objects are read"
        )


def loads(text: str, data: bytes | None = None, *, limit: int = MAX_DEPTH) -> Any:
    """``json.loads(text)``, or JsonTooDeep for a document nested deeper than ``limit``
    (at most ``MAX_DEPTH``: a command-line value may be held to less).

    ``data`` is the file's bytes when the caller has them (``text`` decoded from them), which
    spares encoding the text again. Other faults raise as ``json.loads`` does.
    """
    limit = min(limit, MAX_DEPTH)
    raw = text.encode("utf-8", "surrogatepass") if data is None else data
    found = _scan(raw, limit)
    if found is not None:
        depth, starts, ends = found
        line, column = _line_column(raw, int(starts[0]))
        raise JsonTooDeep(depth, line, column, _place(raw, starts, ends), limit)
    try:
        return json.loads(text)
    except RecursionError as e:  # cannot happen below MAX_DEPTH; kept as a located refusal
        raise JsonTooDeep(limit + 1, 1, 1, "", limit) from e


def _scan(raw: bytes, limit: int | None = None) -> tuple[int, np.ndarray, np.ndarray] | None:
    """None when ``raw`` nests at most ``limit`` (``MAX_DEPTH``) deep; else its depth, where
    containers past the limit open, and where they close (offsets; fewer ends for an unclosed
    one).

    Only brackets outside strings count; a quote ends a string unless an odd run of
    backslashes precedes it. Chunks carry the depth, the string state and the last byte that
    was not a backslash across their edges.
    """
    limit = MAX_DEPTH if limit is None else limit
    if raw.count(b"{") + raw.count(b"[") <= limit:
        return None  # the common small case: no scan needed
    b = np.frombuffer(raw, dtype=np.uint8)
    depth, inside, deepest, plain_at = 0, False, 0, -1
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    for off in range(0, len(b), _CHUNK):
        chunk = b[off : off + _CHUNK]
        kind = _KIND[chunk]
        idx = np.flatnonzero(kind)
        k = kind[idx]
        quote = k == 2
        if quote.any():
            quote[quote] = ~_escaped(b, chunk, off, idx[quote] + off, plain_at)
            flips = np.cumsum(quote) - quote  # real quotes before each position
            outside = (flips % 2 == 1) == inside
            inside ^= bool(quote.sum() % 2)
        else:
            outside = np.full(len(idx), not inside)
        structural = outside & (k != 2)
        pos, step = idx[structural] + off, k[structural].astype(np.int64)
        after = depth + np.cumsum(step)
        if after.size:
            depth = int(after[-1])
            deepest = max(deepest, int(after.max()))
            starts.append(pos[(step > 0) & (after == limit + 1)])
            ends.append(pos[(step < 0) & (after == limit)])
        nonslash = np.flatnonzero(chunk != _BACKSLASH) if chunk[-1] == _BACKSLASH else None
        if nonslash is None:
            plain_at = off + len(chunk) - 1
        elif nonslash.size:
            plain_at = off + int(nonslash[-1])
    if deepest <= limit:
        return None
    return deepest, np.concatenate(starts), np.concatenate(ends)


def _escaped(
    b: np.ndarray, chunk: np.ndarray, off: int, q: np.ndarray, plain_at: int
) -> np.ndarray:
    """Which quotes at offsets ``q`` (in this chunk) follow an odd run of backslashes.

    ``plain_at`` is the last offset before the chunk that holds no backslash. Short runs are
    counted a step at a time; runs longer than a few (a hostile file's) all at once."""
    out = np.zeros(len(q), dtype=bool)
    at = np.flatnonzero((q > 0) & (b[np.maximum(q - 1, 0)] == _BACKSLASH))
    run = 1
    while at.size and run < 8:
        before = q[at] - run - 1  # the byte before the run so far
        stops = (before < 0) | (b[np.maximum(before, 0)] != _BACKSLASH)
        out[at[stops]] = run % 2 == 1
        at = at[~stops]
        run += 1
    if at.size:
        # The last offset up to each byte of the chunk that is not a backslash.
        plain = np.where(chunk == _BACKSLASH, plain_at, off + np.arange(len(chunk)))
        np.maximum.accumulate(plain, out=plain)
        before = q[at] - 1
        last = np.where(before >= off, plain[np.maximum(before - off, 0)], plain_at)
        out[at] = (before - last) % 2 == 1
    return out


def _line_column(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    if line == 1 and raw.startswith(b"\xef\xbb\xbf"):
        column -= 3  # the byte order mark is not a column
    return line, column


def _place(raw: bytes, starts: np.ndarray, ends: np.ndarray) -> str:
    """The JSON path of the first container past the limit, found by reading the document
    with every such container replaced (the first by a marker string); '' when the rest of
    the document cannot be read either."""
    if len(ends) != len(starts) or len(starts) > 10_000:
        return ""  # unclosed, or too many to cut out: the line and column must do
    pieces: list[bytes] = []
    last = 0
    for k, (a, z) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        pieces += [raw[last:a], json.dumps(_MARK).encode() if k == 0 else b"0"]
        last = z + 1
    pieces.append(raw[last:])
    try:
        doc = json.loads(b"".join(pieces).decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return ""
    return _path_to_mark(doc)


def _path_to_mark(doc: Any) -> str:
    """``nodes[3].metadata.k.a…``: the path to the marker, its first levels only."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    while stack:
        value, path = stack.pop()
        if value == _MARK:
            shown = "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path[:_SHOWN_PARTS])
            return shown.lstrip(".") + ("…" if len(path) > _SHOWN_PARTS else "")
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(value))))
    return ""
