"""onnxruntime's Tokenizer (com.microsoft) against onnxruntime: separators, tokenexp,
character mode, marks, mincharnum, padding and empty inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.executor.quant_models import ort_contrib
from tests.executor.test_contrib_qops import ours

pytest.importorskip("onnxruntime")

SENTENCES = ["Hello World", "I love computer science !"]
CASES = [
    (SENTENCES, {"separators": [" "]}),
    (SENTENCES, {"separators": [" "], "mark": 1}),
    ([["a,b;;c", "dd"], ["", "x y"]], {"separators": [",", ";", " "], "pad_value": ""}),
    (["abc de", "f"], {"separators": [""]}),
    (["abc de", "f"], {"tokenexp": "[a-z]+", "mark": 1, "mincharnum": 2}),
    (["ab12cd 3", "xyz"], {"tokenexp": "[a-z]+|[0-9]"}),
    (["A B", "C"], {"separators": [" "], "mincharnum": 2}),  # every token dropped: [2, 0]
    (["abc", "de"], {"tokenexp": "."}),
    (["  lead trail  "], {"separators": [" "], "mark": 1}),
    (np.empty(0, dtype=object), {"separators": [" "]}),
    (np.empty((2, 0), dtype=object), {"separators": [" "]}),
]


@pytest.mark.parametrize(("text", "attrs"), CASES)
def test_tokenizer_matches_onnxruntime(text: list, attrs: dict) -> None:
    x = np.array(text, dtype=object)
    full = {"mark": 0, "mincharnum": 1, "pad_value": "#", **attrs}
    (want,) = ort_contrib("Tokenizer", [x], full)
    (got,) = ours("Tokenizer", [x], full)
    assert got.shape == want.shape
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"separators": [" "], "tokenexp": "a"}, "exactly one of separators and tokenexp"),
        ({}, "exactly one of separators and tokenexp"),
        ({"tokenexp": "(a"}, "cannot be read"),
        ({"separators": ["", " "]}, "empty separator must be the only one"),
    ],
)
def test_tokenizer_refusals(attrs: dict, message: str) -> None:
    full = {"mark": 0, "mincharnum": 1, "pad_value": "#", **attrs}
    with pytest.raises(ValueError, match=message):
        ours("Tokenizer", [np.array(["a b"], dtype=object)], full)
