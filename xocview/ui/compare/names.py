"""What a comparison calls its two sides: the files' names, never "old" and "new".

Two files of one name (``v1/model.onnx`` against ``v2/model.onnx``) are told apart by their
folders; a tab compared with its own file on disk (its edits against the saved file) says
which is which.
"""

from __future__ import annotations

from pathlib import Path

from xocview.errors import shorten

__all__ = ["side_names"]

_CHARS = 60  # a side's name in headers, the summary and the tab title


def side_names(left: tuple[Path | None, str], right: tuple[Path | None, str]) -> tuple[str, str]:
    """Names for the sides from each side's (path, title): the file names, with as many
    folders as it takes to tell them apart."""
    (lp, lt), (rp, rt) = left, right
    if lp is None or rp is None or lp.name != rp.name:
        return shorten(lt, _CHARS), shorten(rt, _CHARS)
    if lp == rp:
        return f"{lp.name} (open tab)", f"{lp.name} (on disk)"
    a, b = lp.parts, rp.parts
    for depth in range(2, min(len(a), len(b)) + 1):
        if a[-depth] != b[-depth]:
            return _tail(a, depth), _tail(b, depth)
    return shorten(str(lp), _CHARS), shorten(str(rp), _CHARS)


def _tail(parts: tuple[str, ...], depth: int) -> str:
    """The path's last ``depth`` parts, the folders between the first of them (where the
    paths differ) and the file name left out when that is too long."""
    text = "/".join(parts[-depth:])
    if len(text) <= _CHARS:
        return text
    return f"{shorten(parts[-depth], _CHARS // 2)}/\u2026/{shorten(parts[-1], _CHARS // 2)}"
