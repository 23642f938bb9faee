"""What a run measured: outputs, median time per node, peak memory of live tensors."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

__all__ = ["UNSTEADY", "RunResult"]

# A node whose slowest timed pass took this many times its fastest is reported: its median may
# say more about the machine than about the node.
UNSTEADY = 1.5


@dataclass
class RunResult:
    """The outcome of ``run``; partial when ``cancelled`` or attached to a RunError.

    ``node_times`` holds each leaf's median over the timed passes, in seconds; ``peak_bytes``
    the largest total size of the tensors alive at once (weights included, ``weight_bytes`` of
    it, and the outputs of ``folded`` nodes); ``total_time`` the median wall time of one pass.
    """

    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    node_times: dict[str, float] = field(default_factory=dict)
    peak_bytes: int = 0
    weight_bytes: int = 0
    total_time: float = 0.0
    cancelled: bool = False
    op_types: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    folded: list[str] = field(default_factory=list)  # computed once before timing (constants)
    # Shape and dtype of every tensor the run fed, made or computed, as measured: what files
    # without shapes (MXNet symbols, LightNet IR) learn from a run.
    shapes: dict[str, tuple[list[int], str]] = field(default_factory=dict)
    threads: int = 1  # the BLAS/OpenMP thread count the kernels ran with
    passes: int = 0  # timed passes each median is taken over
    # per node, slowest over fastest of its timed passes (1.0: steady); with 2 passes or more
    spread: dict[str, float] = field(default_factory=dict)
    # a node that ran with others fused into it (a Conv with its BatchNormalization and Relu)
    # -> those nodes; their times are the fused step's, split by FLOPs
    fused: dict[str, list[str]] = field(default_factory=dict)

    def unsteady(self, factor: float = UNSTEADY, share: float = 0.01) -> list[tuple[str, float]]:
        """Nodes above ``share`` of the summed time whose passes differ by more than
        ``factor`` (slowest / fastest), worst first: times not to trust as they stand."""
        total = sum(self.node_times.values()) or 1.0
        found = [
            (node_id, ratio)
            for node_id, ratio in self.spread.items()
            if ratio > factor and self.node_times.get(node_id, 0.0) >= share * total
        ]
        return sorted(found, key=lambda kv: -kv[1])

    def typical_spread(self) -> float | None:
        """The median spread over the nodes above 1% of the time (None with one pass)."""
        total = sum(self.node_times.values()) or 1.0
        ratios = [r for k, r in self.spread.items() if self.node_times.get(k, 0.0) >= 0.01 * total]
        return float(np.median(ratios)) if ratios else None

    def time_by_op(self) -> dict[str, float]:
        """Summed median time per op type, slowest first."""
        sums: dict[str, float] = defaultdict(float)
        for node_id, seconds in self.node_times.items():
            sums[self.op_types.get(node_id, "?")] += seconds
        return dict(sorted(sums.items(), key=lambda kv: -kv[1]))

    def slowest(self, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` slowest nodes with their median seconds."""
        return sorted(self.node_times.items(), key=lambda kv: -kv[1])[:k]
