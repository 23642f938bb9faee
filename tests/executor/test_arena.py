"""Freed tensor memory is reused while a run lasts, and given back after it.

Page faults are counted in a fresh interpreter for each check: what a long test session did
before (threads, mappings, glibc's dynamic threshold) changes where malloc puts a block, and a
count taken in a shared process measured that history rather than reused_memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

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

_PRELUDE = f"""
import json, resource, threading
import numpy as np
from xocview.executor import arena
from xocview.executor.arena import reused_memory

def faults(times):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(times):
        tensors = []
        for size in {_SIZES!r}:
            a = np.empty(size, np.uint8)
            a[::4096] = 1  # touch every page
            tensors.append(a)
        del tensors
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
"""


def _fresh(scenario: str) -> dict[str, int]:
    """What ``scenario`` puts in ``out``, run in a new interpreter after the prelude."""
    code = _PRELUDE + "out = {}\n" + textwrap.dedent(scenario) + "\nprint(json.dumps(out))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@glibc_only
def test_inside_a_run_a_freed_tensor_s_pages_are_reused() -> None:
    # (outside, glibc's dynamic threshold makes the count depend on what the process freed
    # before; the next test pins the defaults and sees every pass fault)
    out = _fresh(
        """
        with reused_memory():
            faults(1)  # the heap grows once
            out["inside"] = faults(20)
        """
    )
    assert out["inside"] < _PAGES  # 20 passes over the same pages, already mapped


@glibc_only
def test_after_the_run_the_defaults_are_back_and_fresh_memory_faults_again() -> None:
    out = _fresh(
        """
        with reused_memory():
            faults(2)
        out["active"] = arena._active
        out["after"] = faults(10)
        """
    )
    assert out["active"] == 0
    assert out["after"] >= 5 * _PAGES


@glibc_only
def test_concurrent_runs_keep_reuse_until_the_last_one_ends() -> None:
    out = _fresh(
        """
        first_inside, second_done = threading.Event(), threading.Event()

        def second():
            first_inside.wait(5)
            with reused_memory():
                pass
            second_done.set()

        t = threading.Thread(target=second)
        t.start()
        with reused_memory():
            first_inside.set()
            second_done.wait(5)
            out["active_inside"] = arena._active
            faults(1)
            out["inside"] = faults(10)
        t.join()
        out["active_after"] = arena._active
        """
    )
    assert out["active_inside"] == 1
    assert out["inside"] < _PAGES
    assert out["active_after"] == 0


def test_a_run_gives_the_same_outputs_inside_and_outside() -> None:
    x = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    expected = np.tanh(x @ x)
    with reused_memory():
        assert np.array_equal(np.tanh(x @ x), expected)
