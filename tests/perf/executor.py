"""The bundled executor against onnxruntime and onnx's ReferenceEvaluator, same models, same run.

For every ONNX light model (the inputs ONNX's backend test gives them: arange(n) / n), prints
the median inference time of xocview's executor, of onnxruntime (CPUExecutionProvider, default
threads and optimisations) and of `onnx.reference.ReferenceEvaluator` (one run, capped: it is
slow), the ratios, and the executor's own overhead: the share of a pass not spent inside
kernels (the node loop, per-node timing, storing and freeing), and of it the cost of timing
each node (two clock reads and a list append per node, measured here). Targets: geometric mean
of xocview / onnxruntime <= 2; >= 20x faster than the reference evaluator; per-node timing
overhead < 5%.

    python tests/perf/executor.py [--repeat 5] [--reference-cap 120] [--models resnet50 ...]

onnxruntime is a test/benchmark extra, never a run-time dependency of xocview.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from timing import median_time  # tests/perf/, beside us

from xocview.executor import run
from xocview.formats import load

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def backend_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = vi.type.tensor_type.shape.dim
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in dims)
        n = int(np.prod(shape))
        feeds[vi.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    return feeds


_REFERENCE = """
import sys, time, numpy as np, onnx
from onnx.reference import ReferenceEvaluator
model = onnx.load(sys.argv[1])
feeds = dict(np.load(sys.argv[2]))
sess = ReferenceEvaluator(model)
start = time.perf_counter()
sess.run(None, feeds)
print(time.perf_counter() - start)
"""


def time_reference(path: Path, feeds: dict[str, np.ndarray], cap: float) -> float:
    """One run of the reference evaluator in a child process; inf past ``cap`` seconds."""
    if cap <= 0:
        return math.nan
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "feeds.npz"
        np.savez(npz, **feeds)
        try:
            out = subprocess.run(
                [sys.executable, "-c", _REFERENCE, str(path), str(npz)],
                capture_output=True,
                text=True,
                timeout=cap,
                check=True,
            )
        except subprocess.TimeoutExpired:
            return math.inf
    return float(out.stdout.strip().splitlines()[-1])


def timing_cost() -> float:
    """Seconds the node loop spends on timing one node: two clock reads and one append."""
    perf, samples = time.perf_counter, []
    n = 200_000
    start = perf()
    for _ in range(n):
        a = perf()
        b = perf()
        samples.append(b - a)
    return (perf() - start) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--reference-cap",
        type=float,
        default=120.0,
        help="seconds; 0 skips the reference evaluator",
    )
    ap.add_argument("--models", nargs="*", help="light model names (default: all)")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads for both engines: xocview's BLAS pool, onnxruntime's intra-op pool "
        "(0: each engine's default)",
    )
    ns = ap.parse_args()
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if ns.threads:
        opts.intra_op_num_threads = ns.threads
        opts.inter_op_num_threads = 1
    print(f"threads: {ns.threads or 'each engine default'}")

    names = sorted(p.stem for p in LIGHT.glob("*.onnx"))
    if ns.models:
        names = [n for n in names if any(m in n for m in ns.models)]
    print(
        f"median of {ns.repeat} runs; reference evaluator: one run, capped at "
        f"{ns.reference_cap:.0f} s"
    )
    per_node = timing_cost()
    header = (
        f"{'model':<22} {'xocview':>9} {'ort':>9} {'ratio':>6} {'reference':>10} "
        f"{'ref/ours':>9} {'loop':>7} {'timing':>7}"
    )
    print(header)
    ratios, ref_ratios, overheads, timings = [], [], [], []
    for name in names:
        path = LIGHT / f"{name}.onnx"
        model = onnx.load(path)
        feeds = backend_feeds(model)
        graph = load(path)
        session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        session.run(None, feeds)  # warm up
        theirs = median_time(lambda s=session, f=feeds: s.run(None, f), ns.repeat)
        # a pass of the node loop, as onnxruntime's run() is a pass of its session: preparing
        # the plan and reading the weights are left out on both sides
        result = run(graph, feeds, repeat=ns.repeat, warmup=1, threads=ns.threads)
        ours = result.total_time
        inside = sum(result.node_times.values())
        overhead = max(0.0, 1 - inside / result.total_time) if result.total_time else 0.0
        ref = time_reference(path, feeds, ns.reference_cap)
        ratios.append(ours / theirs)
        overheads.append(overhead)
        timing = per_node * len(result.node_times) / ours
        timings.append(timing)
        if math.isfinite(ref):
            ref_ratios.append(ref / ours)
        ref_text = "skipped" if math.isnan(ref) else (">cap" if math.isinf(ref) else f"{ref:.3f}s")
        ref_ratio = f"{ref / ours:.0f}x" if math.isfinite(ref) else "-"
        print(
            f"{name:<22} {ours:>8.3f}s {theirs:>8.3f}s {ours / theirs:>6.2f} {ref_text:>10} "
            f"{ref_ratio:>9} {100 * overhead:>6.2f}% {100 * timing:>6.2f}%",
            flush=True,
        )
    geo = math.exp(statistics.fmean(math.log(r) for r in ratios))
    print(f"geometric mean xocview / onnxruntime: {geo:.2f} (target <= 2)")
    if ref_ratios:
        print(
            f"reference evaluator / xocview: min {min(ref_ratios):.0f}x, "
            f"geometric mean {math.exp(statistics.fmean(map(math.log, ref_ratios))):.0f}x "
            "(target >= 20x)"
        )
    print(
        "share of a pass outside kernels (the loop, timing, freeing): median "
        f"{100 * statistics.median(overheads):.2f}%, max {100 * max(overheads):.2f}%"
    )
    print(
        f"per-node timing overhead ({per_node * 1e9:.0f} ns a node): max "
        f"{100 * max(timings):.2f}% of a pass (target < 5%)"
    )


if __name__ == "__main__":
    main()
