"""A run on onnxruntime, timed by onnxruntime's own profiler and put onto our graph.

It lets a user hold the bundled executor's heat map beside a production runtime's. The file is
run, not the graph, with every node renamed to the id our ONNX reader gave it (``ort_model``),
and the profile's kernel names are put back onto the graph (``ort_profile``). onnxruntime is an
optional dependency: it is imported only here, only when a run asks for it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xocview.errors import RunError, shorten
from xocview.executor.failures import exception_free
from xocview.executor.feeds import (
    numpy_dtype,
    random_value,
    read_feed,
    resolved_shape,
    seeded_rng,
    shape_known,
)
from xocview.executor.ort_model import model_nodes, named_model
from xocview.executor.ort_profile import Attribution, OrtProfile, attribute, median_times
from xocview.executor.ort_profile import read_profile as read_ort_profile
from xocview.executor.result import RunResult
from xocview.executor.threads import resolve_threads
from xocview.model import Graph
from xocview.model.dtypes import canonical_dtype

__all__ = [
    "OPTIMIZATIONS",
    "input_values",
    "missing_onnxruntime",
    "onnxruntime_available",
    "run_onnxruntime",
]

# onnxruntime's graph optimization levels; "all" is what deployments run.
OPTIMIZATIONS = ("all", "extended", "basic", "none")
_LEVELS = {
    "all": "ORT_ENABLE_ALL",
    "extended": "ORT_ENABLE_EXTENDED",
    "basic": "ORT_ENABLE_BASIC",
    "none": "ORT_DISABLE_ALL",
}
_EXTERNAL_FOLDER = "session.model_external_initializers_file_folder_path"
_LISTED = 10  # kernel names a warning lists

PassDone = Callable[[int, int], None]  # (passes done, passes in all)


def missing_onnxruntime() -> str | None:
    """Why onnxruntime cannot run here, or None when it can."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "onnxruntime is not installed (pip install onnxruntime)"
    return None


def onnxruntime_available() -> bool:
    return missing_onnxruntime() is None


def run_onnxruntime(
    graph: Graph,
    model_path: str | Path,
    feeds: Mapping[str, Any] | None = None,
    *,
    repeat: int = 1,
    warmup: int = 0,
    seed: int = 0,
    symbols: Mapping[str, int] | None = None,
    symbol_default: int = 1,
    shapes: Mapping[str, Sequence[int]] | None = None,
    threads: int | None = None,
    optimization: str = "all",
    on_pass: PassDone | None = None,
    cancel: Callable[[], bool] | None = None,
) -> RunResult:
    """Run ``model_path`` (the .onnx file ``graph`` was read from) ``warmup + repeat`` times on
    onnxruntime's CPU provider; each node's median kernel time over the ``repeat`` passes.

    The inputs are those the bundled executor would feed (``input_values``). Intra- and
    inter-op pools get ``threads`` threads (None: one; 0: onnxruntime's default); the graph is
    optimized at ``optimization`` (one of OPTIMIZATIONS). Kernels that name no node, and nodes
    that no kernel timed, are counted in the result's warnings. ``cancel()`` is polled between
    passes. Raises RunError when onnxruntime is missing, refuses the model or fails a run.
    """
    if repeat < 1 or warmup < 0:
        raise RunError(f"repeat must be >= 1 and warmup >= 0 (got {repeat} and {warmup})")
    if optimization not in _LEVELS:
        raise RunError(f"optimization {optimization!r}: expected one of {', '.join(_LEVELS)}")
    try:
        count = resolve_threads(threads)
    except ValueError as e:
        raise RunError(str(e)) from None
    ort = _onnxruntime()
    values = input_values(graph, feeds or {}, shapes or {}, symbols or {}, symbol_default, seed)
    model, folder = named_model(graph, model_path)
    with tempfile.TemporaryDirectory(prefix="xocview-ort-") as tmp:
        options = _options(ort, threads, optimization, Path(tmp), folder)
        session = _session(ort, model, options, model_path)
        del model
        walls, outputs = _passes(session, values, warmup + repeat, on_pass, cancel, model_path)
        profile = read_ort_profile(session.end_profiling())
        del session
    cancelled = len(walls) < warmup + repeat
    result = _result(graph, profile, walls[warmup:], outputs, optimization, cancelled)
    result.threads = count
    return result


def _onnxruntime() -> Any:
    why = missing_onnxruntime()
    if why is not None:
        raise RunError(why)
    import onnxruntime

    return onnxruntime


def input_values(
    graph: Graph,
    feeds: Mapping[str, Any],
    shapes: Mapping[str, Sequence[int]],
    symbols: Mapping[str, int],
    symbol_default: int,
    seed: int,
) -> dict[str, Any]:
    """The values the bundled executor feeds the graph's inputs: given ones read as it reads
    them, the others its seeded random data (one generator per seed and tensor position), so
    both engines run on the same numbers. Given values of other tensors (initializers that
    onnxruntime lets a run override) are passed on. Raises RunError as the executor does."""
    index = graph.index
    unknown = [k for k in feeds if not index.has_tensor(k)]
    if unknown:
        raise RunError(
            f"no tensor named {unknown[0]!r} to feed; inputs are "
            + ", ".join(repr(graph.tensors[t].id) for t in graph.inputs)
        )
    out: dict[str, Any] = {}
    for t in graph.inputs:
        tensor = graph.tensors[t]
        if tensor.id in feeds:
            out[tensor.id] = read_feed(tensor, feeds[tensor.id])
            continue
        if tensor.id in shapes:
            shape = tuple(int(d) for d in shapes[tensor.id])
        elif shape_known(tensor):
            shape = resolved_shape(tensor, symbols, symbol_default)
        else:
            raise RunError(f"input {tensor.id!r} has no known shape; give it a shape or a value")
        if any(d < 0 for d in shape):
            raise RunError(f"input {tensor.id!r}: shape {list(shape)} is negative")
        out[tensor.id] = random_value(tensor, shape, numpy_dtype(tensor), seeded_rng(seed, t))
    for name, value in feeds.items():
        if name not in out:
            out[name] = read_feed(graph.tensor(name), value)
    return out


# -- the session -------------------------------------------------------------------------------


def _options(
    ort: Any, threads: int | None, optimization: str, tmp: Path, folder: Path | None
) -> Any:
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp / "profile")  # not the working directory
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVELS[optimization])
    n = 1 if threads is None else threads  # 0: onnxruntime's own default
    options.intra_op_num_threads = n
    options.inter_op_num_threads = n
    options.log_severity_level = 3  # errors only: its warnings would flood the terminal
    if folder is not None:
        options.add_session_config_entry(_EXTERNAL_FOLDER, str(folder))
    return options


def _session(ort: Any, model: bytes, options: Any, path: str | Path) -> Any:
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's Fail, InvalidGraph, NotImplemented...
        raise RunError(
            f"{path}: onnxruntime cannot load the model ({shorten(exception_free(str(e)), 600)})"
        ) from e


def _passes(
    session: Any,
    values: Mapping[str, Any],
    passes: int,
    on_pass: PassDone | None,
    cancel: Callable[[], bool] | None,
    path: str | Path,
) -> tuple[list[float], dict[str, Any]]:
    """The wall time of each pass and the last pass's outputs by name."""
    names = [o.name for o in session.get_outputs()]
    walls: list[float] = []
    outputs: list[Any] = []
    for p in range(passes):
        if cancel is not None and cancel():
            break
        start = time.perf_counter()
        try:
            outputs = session.run(names, dict(values))
        except Exception as e:
            session.end_profiling()
            raise RunError(
                f"{path}: onnxruntime failed in pass {p + 1}: {exception_free(str(e))}"
            ) from e
        walls.append(time.perf_counter() - start)
        if on_pass is not None:
            on_pass(p + 1, passes)
    return walls, dict(zip(names, outputs, strict=False))


# -- the result --------------------------------------------------------------------------------


def _result(
    graph: Graph,
    profile: OrtProfile,
    walls: list[float],
    outputs: dict[str, Any],
    optimization: str,
    cancelled: bool,
) -> RunResult:
    found = attribute(profile, graph)
    first = max(0, profile.runs - len(walls))  # the warm-up passes' kernels are left out
    medians = median_times(found.times, first)
    index = graph.index
    r = RunResult(outputs=outputs, passes=len(walls), cancelled=cancelled)
    r.node_times = {k: m for k, (m, _) in medians.items()}
    r.spread = {k: s for k, (_, s) in medians.items()} if len(walls) > 1 else {}
    r.op_types = {k: graph.nodes[index.node_position(k)].op_type for k in r.node_times}
    r.total_time = float(np.median(walls)) if walls else 0.0
    for name, value in outputs.items():
        if isinstance(value, np.ndarray) and index.has_tensor(name):
            r.shapes[name] = (list(value.shape), canonical_dtype(value.dtype.name) or "undefined")
    r.warnings.extend(_warnings(graph, profile, found, r, optimization))
    return r


def _warnings(
    graph: Graph, profile: OrtProfile, found: Attribution, r: RunResult, optimization: str
) -> list[str]:
    """What the profile could not put onto the graph, counted and named."""
    out: list[str] = []
    if found.unmatched:
        _, time_share = found.matched_share(profile)
        names = ", ".join(f"{k.name} ({k.op_name})" for k in found.unmatched[:_LISTED])
        more = len(found.unmatched) - _LISTED
        out.append(
            f"{len(found.unmatched)} onnxruntime kernels ({1 - time_share:.1%} of the kernel "
            f"time) matched no node of the graph: {names}"
            + (f" and {more} more" if more > 0 else "")
        )
    if profile.other:
        out.append(f"{len(profile.other)} profile events were neither kernel times nor fences")
    untimed = [nd.id for nd in model_nodes(graph) if nd.id not in r.node_times]
    if untimed and not r.cancelled:
        out.append(
            f"{len(untimed)} nodes of the graph got no onnxruntime time: folded into constants, "
            f"fused into another node, removed by its optimizer (level {optimization}) or in a "
            "branch not taken"
        )
    return out
