"""TfIdfVectorizer: counts of pooled n-grams (with skips) in integer or string sequences."""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.strings import as_text
from xocview.executor.registry import kernel

__all__ = ["tf_idf_vectorizer"]

_MODES = ("TF", "IDF", "TFIDF")


def _pool(
    pool_int64s: list[int] | None, pool_strings: list[str] | None, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The pool and the input as arrays of one kind: int64 for integers, object for strings.

    Raises ValueError when both or neither pool is set, or the input's dtype is not the pool's.
    """
    if bool(pool_int64s) == bool(pool_strings):
        raise ValueError("TfIdfVectorizer: exactly one of pool_int64s and pool_strings must be set")
    if pool_strings:
        return np.array(pool_strings, dtype=object), as_text(x, "TfIdfVectorizer", "X")
    if x.dtype.kind not in "iu":
        raise ValueError(
            f"TfIdfVectorizer: input dtype {x.dtype} with pool_int64s is not supported; "
            "expected int32 or int64"
        )
    return np.asarray(pool_int64s, dtype=np.int64), x.astype(np.int64)


def _token_ids(pool: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pool and input tokens as indices into the pool's sorted distinct tokens; -1 for input
    tokens no n-gram of the pool holds."""
    vocab, pool_ids = np.unique(pool, return_inverse=True)
    if vocab.size == 0:
        return pool_ids.astype(np.int64), np.full(x.shape, -1, dtype=np.int64)
    pos = np.clip(np.searchsorted(vocab, x), 0, vocab.size - 1)
    found = np.asarray(vocab[pos] == x, dtype=bool)
    return pool_ids.astype(np.int64), np.where(found, pos, -1).astype(np.int64)


def _pool_grams(
    pool_ids: np.ndarray, ngram_counts: list[int], lo: int, hi: int
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For each n-gram length n in [lo, hi] the pool holds: its n-grams (rows of token ids)
    and each one's position among all the pool's n-grams (which ngram_indexes and weights
    follow)."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    first = 0  # position of the first n-gram of length n
    for k, start in enumerate(ngram_counts):
        n = k + 1
        end = ngram_counts[k + 1] if k + 1 < len(ngram_counts) else pool_ids.size
        if start < 0 or end < start or end > pool_ids.size:
            raise ValueError(
                f"TfIdfVectorizer: ngram_counts {ngram_counts} do not fit a pool of "
                f"{pool_ids.size} items"
            )
        count = (end - start) // n
        if lo <= n <= hi and count:
            grams = pool_ids[start : start + count * n].reshape(count, n)
            out[n] = (grams, first + np.arange(count))
        first += count
    return out


def _gram_lookup(grams: np.ndarray, index: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """For each window (a row of token ids) the pool position of the equal n-gram, else -1.
    A repeated pool n-gram counts at its last position, as onnxruntime's trie keeps it."""
    both = np.concatenate([grams, windows])
    _, codes = np.unique(both, axis=0, return_inverse=True)
    codes = codes.reshape(-1)
    table = np.full(int(codes.max(initial=-1)) + 1, -1, dtype=np.int64)
    pool_codes = codes[: len(grams)]
    # last occurrence of each code: reverse, take the first of each
    rev_codes, rev_first = np.unique(pool_codes[::-1], return_index=True)
    table[rev_codes] = index[len(grams) - 1 - rev_first]
    return table[codes[len(grams) :]]


def _windows(ids: np.ndarray, n: int, step: int) -> np.ndarray:
    """Every n-gram of each row taking one token every ``step``: (rows * starts, n)."""
    starts = ids.shape[1] - (n - 1) * step
    if starts <= 0:
        return np.empty((0, n), dtype=np.int64)
    at = np.arange(starts)[:, None] + step * np.arange(n)[None, :]
    return ids[:, at].reshape(-1, n)


def _counts(
    ids: np.ndarray,
    grams: dict[int, tuple[np.ndarray, np.ndarray]],
    max_skip_count: int,
    total: int,
) -> np.ndarray:
    """(rows, total) counts of each pool n-gram in each row. Unigrams count once; longer
    n-grams once per skip distance 1..max_skip_count + 1."""
    rows = ids.shape[0]
    keys: list[np.ndarray] = []
    for n, (pool_n, index) in grams.items():
        for step in range(1, (max_skip_count + 2) if n > 1 else 2):
            windows = _windows(ids, n, step)
            if not len(windows):
                continue
            per_row = len(windows) // rows
            found = _gram_lookup(pool_n, index, windows)
            hit = found >= 0
            row = np.repeat(np.arange(rows), per_row)[hit]
            keys.append(row * total + found[hit])
    flat = np.concatenate(keys) if keys else np.empty(0, dtype=np.int64)
    return np.bincount(flat, minlength=rows * total).reshape(rows, total)


@kernel("TfIdfVectorizer", since=9)
def tf_idf_vectorizer(
    x: np.ndarray,
    *,
    mode: str,
    min_gram_length: int,
    max_gram_length: int,
    max_skip_count: int,
    ngram_counts: list[int],
    ngram_indexes: list[int],
    pool_int64s: list[int] | None = None,
    pool_strings: list[str] | None = None,
    weights: list[float] | None = None,
) -> np.ndarray:
    """Per row of X ([C] or [N, C]), how often the i-th pooled n-gram occurs, at column
    ``ngram_indexes[i]`` of a float32 row of max(ngram_indexes) + 1. IDF keeps 1 for any
    count, TFIDF the count; both then scale by the n-gram's ``weights[i]``."""
    if mode not in _MODES:
        raise ValueError(f"TfIdfVectorizer: mode {mode!r} is not supported; expected {_MODES}")
    if not 1 <= min_gram_length <= max_gram_length or max_skip_count < 0:
        raise ValueError(
            f"TfIdfVectorizer: min_gram_length {min_gram_length}, max_gram_length "
            f"{max_gram_length} and max_skip_count {max_skip_count} are not supported; expected "
            "1 <= min <= max and a skip count >= 0"
        )
    pool, data = _pool(pool_int64s, pool_strings, np.asarray(x))
    if data.ndim > 2:
        raise ValueError(
            f"TfIdfVectorizer: input shape {list(data.shape)} is not supported; expected [C] or "
            "[N, C]"
        )
    columns = np.asarray(ngram_indexes, dtype=np.int64)
    width = int(columns.max(initial=-1)) + 1
    if columns.size and columns.min() < 0:
        raise ValueError(f"TfIdfVectorizer: ngram_indexes {ngram_indexes} has negative entries")
    pool_ids, ids = _token_ids(pool, data.reshape(1, -1) if data.ndim < 2 else data)
    grams = _pool_grams(pool_ids, list(ngram_counts), min_gram_length, max_gram_length)
    total = columns.size
    if any(int(index[-1]) >= total for _, index in grams.values()):
        raise ValueError(
            f"TfIdfVectorizer: the pool has more n-grams than the {total} ngram_indexes"
        )
    found = _counts(ids, grams, max_skip_count, total).astype(np.float32)
    if mode == "IDF":
        found = (found > 0).astype(np.float32)
    if mode != "TF" and weights:
        if len(weights) < total:
            raise ValueError(f"TfIdfVectorizer: {len(weights)} weights for {total} n-grams")
        found *= np.asarray(weights[:total], dtype=np.float32)
    counts = np.zeros((found.shape[0], width), dtype=np.float32)
    np.add.at(counts.T, columns, found.T)  # a repeated column sums its n-grams
    return counts if data.ndim == 2 else counts.reshape(width)
