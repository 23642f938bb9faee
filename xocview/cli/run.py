"""``xocview run``: run a graph on the bundled executor, or an ONNX model on onnxruntime, and
print where the time goes."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from xocview.cli.arguments import parse_dim, parse_dims
from xocview.cli.outputs import save_with_notes
from xocview.cli.profiling import profile_json, run_engine
from xocview.cli.terminal import SafeStream, cell, say, shorten_ids
from xocview.errors import RunError, XocviewError, terminal_safe
from xocview.executor import RunResult
from xocview.executor.budget import parse_size
from xocview.executor.maps import describe_maps, preview_maps
from xocview.executor.onnxruntime_engine import OPTIMIZATIONS, missing_onnxruntime
from xocview.executor.optional import Empty
from xocview.executor.result import UNSTEADY
from xocview.formats import registry
from xocview.formats.atomic import write_text_atomic
from xocview.formats.source import Source
from xocview.model import Graph, edits
from xocview.model.analyses.profile import ORT_TIME_KEY, TIME_KEY, TIME_KEYS, times_as_metadata

__all__ = ["add_run_parser", "cmd_run", "token_feed"]


def add_run_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("file", metavar="FILE")
    sp.add_argument(
        "--engine",
        choices=tuple(TIME_KEYS),
        default="xocview",
        help="xocview: the bundled executor (default); onnxruntime: onnxruntime's own per-node "
        f"profile of an .onnx file, recorded as {ORT_TIME_KEY} (needs onnxruntime installed)",
    )
    sp.add_argument(
        "--optimization",
        choices=OPTIMIZATIONS,
        default=None,
        help="onnxruntime's graph optimizations (--engine onnxruntime; default all, as "
        "deployed; basic or none keep more of the graph's nodes apart)",
    )
    sp.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input's value (others get seeded random data)",
    )
    sp.add_argument(
        "--tokens",
        metavar="ID,ID,...",
        help="a prompt of token ids for a language model's int64 token input (input_ids): "
        "xocview run model.gguf --tokens 1,2,3",
    )
    sp.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=D,D,...",
        help="an input's (or weight's) shape where the file gives none",
    )
    sp.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="SYMBOL=N",
        help="size of a symbolic dimension (default: --dim-default)",
    )
    sp.add_argument(
        "--dim-default",
        type=_dim_default,
        default=1,
        metavar="N",
        help="size of symbolic dimensions not given with --dim (default 1)",
    )
    sp.add_argument(
        "--max-memory",
        type=_size,
        default=None,
        metavar="SIZE",
        help="refuse to run when the tensors would need more memory than this (e.g. 2G, 512M; "
        "0 or none: no limit; default: half the available memory)",
    )
    sp.add_argument(
        "--repeat", type=int, default=5, metavar="N", help="timed passes (median; default 5)"
    )
    sp.add_argument(
        "--warmup", type=int, default=1, metavar="N", help="untimed passes first (default 1)"
    )
    sp.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="BLAS/OpenMP threads the kernels use, or onnxruntime's intra- and inter-op threads "
        "(default 1, steady on a busy machine; 0: every core, or onnxruntime's default)",
    )
    sp.add_argument("--seed", type=int, default=0, help="seed of the random inputs and weights")
    sp.add_argument("--top", type=int, default=10, metavar="K", help="slowest nodes to list")
    sp.add_argument("--profile", metavar="OUT.json", help="write the timings as JSON")
    sp.add_argument(
        "--save",
        metavar="OUT.json",
        help=f"write the graph as XOC JSON with each node's {TIME_KEY} (ms; with --engine "
        f"onnxruntime {ORT_TIME_KEY}) and the measured shapes of tensors the file leaves without",
    )


def token_feed(graph: Graph, text: str) -> tuple[str, np.ndarray]:
    """The graph's token input (``input_ids``, else its one int64 input of rank 2) and the
    prompt as a [1, n] int64 array; XocviewError when there is none or the ids are not ids."""
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as e:
        raise XocviewError(f"--tokens {text!r}: expected token ids, e.g. 1,2,3") from e
    if not ids or min(ids) < 0:
        raise XocviewError(f"--tokens {text!r}: expected one or more token ids of 0 or more")
    inputs = [graph.tensors[i] for i in graph.inputs]
    named = [t for t in inputs if t.id == "input_ids"]
    fit = named or [t for t in inputs if t.dtype in ("int64", "int32") and len(t.shape) == 2]
    if len(fit) != 1:
        have = ", ".join(f"{t.id} ({t.dtype})" for t in inputs) or "none"
        raise XocviewError(f"--tokens: the graph has no single token input (inputs: {have})")
    dtype = np.int32 if fit[0].dtype == "int32" else np.int64
    return fit[0].id, np.asarray([ids], dtype=dtype)


def _size(text: str) -> int:
    """argparse type of ``--max-memory``: bytes, 0 for no limit."""
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _dim_default(text: str) -> int:
    """argparse type of ``--dim-default``."""
    try:
        return parse_dim(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _located(e: RunError, file: str) -> RunError:
    """The run's error naming the file (where it does not already), its ids cut to
    QUOTE_LIMIT characters."""
    text = shorten_ids(str(e))
    if not _same_file(text.split(": ", 1)[0], file):
        text = f"{file}: {text}"
    located = RunError(text, e.node_id, e.op_type)
    located.partial = e.partial
    return located


def _same_file(head: str, file: str) -> bool:
    if head == file:
        return True
    try:
        return os.path.samefile(head, file)
    except (OSError, ValueError):
        return False


def _pairs(items: list[str], what: str, parse: Callable[[str], Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        if not sep or not name:
            raise XocviewError(f"{item!r}: expected {what}")
        try:
            out[name] = parse(value)
        except ValueError as e:
            raise XocviewError(f"{item!r}: expected {what} ({e})") from e
    return out


def cmd_run(ns: argparse.Namespace) -> int:
    """Load, run, print outputs and the slowest nodes; optionally write a profile and a graph."""
    for out in (ns.profile, ns.save):
        if out is not None and Path(out).suffix.lower() != ".json":
            raise XocviewError(f"{out}: the output must be a .json file")
    onnxruntime = ns.engine == "onnxruntime"
    if onnxruntime and (why := missing_onnxruntime()) is not None:
        raise XocviewError(why)
    if not onnxruntime and ns.optimization is not None:
        raise XocviewError("--optimization is onnxruntime's: give it with --engine onnxruntime")
    if onnxruntime and ns.max_memory is not None:
        raise XocviewError("--max-memory is the xocview engine's; onnxruntime has no budget")
    graph, fmt = registry.load_source(Source(ns.file))
    if onnxruntime and fmt.NAME != "ONNX":
        raise XocviewError(
            f"{ns.file}: --engine onnxruntime runs ONNX models (.onnx); this file is {fmt.NAME}"
        )
    try:
        result = _run(ns, graph)
    except RunError as e:
        partial = e.partial
        if isinstance(partial, RunResult) and partial.node_times:
            say(f"stopped after {len(partial.node_times)} nodes; the slowest so far:")
            _print_slowest(partial, ns.top)
        raise _located(e, ns.file) from e
    _print_outputs(result)
    _print_slowest(result, ns.top)
    _print_by_op(result)
    threads = f"{result.threads} thread" + ("s" if result.threads != 1 else "")
    where = (
        f"onnxruntime, optimization {ns.optimization or 'all'}"
        if onnxruntime
        else f"peak memory {_mb(result.peak_bytes)} (weights {_mb(result.weight_bytes)})"
    )
    say(
        f"total {result.total_time * 1e3:.3f} ms over {len(result.node_times)} nodes "
        f"(median of {ns.repeat}, {threads}); {where}"
    )
    _print_spread(result)
    for w in result.warnings:
        say(f"warning: {w}")
    _write(ns, graph, result)
    return 0


def _run(ns: argparse.Namespace, graph: Graph) -> RunResult:
    """The chosen engine's run of ``graph`` with the command line's inputs and settings."""
    feeds: dict[str, Any] = dict(_pairs(ns.input, "NAME=FILE.npy", str))
    if ns.tokens is not None:
        name, ids = token_feed(graph, ns.tokens)
        feeds[name] = ids
    shapes = _pairs(ns.shape, "NAME=D,D,...", parse_dims)
    symbols = _pairs(ns.dim, "SYMBOL=N", parse_dim)
    line = None if ns.engine == "onnxruntime" else _IterationLine.on_terminal()
    try:
        return run_engine(
            graph,
            ns.engine,
            feeds,
            model_path=ns.file,
            repeat=ns.repeat,
            warmup=ns.warmup,
            seed=ns.seed,
            symbols=symbols,
            symbol_default=ns.dim_default,
            shapes=shapes,
            threads=ns.threads,
            optimization=ns.optimization,
            max_memory=ns.max_memory,
            on_iteration=line,
        )
    finally:
        if line is not None:
            line.clear()


class _IterationLine:
    """A Loop or Scan node's iterations on stderr, one line rewritten in place, so that a long
    loop shows it is moving (the executor calls it about four times a second).

    Written to the unfiltered stream: the escaping wrapper would show our own CR and erase
    sequence as text; the node id from the file is escaped here instead.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.shown = False

    @classmethod
    def on_terminal(cls) -> _IterationLine | None:
        raw = sys.stderr.raw if isinstance(sys.stderr, SafeStream) else sys.stderr
        isatty = getattr(raw, "isatty", None)
        return cls(raw) if isatty is not None and isatty() else None

    def __call__(self, node_id: str, done: int, total: int | None) -> None:
        of = f" of {total:,}" if total is not None else ""
        self.stream.write(f"\r\x1b[K{cell(node_id)}: iteration {done:,}{of}")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _write(ns: argparse.Namespace, graph: Graph, result: RunResult) -> None:
    """``--profile`` and ``--save``: the times as JSON, the graph with them in its metadata."""
    if ns.profile:
        data = profile_json(graph, result, ns.engine, ns.optimization)
        write_text_atomic(Path(ns.profile), json.dumps(data, indent=2))
        say(f"wrote {ns.profile}")
    if ns.save:
        key = TIME_KEYS[ns.engine]
        times = times_as_metadata(result.node_times)
        edits.record_run(graph, key, times, result.shapes, "run")
        save_with_notes(graph, Path(ns.save))
        say(f"wrote {ns.save} (with {key} of {len(result.node_times)} nodes)")


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def _print_outputs(result: RunResult) -> None:
    say("outputs:")
    for name, value in result.outputs.items():
        maps = describe_maps(value)
        if maps is not None:  # ZipMap's class scores: the first few maps as they read
            say(f"  {cell(name):<24} {maps}")
            for line in preview_maps(value):
                say(f"    {cell(line, 200)}")
            continue
        if isinstance(value, list):  # a sequence
            say(f"  {cell(name):<24} sequence of {len(value)}")
            continue
        if isinstance(value, Empty):
            say(f"  {cell(name):<24} empty optional")
            continue
        arr = np.asarray(value)
        shape = "x".join(map(str, arr.shape)) or "scalar"
        stats = ""
        if arr.size and arr.dtype.kind in "fiub":
            a = arr.astype(np.float64)
            stats = f"  min {a.min():.6g}  max {a.max():.6g}  mean {a.mean():.6g}"
        say(f"  {cell(name):<24} {arr.dtype!s:<8} {shape}{stats}")
    if not result.outputs:
        say("  (none)")


def _print_spread(result: RunResult) -> None:
    typical = result.typical_spread()
    if typical is None:
        return
    say(
        f"spread over {result.passes} passes (slowest / fastest, nodes above 1% of the time): "
        f"typical x{typical:.2f}"
    )
    unsteady = result.unsteady(UNSTEADY)
    for node_id, ratio in unsteady[:5]:
        op = result.op_types.get(node_id, "?")
        say(
            f"warning: node '{cell(node_id)}' ({cell(op)}) varied x{ratio:.2f} between passes; "
            "its time is not steady (a busy machine? try more --repeat)"
        )
    if len(unsteady) > 5:
        say(f"warning: {len(unsteady) - 5} more nodes varied more than x{UNSTEADY}")


def _print_slowest(result: RunResult, k: int) -> None:
    total = sum(result.node_times.values()) or 1.0
    say(f"slowest {min(k, len(result.node_times))} nodes:")
    say(f"  {'node':<32} {'op':<20} {'ms':>10} {'share':>7}")
    for node_id, seconds in result.slowest(k):
        op = result.op_types.get(node_id, "?")
        node, op = terminal_safe(node_id)[:32], terminal_safe(op)[:20]
        say(f"  {node:<32} {op:<20} {seconds * 1e3:>10.3f} {100 * seconds / total:>6.1f}%")


def _print_by_op(result: RunResult) -> None:
    total = sum(result.node_times.values()) or 1.0
    say("time per op type:")
    for op, seconds in list(result.time_by_op().items())[:10]:
        say(f"  {cell(op):<24} {seconds * 1e3:>10.3f} ms {100 * seconds / total:>6.1f}%")
