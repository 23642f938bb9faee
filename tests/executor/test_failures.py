"""A kernel's failure in words: its own sentence, or "failed on these inputs", never a class."""

from __future__ import annotations

import numpy as np
import pytest

from xocview.executor.failures import exception_free, kernel_problem


def _raised(fn: object) -> BaseException:
    try:
        fn()  # type: ignore[operator]
    except Exception as e:
        return e
    raise AssertionError("nothing raised")


@pytest.mark.parametrize(
    ("error", "op", "words"),
    [
        (ValueError("Gather: index 7 is out of range"), "Gather", "index 7 is out of range"),
        (IndexError("Gather: index 7 is out of range"), "Gather", "index 7 is out of range"),
        (
            IndexError("tuple index out of range"),
            "Softmax",
            "the kernel failed on these inputs (tuple index out of range)",
        ),
        (
            ZeroDivisionError("integer division or modulo by zero"),
            "Conv",
            "the kernel failed on these inputs (integer division or modulo by zero)",
        ),
        (KeyError("mode"), "X", "the kernel failed on these inputs (no entry 'mode')"),
        (MemoryError("Unable to allocate 7 PiB"), "Range", "not enough memory (Unable to allocate"),
        (OverflowError("int too large"), "X", "a value is out of the range the kernel can"),
        (RecursionError("maximum recursion depth"), "X", "its inputs nest deeper than the kernel"),
        (TypeError(""), "X", "the kernel failed on these inputs (no reason given)"),
        (ValueError("ValueError: numpy said so"), "X", "numpy said so"),
    ],
)
def test_kernel_problems_read_as_words(error: BaseException, op: str, words: str) -> None:
    text = kernel_problem(error, op)
    assert text.startswith(words)
    assert type(error).__name__ not in text


def test_numpy_errors_lose_their_class_names() -> None:
    axis = _raised(lambda: np.zeros(3).sum(axis=5))
    assert kernel_problem(axis) == "axis 5 is out of bounds for array of dimension 1"
    ufunc = _raised(lambda: np.add(np.array(["a"]), np.array([1.0])))
    assert "Error" not in kernel_problem(ufunc)


def test_exception_free_keeps_other_words() -> None:
    assert exception_free("numpy.exceptions.AxisError: axis 3") == "axis 3"
    assert exception_free("MeanSquaredError node failed") == "MeanSquaredError node failed"
