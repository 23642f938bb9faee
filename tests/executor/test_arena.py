"""Freed tensor memory is reused while a run lasts, and given back after it."""

from __future__ import annotations

import resource
import threading

import numpy as np
import pytest

from xocview.executor import arena
from xocview.executor.arena import reused_memory

glibc_only = pytest.mark.skipif(
    arena._LIBC is None, reason="the malloc knobs are glibc's; elsewhere reused_memory is a no-op"
)

# The tensors of one "pass": alive together, then freed, as a node's inputs and outputs are;
# below the 4 MiB where numpy asks for huge pages, so that faults count 4 KiB pages.
_SIZES = (800_000, 1_600_000, 3_000_000)
_PAGES = sum(_SIZES) // 4096


def _faults_of_fresh_arrays(times: int) -> int:
    """Minor page faults taken by ``times`` passes that make, touch and drop the tensors."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        tensors = []
        for size in _SIZES:
            a = np.empty(size, np.uint8)
            a[::4096] = 1  # touch every page
            tensors.append(a)
        del tensors
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@glibc_only
def test_inside_a_run_a_freed_tensor_s_pages_are_reused() -> None:
    # (outside, glibc's dynamic threshold makes the count depend on what the process freed
    # before; the next test pins the defaults and sees every pass fault)
    with reused_memory():
        _faults_of_fresh_arrays(1)  # the heap grows once
        inside = _faults_of_fresh_arrays(20)
    assert inside < _PAGES  # 20 passes over the same pages, already mapped


@glibc_only
def test_after_the_run_the_defaults_are_back_and_fresh_memory_faults_again() -> None:
    with reused_memory():
        _faults_of_fresh_arrays(2)
    assert arena._active == 0
    assert _faults_of_fresh_arrays(10) >= 5 * _PAGES


@glibc_only
def test_concurrent_runs_keep_reuse_until_the_last_one_ends() -> None:
    first_inside, second_done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def second() -> None:
        try:
            first_inside.wait(5)
            with reused_memory():
                pass
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            second_done.set()

    t = threading.Thread(target=second)
    t.start()
    with reused_memory():
        first_inside.set()
        second_done.wait(5)
        assert arena._active == 1
        _faults_of_fresh_arrays(1)
        assert _faults_of_fresh_arrays(10) < _PAGES
    t.join()
    assert not errors
    assert arena._active == 0


def test_a_run_gives_the_same_outputs_inside_and_outside() -> None:
    x = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    expected = np.tanh(x @ x)
    with reused_memory():
        assert np.array_equal(np.tanh(x @ x), expected)
