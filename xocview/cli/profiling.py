"""Profiling a graph from Python: the run ``xocview run`` makes, returned as an object.

``profile_graph`` runs a graph on the bundled executor or on onnxruntime through
``run_engine``, the one function ``xocview run`` runs its graph with, so that a notebook's figures
are the command line's. The ``ProfileResult`` holds the times, the outputs and a copy of the graph
with the times written on it as the command line's ``--save`` writes them (heat colours in the
window); the graph given is left as it was. ``profile_json`` is the ``--profile`` file's content.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from xocview.errors import XocviewError
from xocview.executor import Iteration, RunResult, run
from xocview.executor.onnxruntime_engine import missing_onnxruntime, run_onnxruntime
from xocview.formats.onnx.writer import save as save_onnx
from xocview.model import Graph, edits
from xocview.model.analyses.profile import TIME_KEYS, times_as_metadata

if TYPE_CHECKING:
    import pandas

__all__ = ["ENGINES", "ProfileResult", "profile_graph", "profile_json", "run_engine"]

ENGINES = tuple(TIME_KEYS)  # "xocview" (the bundled executor), "onnxruntime"


def run_engine(
    graph: Graph,
    engine: str,
    feeds: Mapping[str, Any],
    *,
    model_path: str | Path | None,
    repeat: int,
    warmup: int,
    seed: int = 0,
    symbols: Mapping[str, int] | None = None,
    symbol_default: int = 1,
    shapes: Mapping[str, Sequence[int]] | None = None,
    threads: int | None = None,
    optimization: str | None = None,
    max_memory: int | None = None,
    on_iteration: Iteration | None = None,
) -> RunResult:
    """``engine``'s run of ``graph``: the bundled executor's, or onnxruntime's of the .onnx file
    at ``model_path`` (``optimization`` None: all). What ``xocview run`` and ``profile_graph``
    both call, so that their figures come from one path. Raises RunError as the engines do."""
    common: dict[str, Any] = {
        "repeat": repeat,
        "warmup": warmup,
        "seed": seed,
        "symbols": symbols or {},
        "symbol_default": symbol_default,
        "shapes": shapes or {},
        "threads": threads,
    }
    if engine == "onnxruntime":
        if model_path is None:
            raise XocviewError("onnxruntime runs .onnx files; this graph has none")
        level = optimization or "all"
        return run_onnxruntime(graph, model_path, feeds, optimization=level, **common)
    return run(graph, feeds, max_memory=max_memory, on_iteration=on_iteration, **common)


def profile_json(
    graph: Graph, result: RunResult, engine: str, optimization: str | None = None
) -> dict[str, Any]:
    """The timings as ``xocview run --profile`` writes them (milliseconds); onnxruntime's
    without the memory it does not measure, with its optimization level instead."""
    data: dict[str, Any] = {
        "graph": graph.id,
        "total_ms": result.total_time * 1e3,
        "threads": result.threads,
        "passes": result.passes,
        "peak_bytes": result.peak_bytes,
        "weight_bytes": result.weight_bytes,
        "op_types_ms": {op: s * 1e3 for op, s in result.time_by_op().items()},
        "nodes": [
            {
                "id": node_id,
                "op_type": result.op_types.get(node_id, "?"),
                "ms": s * 1e3,
                "spread": result.spread.get(node_id, 1.0),
            }
            for node_id, s in result.node_times.items()
        ],
        "outputs": {
            k: list(np.asarray(v).shape)
            for k, v in result.outputs.items()
            if isinstance(v, np.ndarray)
        },
    }
    data["engine"] = engine
    if engine == "onnxruntime":  # its memory is not measured
        data["optimization"] = optimization or "all"
        del data["peak_bytes"], data["weight_bytes"]
    return data


@dataclass(frozen=True, repr=False)
class ProfileResult:
    """What ``profile_graph`` measured.

    Times are seconds: ``node_times`` each timed node's median over the ``repeat`` passes,
    ``by_op`` their sums per op type (slowest first), ``total`` the median wall time of one
    pass. ``spread`` is per node, its slowest timed pass over its fastest (1.0 steady; empty
    with one pass), as ``RunResult.spread``; ``typical_spread`` the median of it over the nodes
    above 1% of the time, the figure ``xocview run`` prints. ``peak_bytes`` is the most memory
    the live tensors took at once (0 on onnxruntime, which does not tell it). ``graph`` is a
    copy of the graph profiled with each timed node's milliseconds under
    ``performance.time.cpu`` (onnxruntime: ``performance.time.onnxruntime``) and the shapes the
    run measured where the graph had none, as ``xocview run --save`` writes them.
    """

    node_times: dict[str, float]
    spread: dict[str, float]
    by_op: dict[str, float]
    peak_bytes: int
    outputs: dict[str, Any]
    graph: Graph
    engine: str
    repeat: int
    total: float
    op_types: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    run_result: RunResult = field(default_factory=RunResult)  # the engine's own result
    optimization: str | None = None  # onnxruntime's level; None on the bundled executor

    @property
    def time_key(self) -> str:
        """The node metadata key the times are written under on ``graph``."""
        return TIME_KEYS[self.engine]

    @property
    def typical_spread(self) -> float | None:
        return self.run_result.typical_spread()

    def slowest(self, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` slowest nodes with their median seconds, slowest first."""
        return self.run_result.slowest(k)

    def to_json(self) -> dict[str, Any]:
        """The timings as ``xocview run --profile`` writes them (milliseconds)."""
        return profile_json(self.graph, self.run_result, self.engine, self.optimization)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per timed node, slowest first: node, op_type, seconds, share of the summed
        time. Raises XocviewError when pandas is not installed."""
        try:
            import pandas
        except ImportError:
            raise XocviewError("to_pandas needs pandas, which is not installed") from None
        total = sum(self.node_times.values()) or 1.0
        rows = [
            (node_id, self.op_types.get(node_id, "?"), seconds, seconds / total)
            for node_id, seconds in self.slowest(len(self.node_times))
        ]
        return pandas.DataFrame(rows, columns=["node", "op_type", "seconds", "share"])

    def show(self, name: str | None = None) -> None:
        """Open ``graph`` in the xocview window, coloured by the times measured."""
        from xocview.ui.show_client import show_graph

        show_graph(self.graph, name=name)

    def __repr__(self) -> str:
        top = self.slowest(1)
        slowest = ""
        if top:
            node_id, seconds = top[0]
            op = self.op_types.get(node_id, "?")
            slowest = f", slowest {node_id!r} ({op}) {seconds * 1e3:.3f} ms"
        return (
            f"<ProfileResult {self.engine}: {len(self.node_times)} nodes, total "
            f"{self.total * 1e3:.3f} ms (median of {self.repeat}){slowest}>"
        )


def profile_graph(
    graph: Graph,
    inputs: Mapping[str, Any] | Sequence[Any] | None = None,
    *,
    repeat: int = 5,
    warmup: int = 1,
    threads: int = 1,
    engine: str = "xocview",
    seed: int = 0,
    shapes: Mapping[str, Sequence[int]] | None = None,
    dims: Mapping[str, int] | None = None,
    dim_default: int = 1,
    max_memory: int | None = None,
    optimization: str | None = None,
    model_path: str | Path | None = None,
) -> ProfileResult:
    """Run ``graph`` ``warmup + repeat`` times on ``engine`` as ``xocview run`` does and
    return what it measured; ``graph`` itself is not changed.

    ``inputs`` maps input ids to arrays (or .npy paths), or lists values in the order of the
    graph's inputs; inputs not given get the command line's seeded random data (``seed``).
    ``shapes``, ``dims``, ``dim_default``, ``max_memory`` and ``optimization`` are
    ``xocview run``'s --shape, --dim, --dim-default, --max-memory and --optimization. On
    onnxruntime the .onnx file at ``model_path`` runs, the file ``graph`` was read from; without
    one the graph is written to a temporary .onnx file first. Raises XocviewError (RunError for
    a failed run) with a one-line message.
    """
    _check_settings(repeat, warmup, threads, engine)
    if engine != "onnxruntime" and optimization is not None:
        raise XocviewError("optimization is onnxruntime's: give it with engine='onnxruntime'")
    if engine == "onnxruntime" and max_memory is not None:
        raise XocviewError("max_memory is the xocview engine's; onnxruntime has no budget")
    feeds = _feeds(graph, inputs)
    copy = graph.snapshot()  # the run's own graph: the times go on it, not on the caller's
    settings: dict[str, Any] = {
        "repeat": repeat,
        "warmup": warmup,
        "seed": seed,
        "symbols": dims,
        "symbol_default": dim_default,
        "shapes": shapes,
        "threads": threads,
        "optimization": optimization,
        "max_memory": max_memory,
    }
    if engine == "onnxruntime" and model_path is None:
        with tempfile.TemporaryDirectory(prefix="xocview-profile-") as tmp:
            written = Path(tmp) / "model.onnx"
            save_onnx(copy, written)  # its nodes keep their ids, as onnxruntime's profile needs
            result = run_engine(copy, engine, feeds, model_path=written, **settings)
    else:
        result = run_engine(copy, engine, feeds, model_path=model_path, **settings)
    times = times_as_metadata(result.node_times)
    edits.record_run(copy, TIME_KEYS[engine], times, result.shapes, "run")
    return ProfileResult(
        node_times=dict(result.node_times),
        spread=dict(result.spread),
        by_op=result.time_by_op(),
        peak_bytes=result.peak_bytes,
        outputs=dict(result.outputs),
        graph=copy,
        engine=engine,
        repeat=repeat,
        total=result.total_time,
        op_types=dict(result.op_types),
        warnings=list(result.warnings),
        run_result=result,
        optimization=(optimization or "all") if engine == "onnxruntime" else None,
    )


def _check_settings(repeat: int, warmup: int, threads: int, engine: str) -> None:
    if engine not in ENGINES:
        raise XocviewError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    least_of = {"repeat": 1, "warmup": 0, "threads": 1}
    for name, value in (("repeat", repeat), ("warmup", warmup), ("threads", threads)):
        least = least_of[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise XocviewError(f"{name} must be a whole number >= {least}; got {value!r}")
    if engine == "onnxruntime" and (why := missing_onnxruntime()) is not None:
        raise XocviewError(why)


def _feeds(graph: Graph, inputs: Mapping[str, Any] | Sequence[Any] | None) -> dict[str, Any]:
    """The run's feeds by tensor id: a mapping as given, a list matched to the graph's inputs
    in order (as many values as inputs)."""
    if inputs is None:
        return {}
    if isinstance(inputs, Mapping):
        return dict(inputs)
    if isinstance(inputs, (list, tuple)):
        names = [graph.tensors[t].id for t in graph.inputs]
        if len(inputs) != len(names):
            raise XocviewError(
                f"inputs: {len(inputs)} values given for {len(names)} graph inputs "
                f"({', '.join(names) or 'none'}); expected one value per input, in order"
            )
        return dict(zip(names, inputs, strict=True))
    raise XocviewError(
        f"inputs: expected a mapping of input names to arrays or a list of arrays, got "
        f"{type(inputs).__name__}"
    )
