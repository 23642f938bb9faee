"""String kernels: StringConcat, StringSplit, StringNormalizer and RegexFullMatch.

String tensors run as numpy object arrays of Python ``str``; these kernels return the same.
numpy has no vectorised split, case change or regex for object arrays, so each element goes
through one C-level ufunc call (``np.frompyfunc``) instead of an explicit Python loop.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from xocview.executor.registry import kernel

__all__ = [
    "as_text",
    "regex_full_match",
    "string_concat",
    "string_normalizer",
    "string_split",
    "translate_re2",
]


def as_text(x: np.ndarray, op: str, name: str = "input") -> np.ndarray:
    """A string tensor as an object array of ``str`` (bytes decoded as UTF-8).

    Raises ValueError naming the dtype when ``x`` holds numbers.
    """
    arr = np.asarray(x)
    if arr.dtype.kind == "U":
        return arr.astype(object)
    if arr.dtype.kind == "S":
        return np.char.decode(arr, "utf-8", "replace").astype(object)
    if arr.dtype.kind != "O":
        raise ValueError(f"{op}: {name} dtype {arr.dtype} is not supported; expected strings")
    if all(isinstance(v, str) for v in arr.flat):
        return arr
    return _apply(_to_str, arr)


def _to_str(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else str(value)


def _apply(fn: Callable[[Any], Any], arr: np.ndarray, dtype: Any = object) -> np.ndarray:
    """``fn`` on every element through one ufunc call; a 0-d input stays a 0-d array."""
    out = np.frompyfunc(fn, 1, 1)(arr)
    return np.asarray(out, dtype=object).astype(dtype, copy=False)


@kernel("StringConcat", since=20)
def string_concat(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise ``x + y`` with numpy broadcasting (object arrays add as Python strings)."""
    a, b = as_text(x, "StringConcat", "X"), as_text(y, "StringConcat", "Y")
    try:
        out = np.add(a, b)
    except ValueError as e:
        raise ValueError(f"StringConcat: shapes {a.shape} and {b.shape} do not broadcast") from e
    return np.asarray(out, dtype=object)


def _whitespace_split(most: int) -> Callable[[str], list[str]]:
    """Split on runs of whitespace after stripping it from both ends, as the spec says: the
    last part of a ``maxsplit``-limited split keeps no trailing whitespace either.
    (onnxruntime splits on spaces only, not tabs or newlines.)"""
    return lambda s: s.strip().split(None, most)


@kernel("StringSplit", since=20)
def string_split(
    x: np.ndarray, *, delimiter: str = "", maxsplit: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each string split on ``delimiter`` (runs of whitespace when empty), at most
    ``maxsplit`` times; the substrings gain a last axis padded with "" to the longest, and Z
    counts them. An empty string has no substrings, as in onnxruntime."""
    text = as_text(x, "StringSplit", "X")
    most = -1 if maxsplit is None or maxsplit < 0 else int(maxsplit)
    split = (
        _whitespace_split(most)
        if not delimiter
        else lambda s: s.split(delimiter, most) if s else []
    )
    # over a 1-D view: on a rank-0 input frompyfunc would return the list itself
    flat = np.frompyfunc(split, 1, 1)(text.reshape(-1))
    counts = np.fromiter(map(len, flat), dtype=np.int64, count=flat.size)
    width = int(counts.max(initial=0))
    out = np.full((flat.size, width), "", dtype=object)
    if width:
        rows = np.repeat(np.arange(flat.size), counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        cols = np.arange(rows.size) - starts
        words = np.empty(rows.size, dtype=object)
        words[:] = [w for ws in flat for w in ws]
        out[rows, cols] = words
    return out.reshape(*text.shape, width), counts.reshape(text.shape)


# Languages whose case mappings differ from Unicode's default ones (dotted and dotless i,
# Lithuanian's retained dots): Python's str.upper/lower cannot follow them.
_SPECIAL_CASING = frozenset({"tr", "az", "lt"})
_LOCALE = re.compile(r"^(?:C|POSIX|[A-Za-z]{2,3}(?:[_-][A-Za-z0-9]{2,8})*)(?:\.[\w-]+)?(?:@\w+)?$")


def _check_locale(locale: str) -> None:
    """Raises ValueError for a locale whose case rules Python's Unicode mappings do not follow."""
    if not locale:
        return
    language = re.split(r"[_.@-]", locale, maxsplit=1)[0].lower()
    if not _LOCALE.match(locale) or language in _SPECIAL_CASING:
        raise ValueError(
            f"StringNormalizer: locale {locale!r} is not supported; locales with Unicode's "
            "default case mappings are (en_US, fr_FR, de_DE, C, ...; not tr, az or lt)"
        )


def _simple_case(method: Callable[[str], str]) -> Callable[[str], str]:
    """``str.upper``/``str.lower`` with one character per character, as C's towupper and
    towlower map ("ß" stays "ß"): Python's full mappings would change the length."""

    def change(s: str) -> str:
        out = method(s)
        if len(out) == len(s):
            return out
        return "".join(c if len(m := method(c)) != 1 else m for c in s)

    return change


_UPPER, _LOWER = _simple_case(str.upper), _simple_case(str.lower)


@kernel("StringNormalizer", since=10)
def string_normalizer(
    x: np.ndarray,
    *,
    case_change_action: str = "NONE",
    is_case_sensitive: int = 0,
    locale: str = "",
    stopwords: list[str] | None = None,
) -> np.ndarray:
    """Drop the elements equal to a stop word (ignoring case unless ``is_case_sensitive``),
    then upper- or lowercase the rest. Takes [C] or [1, C]; when nothing is left the output
    is one "" of shape [1] or [1, 1], as the spec says."""
    if case_change_action not in ("NONE", "LOWER", "UPPER"):
        raise ValueError(
            f"StringNormalizer: case_change_action {case_change_action!r} is not supported; "
            "expected 'NONE', 'LOWER' or 'UPPER'"
        )
    _check_locale(locale)
    text = as_text(x, "StringNormalizer", "X")
    if text.ndim not in (1, 2) or (text.ndim == 2 and text.shape[0] != 1):
        raise ValueError(
            f"StringNormalizer: input shape {list(text.shape)} is not supported; "
            "expected [C] or [1, C]"
        )
    flat = text.reshape(-1)
    if stopwords:
        if is_case_sensitive:
            stops = frozenset(stopwords)
            stop = _apply(stops.__contains__, flat, bool)
        else:
            lowered = frozenset(_LOWER(w) for w in stopwords)
            stop = _apply(lambda s: _LOWER(s) in lowered, flat, bool)
        flat = flat[~stop]
    if case_change_action != "NONE" and flat.size:
        flat = _apply(_UPPER if case_change_action == "UPPER" else _LOWER, flat)
    if flat.size == 0:
        flat = np.array([""], dtype=object)
    return flat.reshape(1, -1) if text.ndim == 2 else flat


# RE2's ASCII classes (\d \w \s and the POSIX [:name:] ones), written out: Python's \d \w \s
# match Unicode digits, letters and spaces, and its \s also takes \v.
_PERL_CLASSES = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_REPEAT = re.compile(r"\{\d+(?:,\d*)?\}")
# Escapes both dialects read alike.
_SAME_ESCAPES = frozenset("afnrtvAx")


def _refuse(pattern: str, what: str) -> ValueError:
    return ValueError(
        f"RegexFullMatch: pattern {pattern!r} uses {what}, which is not supported; RE2 syntax "
        "without Unicode classes (\\p), \\C or ungreedy mode (?U) is"
    )


class _Re2Translator:
    """One pass over an RE2 pattern writing the Python ``re`` pattern that matches alike."""

    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.out: list[str] = []
        self.i = 0
        self.in_class = False
        self.multiline = False

    def run(self) -> str:
        while self.i < len(self.src):
            c = self.src[self.i]
            if c == "\\":
                self._escape()
            elif self.in_class:
                self._class_char(c)
            elif c == "[":
                self._open_class()
            elif c == "(":
                self._group()
            elif c == "{" and not _REPEAT.match(self.src, self.i):
                self.out.append("\\{")  # RE2 reads a brace that repeats nothing literally
                self.i += 1
            elif c == "$":
                self.out.append("$" if self.multiline else "\\Z")
                self.i += 1
            else:
                self.out.append(c)
                self.i += 1
        return "".join(self.out)

    def _open_class(self) -> None:
        self.in_class = True
        self.out.append("[")
        self.i += 1
        if self.src.startswith("^", self.i):
            self.out.append("^")
            self.i += 1
        if self.src.startswith("]", self.i):  # a leading ] is a literal
            self.out.append("\\]")
            self.i += 1

    def _class_char(self, c: str) -> None:
        if c == "]":
            self.in_class = False
            self.out.append("]")
        elif c == "[" and self.src.startswith("[:", self.i):
            end = self.src.find(":]", self.i + 2)
            name = self.src[self.i + 2 : end] if end > 0 else ""
            if name not in _POSIX_CLASSES:
                raise _refuse(self.src, f"the class [:{name}:]")
            self.out.append(_POSIX_CLASSES[name])
            self.i = end + 2
            return
        elif c in "[&~|":  # literals in RE2; Python warns of future set operations
            self.out.append("\\" + c)
        else:
            self.out.append(c)
        self.i += 1

    def _group(self) -> None:
        rest = self.src[self.i :]
        if rest.startswith("(?<") and not rest.startswith(("(?<=", "(?<!")):
            self.out.append("(?P<")
            self.i += 3
            return
        flags = re.match(r"\(\?([imsU-]*)[:)]", rest)
        if flags:
            if "U" in flags.group(1):
                raise _refuse(self.src, "the ungreedy flag (?U)")
            if flags.group(0).endswith(")") and self.out:
                raise _refuse(self.src, f"the flags {flags.group(0)} after the start")
            on = flags.group(1).split("-", 1)[0]
            self.multiline = self.multiline or "m" in on
        elif rest.startswith("(?") and not rest.startswith("(?P<"):
            raise _refuse(self.src, f"the group {rest[:4]!r} (RE2 has no lookaround)")
        self.out.append("(")
        self.i += 1

    def _escape(self) -> None:
        if self.i + 1 >= len(self.src):
            raise ValueError(f"RegexFullMatch: pattern {self.src!r} ends with a lone backslash")
        e = self.src[self.i + 1]
        self.i += 2
        if e in _PERL_CLASSES or e.lower() in _PERL_CLASSES:
            self._perl_class(e)
        elif e in "bB":
            if self.in_class:
                raise _refuse(self.src, f"\\{e} inside a class")
            self.out.append(f"(?a:\\{e})")
        elif e == "z":
            self.out.append("\\Z")
        elif e == "x" and self.src.startswith("{", self.i):
            end = self.src.find("}", self.i)
            code = self.src[self.i + 1 : end]
            if end < 0 or not re.fullmatch(r"[0-9A-Fa-f]{1,6}", code):
                raise ValueError(f"RegexFullMatch: pattern {self.src!r} has a bad \\x{{...}}")
            self.out.append(f"\\U{int(code, 16):08x}")
            self.i = end + 1
        elif e == "Q":
            end = self.src.find("\\E", self.i)
            end = len(self.src) if end < 0 else end
            self.out.append(re.escape(self.src[self.i : end]))
            self.i = end + 2
        elif e in "pPC" or (e.isdigit() and e != "0") or e in "Zz":
            raise _refuse(self.src, f"\\{e}")
        elif e.isalnum() and e not in _SAME_ESCAPES and e != "0":
            raise ValueError(f"RegexFullMatch: pattern {self.src!r} has an unknown escape \\{e}")
        else:
            self.out.append("\\" + e)

    def _perl_class(self, e: str) -> None:
        chars = _PERL_CLASSES[e.lower()]
        if not self.in_class:
            self.out.append(f"[^{chars}]" if e.isupper() else f"[{chars}]")
        elif e.isupper():
            raise _refuse(self.src, f"\\{e} inside a class")
        else:
            self.out.append(chars)


@lru_cache(maxsize=256)
def translate_re2(pattern: str) -> re.Pattern[str]:
    """The compiled Python pattern that matches what the RE2 ``pattern`` matches.

    Raises ValueError naming the RE2-only construct (Unicode classes, \\C, (?U)) or, for a
    pattern neither dialect reads, the parser's complaint.
    """
    translated = _Re2Translator(pattern).run()
    try:
        return re.compile(translated)
    except re.error as e:
        raise ValueError(f"RegexFullMatch: pattern {pattern!r} is not a valid regex ({e})") from e


@kernel("RegexFullMatch", since=20)
def regex_full_match(x: np.ndarray, *, pattern: str = "") -> np.ndarray:
    """True where the whole string matches ``pattern`` (RE2 syntax, translated to Python's)."""
    compiled = translate_re2(pattern)
    text = as_text(x, "RegexFullMatch", "X")
    return _apply(lambda s: compiled.fullmatch(s) is not None, text, bool)
