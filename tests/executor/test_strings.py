"""String kernels (StringConcat, StringSplit, RegexFullMatch, StringNormalizer) and
TfIdfVectorizer against onnxruntime, plus the refusals by name.

onnxruntime's StringNormalizer needs the system's en_US locale, which test machines may
lack: its cases are checked against the spec's own examples instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.executor.test_ml_ops import ort_ml, ours

RNG = np.random.default_rng(17)


def strings(*values: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    return arr.reshape(shape if shape is not None else (len(values),))


def check(
    op: str, inputs: list[np.ndarray], attrs: dict[str, Any], *, opset: int, num_outputs: int = 1
) -> list[np.ndarray]:
    """Our outputs equal onnxruntime's in shape, kind and value; strings come back as object
    arrays of str."""
    want = ort_ml(op, inputs, attrs, opset=opset, num_outputs=num_outputs, domain="")
    got = ours(op, inputs, attrs, opset=opset)[:num_outputs]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, f"{op} output {k}: shape {g.shape}, expected {w.shape}"
        if w.dtype.kind in "OUS":
            assert g.dtype == object, f"{op} output {k}: dtype {g.dtype}"
            assert all(isinstance(v, str) for v in g.flat)
            assert g.tolist() == w.astype(object).tolist(), f"{op} output {k}"
        else:
            assert g.dtype == w.dtype, f"{op} output {k}: dtype {g.dtype}, expected {w.dtype}"
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"{op} output {k}")
    return got


# ------------------------------------------------------------------------------ StringConcat


@pytest.mark.parametrize(
    ("a", "b"),
    [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((), (2,)), ((), ()), ((0, 3), (3,))],
)
def test_string_concat_broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    words = ["", "a", "bé", "日本", "x y", "\n"]
    x = strings(*RNG.choice(words, size=int(np.prod(a))), shape=a)
    y = strings(*RNG.choice(words, size=int(np.prod(b))), shape=b)
    check("StringConcat", [x, y], {}, opset=20)


def test_string_concat_refuses_numbers() -> None:
    with pytest.raises(ValueError, match=r"dtype.*not supported"):
        ours("StringConcat", [np.ones(2), strings("a", "b")], {}, opset=20)


# ------------------------------------------------------------------------------- StringSplit

# Splitting on whitespace, onnxruntime takes spaces only (the spec: any whitespace), so the
# texts compared with it have no other.
TEXT = st.text(alphabet=st.sampled_from(list("ab .-é")), max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(TEXT, min_size=1, max_size=6),
    delimiter=st.sampled_from(["", ".", "-", "..", "a b", " "]),
    maxsplit=st.sampled_from([None, 0, 1, 2, 5]),
    two_d=st.booleans(),
)
def test_string_split_matches_onnxruntime(
    values: list[str], delimiter: str, maxsplit: int | None, two_d: bool
) -> None:
    x = strings(*values)
    if two_d and len(values) % 2 == 0:
        x = x.reshape(2, -1)
    attrs: dict[str, Any] = {"delimiter": delimiter}
    if maxsplit is not None:
        attrs["maxsplit"] = maxsplit
    check("StringSplit", [x], attrs, opset=20, num_outputs=2)


def test_string_split_on_any_whitespace() -> None:
    """Tabs, newlines and Unicode spaces separate too; the ends are stripped, the remainder
    of a maxsplit-limited split included."""
    x = strings("a\tb\n c", " x\u3000y\r\n", "\t", "")
    got = ours("StringSplit", [x], {}, opset=20)
    assert got[0].tolist() == [["a", "b", "c"], ["x", "y", ""], ["", "", ""], ["", "", ""]]
    assert got[1].tolist() == [3, 2, 0, 0]
    got = ours("StringSplit", [x], {"maxsplit": 1}, opset=20)
    assert got[0].tolist() == [["a", "b\n c"], ["x", "y"], ["", ""], ["", ""]]


def test_string_split_empty_tensors() -> None:
    for shape in [(0,), (2, 0)]:
        got = ours("StringSplit", [np.empty(shape, dtype=object)], {}, opset=20)
        assert got[0].shape == (*shape, 0) and got[1].shape == shape
        assert got[1].dtype == np.int64


# ---------------------------------------------------------------------------- RegexFullMatch

PATTERNS = {
    r"\w+": ["abc", "é", "a_1", ""],
    r"\d{2,3}": ["12", "1234", "١٢"],
    r"\s+\S": [" \tx", "\v", "\xa0x"],
    r"[\w.-]+@[\w-]+\.(com|org)": ["a.b@c-d.com", "a@b.net", "x@y.org"],
    r"abc$": ["abc", "abc\n"],
    r"(?m)a$\nb": ["a\nb", "ab"],
    r"(?i)straße|k": ["STRASSE", "STRAßE", "K", "\u212a"],
    r"[[:alpha:][:digit:]]+": ["ab12", "é"],
    r"[^[:space:]]+": ["ab", "a b"],
    r"\x{e9}\x41": ["éA", "e"],
    r"\Qa.b\E+": ["a.bbb", "axb"],
    r"a\b.*|\Bb": ["a b", "ab", "b"],
    r"a\z": ["a", "a\n"],
    r"a{,2}|x{2}": ["a{,2}", "aa", "xx"],
    r"(?s).|(?-s:.)": ["\n", "x"],
    r"(?P<one>a)(?<two>b)": ["ab"],
    r"[]a]+|[a&&b]|[~~]|[|]": ["]a", "&", "~", "|"],
    r"\A\.\*\(\)\[\]\{\}\\": [".*()[]{}\\"],
}


@pytest.mark.parametrize(("pattern", "values"), list(PATTERNS.items()))
def test_regex_full_match_matches_re2(pattern: str, values: list[str]) -> None:
    x = strings(*values)
    check("RegexFullMatch", [x], {"pattern": pattern}, opset=20)
    check("RegexFullMatch", [x.reshape(1, -1, 1)], {"pattern": pattern}, opset=20)


@pytest.mark.parametrize(
    ("pattern", "word"),
    [
        (r"\pL+", r"\\p"),
        (r"\p{Greek}", r"\\p"),
        (r"a\C", r"\\C"),
        (r"(?U)a+", r"\(\?U\)"),
        (r"a(?i)b", r"flags"),
        (r"[[:nope:]]", r"\[:nope:\]"),
        (r"(?=a)a", r"lookaround"),
        (r"(a)\1", r"\\1"),
    ],
)
def test_regex_full_match_refuses_re2_only_syntax(pattern: str, word: str) -> None:
    with pytest.raises(ValueError, match=f"(?s){word}.*not supported|not supported.*{word}"):
        ours("RegexFullMatch", [strings("a")], {"pattern": pattern}, opset=20)


def test_regex_full_match_empty_and_scalar() -> None:
    got = ours("RegexFullMatch", [np.empty((2, 0), dtype=object)], {"pattern": "a"}, opset=20)[0]
    assert got.shape == (2, 0) and got.dtype == bool
    got = ours("RegexFullMatch", [np.array("aaa", dtype=object)], {"pattern": "a+"}, opset=20)[0]
    assert got.shape == () and got.dtype == bool and bool(got)


# -------------------------------------------------------------------------- StringNormalizer


def normalize(x: np.ndarray, **attrs: Any) -> np.ndarray:
    return ours("StringNormalizer", [x], attrs, opset=10)[0]


def test_string_normalizer_stopwords_and_case() -> None:
    x = strings("monday", "tuesday", "MONDAY", "Wednesday")
    sensitive = normalize(x, stopwords=["monday"], is_case_sensitive=1, case_change_action="UPPER")
    assert sensitive.tolist() == ["TUESDAY", "MONDAY", "WEDNESDAY"]
    blind = normalize(x, stopwords=["Monday"], case_change_action="LOWER")
    assert blind.tolist() == ["tuesday", "wednesday"]
    assert normalize(x).tolist() == x.tolist()
    row = normalize(x.reshape(1, -1), stopwords=["monday"])
    assert row.shape == (1, 2) and row.tolist() == [["tuesday", "Wednesday"]]


def test_string_normalizer_all_dropped_keeps_one_empty_string() -> None:
    x = strings("a", "A")
    assert normalize(x, stopwords=["a"]).tolist() == [""]
    got = normalize(x.reshape(1, 2), stopwords=["a"])
    assert got.shape == (1, 1) and got.dtype == object and got.tolist() == [[""]]


def test_string_normalizer_case_maps_one_character_per_character() -> None:
    """As C's towupper: "ß" stays, "ǆ" becomes "Ǆ"; lowercase "İ" keeps its length."""
    x = strings("Straße", "ǆemal", "İzmir", "ΣΑΣ")
    assert normalize(x, case_change_action="UPPER").tolist() == ["STRAßE", "ǄEMAL", "İZMIR", "ΣΑΣ"]
    lower = normalize(x, case_change_action="LOWER").tolist()
    assert lower[:2] == ["straße", "ǆemal"] and len(lower[2]) == 5


@pytest.mark.parametrize("locale", ["", "en_US", "en_US.UTF-8", "de_DE", "fr_FR@euro", "C"])
def test_string_normalizer_accepts_default_casing_locales(locale: str) -> None:
    assert normalize(strings("a"), case_change_action="UPPER", locale=locale).tolist() == ["A"]


@pytest.mark.parametrize(
    ("attrs", "word"),
    [
        ({"locale": "tr_TR"}, "locale"),
        ({"locale": "az_AZ.UTF-8"}, "locale"),
        ({"locale": "lt"}, "locale"),
        ({"locale": "not a locale"}, "locale"),
        ({"case_change_action": "TITLE"}, "case_change_action"),
    ],
)
def test_string_normalizer_refusals(attrs: dict[str, Any], word: str) -> None:
    with pytest.raises(ValueError, match=f"{word}.*not supported"):
        normalize(strings("a"), **attrs)


def test_string_normalizer_refuses_other_shapes() -> None:
    with pytest.raises(ValueError, match=r"shape.*not supported"):
        normalize(strings("a", "b", "c", "d", shape=(2, 2)))


# --------------------------------------------------------------------------- TfIdfVectorizer


def pool_of(rng: np.random.Generator, vocab: int, counts: list[int]) -> tuple[list[int], list[int]]:
    """A pool with ``counts[n - 1]`` distinct n-grams of each length n, and ngram_counts."""
    pool: list[int] = []
    starts: list[int] = []
    for n, count in enumerate(counts, start=1):
        starts.append(len(pool))
        grams: set[tuple[int, ...]] = set()
        while len(grams) < count:
            grams.add(tuple(int(v) for v in rng.integers(0, vocab, size=n)))
        for g in sorted(grams):
            pool.extend(g)
    return pool, starts


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize(("min_n", "max_n"), [(1, 1), (1, 2), (2, 3), (1, 3), (3, 3)])
@pytest.mark.parametrize("skip", [0, 1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_tfidf_ints_match_onnxruntime(
    mode: str, min_n: int, max_n: int, skip: int, weighted: bool
) -> None:
    rng = np.random.default_rng(min_n * 100 + max_n * 10 + skip)
    pool, starts = pool_of(rng, 6, [4, 6, 5])
    total = 15
    indexes = [int(v) for v in rng.permutation(total)]
    attrs: dict[str, Any] = {
        "mode": mode,
        "min_gram_length": min_n,
        "max_gram_length": max_n,
        "max_skip_count": skip,
        "ngram_counts": starts,
        "ngram_indexes": indexes,
        "pool_int64s": pool,
    }
    if weighted:
        attrs["weights"] = [float(np.float32(v)) for v in rng.random(total) + 0.5]
    for x in (rng.integers(0, 7, size=(3, 9)), rng.integers(0, 7, size=(11,))):
        for dtype in (np.int64, np.int32):
            check("TfIdfVectorizer", [x.astype(dtype)], attrs, opset=9)


def test_tfidf_strings_match_onnxruntime() -> None:
    attrs = {
        "mode": "TFIDF",
        "min_gram_length": 1,
        "max_gram_length": 2,
        "max_skip_count": 1,
        "ngram_counts": [0, 3],
        "ngram_indexes": [4, 3, 2, 1, 0],
        "pool_strings": ["a", "b", "é", "a", "b", "b", "a"],
        "weights": [0.5, 1.0, 2.0, 3.0, 4.0],
    }
    x = strings("a", "b", "a", "é", "c", "b", "a", "b", shape=(2, 4))
    check("TfIdfVectorizer", [x], attrs, opset=9)
    check("TfIdfVectorizer", [x.reshape(-1)], attrs, opset=9)


def test_tfidf_repeated_pool_gram_counts_at_its_last_position() -> None:
    attrs = {
        "mode": "TF",
        "min_gram_length": 1,
        "max_gram_length": 1,
        "max_skip_count": 0,
        "ngram_counts": [0],
        "ngram_indexes": [0, 1, 2],
        "pool_int64s": [7, 8, 7],
    }
    got = ours("TfIdfVectorizer", [np.array([7, 7, 8], np.int64)], attrs, opset=9)[0]
    assert got.tolist() == [0.0, 1.0, 2.0]


def test_tfidf_refusals() -> None:
    base = {
        "mode": "TF",
        "min_gram_length": 1,
        "max_gram_length": 1,
        "max_skip_count": 0,
        "ngram_counts": [0],
        "ngram_indexes": [0],
        "pool_int64s": [1],
    }
    x = np.array([1, 2], np.int64)
    with pytest.raises(ValueError, match=r"mode.*not supported"):
        ours("TfIdfVectorizer", [x], {**base, "mode": "BM25"}, opset=9)
    with pytest.raises(ValueError, match=r"dtype.*not supported"):
        ours("TfIdfVectorizer", [x.astype(np.float32)], base, opset=9)
    with pytest.raises(ValueError, match=r"shape.*not supported"):
        ours("TfIdfVectorizer", [np.ones((1, 2, 2), np.int64)], base, opset=9)
