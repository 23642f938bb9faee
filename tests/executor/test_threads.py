"""A run sets the BLAS/OpenMP pools to a known size while it times, records the count, and
says how much each node's passes differ."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from tests.executor.test_runtime import relu_chain
from xocview.errors import RunError
from xocview.executor import RunResult, run
from xocview.executor.threads import DEFAULT_THREADS, available_cores, resolve_threads
from xocview.model import Graph, Node, Tensor


def matmul_graph() -> Graph:
    """x[64,64] @ w[64,64]: a node that goes through BLAS."""
    tensors = [
        Tensor("x", "input", [64, 64], "float32"),
        Tensor("w", "weight", [64, 64], "float32"),
        Tensor("y", "output", [64, 64], "float32"),
    ]
    return Graph("g", "g", tensors, [Node("mm", "MatMul", [0, 1], [2])], [0], [2])


def blas_threads() -> set[int]:
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_the_blas_pool_has_the_asked_size_during_the_run_only(threads: int | None) -> None:
    before = blas_threads()
    seen: list[set[int]] = []
    result = run(
        matmul_graph(),
        repeat=2,
        on_progress=lambda *_: seen.append(blas_threads()),
        threads=threads,
    )
    want = DEFAULT_THREADS if threads is None else threads
    assert result.threads == want
    if before:  # numpy linked with a BLAS threadpoolctl can see
        assert seen and all(s == {want} for s in seen)
        assert blas_threads() == before  # as it was


def test_zero_threads_is_every_core_and_a_negative_count_is_refused() -> None:
    assert resolve_threads(0) == available_cores()
    assert run(relu_chain(2), threads=0).threads == available_cores()
    with pytest.raises(RunError, match="threads must be >= 0"):
        run(relu_chain(2), threads=-1)


def test_every_timed_node_gets_its_spread_over_the_passes() -> None:
    result = run(relu_chain(4), repeat=4, warmup=1)
    assert result.passes == 4
    assert set(result.spread) == set(result.node_times)
    assert all(r >= 1.0 for r in result.spread.values())
    single = run(relu_chain(4), repeat=1)
    assert single.passes == 1 and single.spread == {} and single.typical_spread() is None


def test_unsteady_nodes_are_those_that_vary_and_matter() -> None:
    r = RunResult(
        node_times={"big": 0.9, "noisy_but_tiny": 0.001, "steady": 0.099},
        spread={"big": 2.5, "noisy_but_tiny": 9.0, "steady": 1.02},
    )
    assert r.unsteady(1.5) == [("big", 2.5)]
    assert r.typical_spread() == pytest.approx(np.median([2.5, 1.02]))
