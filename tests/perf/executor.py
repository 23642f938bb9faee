"""The bundled executor against onnxruntime and onnx's ReferenceEvaluator, same models, same run.

For every ONNX light model (the inputs ONNX's backend test gives them: arange(n) / n), prints
the median inference time of xocview's executor, of onnxruntime (CPUExecutionProvider, default
threads and optimisations) and of `onnx.reference.ReferenceEvaluator` (one run, capped: it is
slow), the ratios, and the executor's own overhead: the share of a pass not spent inside
kernels (the node loop, per-node timing, storing and freeing), and of it the cost of timing
each node (two clock reads and a list append per node, measured here). Targets: geometric mean
of xocview / onnxruntime <= 2; >= 20x faster than the reference evaluator; per-node timing
overhead < 5%.

    python tests/perf/executor.py [--repeat 7] [--threads 1] [--reference-cap 120]
        [--models resnet50 ...] [--exports] [--blocks] [--real [--real-dir DIR]]

Both engines run with the same thread count (--threads, 1 by default: xocview's BLAS pool,
onnxruntime's intra-op pool; 0 leaves each its default). --exports adds torch exports of BERT,
GPT-2, T5 and Whisper (4 layers, both exporters, made here from small configs with random
weights: tests/perf/torch_exports.py), --blocks the small exporter models of
tests/perf/torch_blocks.py (ResNet, MobileNet, BERT, U-Net, LSTM blocks); both need the bench
extra (torch). Targets (issue 18): light models geometric mean <= 1.25x onnxruntime and none
above 2x; transformer exports <= 1.5x each; small exporter models <= 3x.

--real adds real mid-size architectures at their shipped sizes (tests/perf/real_models.py:
a YOLOv8n detector at 640x640, a PP-OCR DBNet text detector at 640x640, an SVTR recognizer at
48x320, a CRNN with bidirectional LSTMs at 32x128; random weights, BatchNorm folded, both
exporters), written to --real-dir (/tmp/realmodels) and kept there. Targets (issue 29), one
thread each: the real models' geometric mean <= 1.3x onnxruntime, and every torch-exported
transformer (--exports, T5 included, both exporters) <= 1.5x. --models none skips the light
models.

onnxruntime is a test/benchmark extra, never a run-time dependency of xocview.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from timing import back_to_back  # tests/perf/, beside us

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


def random_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Seeded inputs for an export: token ids below 50 (every small config's vocabulary is
    larger), masks of ones, floats from a normal; symbolic dimensions 2 (batch) and 7."""
    rng = np.random.default_rng(0)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = [
            d.dim_value if d.dim_value > 0 else (2 if k == 0 else 7)
            for k, d in enumerate(t.shape.dim)
        ]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if dtype.kind in "iu":
            feeds[vi.name] = (
                np.ones(shape, dtype)
                if "mask" in vi.name
                else rng.integers(0, 50, shape).astype(dtype)
            )
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def compare(
    path: Path, feeds: dict[str, np.ndarray], repeat: int, threads: int
) -> tuple[float, float]:
    """(xocview, onnxruntime) median seconds per inference, same feeds, same thread count."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return bracketed(lambda: session.run(None, feeds), load(path), feeds, repeat, threads)


def bracketed(
    theirs: Callable[[], object],
    graph: Any,
    feeds: dict[str, np.ndarray],
    repeat: int,
    threads: int,
) -> tuple[float, float]:
    """(xocview, onnxruntime) median seconds per pass: onnxruntime's passes back to back
    before and after ours (both warmed up, the collector paused on both sides), so that a
    drift in the machine's speed falls on both."""
    theirs()
    before = back_to_back(theirs, repeat)
    ours = run(graph, feeds, repeat=repeat, warmup=1, threads=threads).total_time
    after = back_to_back(theirs, repeat)
    return ours, statistics.median(before + after)


def torch_section(
    title: str,
    paths: list[Path],
    repeat: int,
    threads: int,
    target: float,
    feeds_of: Callable[[Path], dict[str, np.ndarray]] | None = None,
    target_is: str = "each",
) -> None:
    """One row per model (fed by ``feeds_of``, else random inputs), then the worst ratio and
    the geometric mean; ``target`` bounds ``target_is`` ("each" or "geometric mean")."""
    print(f"\n{title} (target <= {target:g}x {target_is})")
    print(f"{'model':<28} {'xocview':>10} {'ort':>10} {'ratio':>6}")
    ratios = []
    for path in paths:
        model = onnx.load(path, load_external_data=False)
        feeds = feeds_of(path) if feeds_of else random_feeds(model)
        ours, theirs = compare(path, feeds, repeat, threads)
        ratios.append(ours / theirs)
        print(
            f"{path.stem:<28} {ours * 1e3:>8.3f}ms {theirs * 1e3:>8.3f}ms {ours / theirs:>6.2f}",
            flush=True,
        )
    if ratios:
        geo = math.exp(statistics.fmean(math.log(r) for r in ratios))
        print(f"worst {max(ratios):.2f}x, geometric mean {geo:.2f}x")


def node_times_of_cli_run(
    path: Path, feeds: dict[str, np.ndarray], threads: int, tmp: Path
) -> dict[str, float]:
    """Node id -> ms of one `xocview run` (a process of its own, as a user runs it)."""
    args = [sys.executable, "-m", "xocview", "run", str(path), "--repeat", "7", "--top", "0"]
    for k, (name, value) in enumerate(feeds.items()):
        np.save(tmp / f"feed{k}.npy", value)
        args += ["--input", f"{name}={tmp / f'feed{k}.npy'}"]
    out = tmp / "profile.json"
    args += ["--threads", str(threads), "--profile", str(out)]
    subprocess.run(args, check=True, capture_output=True, text=True)
    return {n["id"]: n["ms"] for n in json.loads(out.read_text())["nodes"]}


def agreement(
    path: Path, feeds: dict[str, np.ndarray], threads: int, tmp: Path
) -> tuple[int, int, float, str, float, int]:
    """Two `xocview run`s of one model: (nodes above 1% of the time, how many of them differ
    by more than 15%, the worst ratio, its node, the ratio of the two totals, and how many
    differ by more than 15% in their share of the total: a drift of the whole machine
    between the runs moves every node alike and leaves the shares)."""
    first = node_times_of_cli_run(path, feeds, threads, tmp)
    second = node_times_of_cli_run(path, feeds, threads, tmp)
    total1, total2 = sum(first.values()) or 1.0, sum(second.values()) or 1.0
    big = [k for k in first if max(first[k] / total1, second.get(k, 0.0) / total2) >= 0.01]

    def ratio(a: float, b: float) -> float:
        return max(a, b) / max(min(a, b), 1e-12)

    ratios = {k: ratio(first[k], second[k]) for k in big}
    shares = {k: ratio(first[k] / total1, second[k] / total2) for k in big}
    worst = max(ratios, key=ratios.__getitem__, default="")
    return (
        len(big),
        sum(r > 1.15 for r in ratios.values()),
        ratios.get(worst, 1.0),
        worst,
        ratio(total1, total2),
        sum(r > 1.15 for r in shares.values()),
    )


def agreement_section(
    paths: list[Path],
    threads: int,
    feeds_of: Callable[[Path], dict[str, np.ndarray]],
    tmp: Path,
) -> None:
    """Per model, how far two runs of `xocview run` disagree on the nodes that matter."""
    print("\ntwo runs of `xocview run` (7 passes each), nodes above 1% of the time")
    print(
        f"{'model':<28} {'nodes':>6} {'>15%':>5} {'worst':>7} {'totals':>7} "
        f"{'shares>15%':>11}  node"
    )
    for path in paths:
        n, bad, worst, node, totals, shares = agreement(path, feeds_of(path), threads, tmp)
        print(
            f"{path.stem:<28} {n:>6} {bad:>5} {worst:>6.2f}x {totals:>6.2f}x {shares:>11}  "
            f"{node[:40]}",
            flush=True,
        )


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


def light_summary(
    ratios: list[float],
    ref_ratios: list[float],
    overheads: list[float],
    timings: list[float],
    per_node: float,
) -> None:
    """The light models' ratios against their targets."""
    geo = math.exp(statistics.fmean(math.log(r) for r in ratios))
    print(
        f"geometric mean xocview / onnxruntime: {geo:.2f}, worst {max(ratios):.2f} "
        "(targets <= 1.25 and <= 2)"
    )
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument(
        "--reference-cap",
        type=float,
        default=120.0,
        help="seconds; 0 skips the reference evaluator",
    )
    ap.add_argument("--models", nargs="*", help="light model names (default: all)")
    ap.add_argument("--exports", action="store_true", help="add BERT/GPT-2/T5/Whisper exports")
    ap.add_argument("--blocks", action="store_true", help="add the small exporter models")
    ap.add_argument(
        "--real",
        action="store_true",
        help="add the real mid-size models (YOLOv8n, DBNet, SVTR, CRNN; both exporters)",
    )
    ap.add_argument(
        "--real-dir",
        type=Path,
        default=Path("/tmp/realmodels"),
        help="where --real writes its exports (kept, to rerun them with `xocview run`)",
    )
    ap.add_argument(
        "--sizes",
        nargs="+",
        default=["tiny", "base"],
        help="export sizes (tests/perf/torch_exports.py SIZES): tiny shows the cost per node, "
        "base the kernels' speed at the issue's model sizes",
    )
    ap.add_argument(
        "--agreement",
        action="store_true",
        help="also run `xocview run` twice per model and compare the node times (target: "
        "within 15%% for every node above 1%% of the total)",
    )
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
    if names:
        print(header)
    ratios, ref_ratios, overheads, timings = [], [], [], []
    for name in names:
        path = LIGHT / f"{name}.onnx"
        model = onnx.load(path)
        feeds = backend_feeds(model)
        graph = load(path)
        session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        session.run(None, feeds)  # warm up
        # a pass of the node loop, as onnxruntime's run() is a pass of its session: preparing
        # the plan and reading the weights are left out on both sides
        before = back_to_back(lambda s=session, f=feeds: s.run(None, f), ns.repeat)
        result = run(graph, feeds, repeat=ns.repeat, warmup=1, threads=ns.threads)
        after = back_to_back(lambda s=session, f=feeds: s.run(None, f), ns.repeat)
        theirs = statistics.median(before + after)
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
    if ns.agreement:
        with tempfile.TemporaryDirectory() as tmp:
            agreement_section(
                [LIGHT / f"{n}.onnx" for n in names],
                ns.threads,
                lambda p: backend_feeds(onnx.load(p)),
                Path(tmp),
            )
    if ratios:
        light_summary(ratios, ref_ratios, overheads, timings, per_node)
    if ns.exports or ns.blocks:
        with tempfile.TemporaryDirectory() as tmp:
            if ns.exports:
                from torch_exports import FAMILIES, build, make_exports  # tests/perf/

                for size in ns.sizes:
                    made = {
                        e.path: e
                        for e in make_exports(
                            Path(tmp) / size, layers=(4,), families=tuple(FAMILIES), size=size
                        )
                    }
                    paths = [p for p in made if p is not None]

                    def example_inputs(
                        path: Path, made: dict[Path | None, Any] = made
                    ) -> dict[str, np.ndarray]:
                        """The inputs the model was exported with, as a user's trace would be."""
                        e = made[path]
                        model = onnx.load(path, load_external_data=False)
                        names = {i.name for i in model.graph.input}
                        given = build(e.family, e.layers, size=e.size)[1]
                        return {k: v.numpy() for k, v in given.items() if k in names}

                    torch_section(
                        f"torch exports, 4 layers, {size} size (their example inputs)",
                        paths,
                        ns.repeat,
                        ns.threads,
                        1.5,
                        example_inputs,
                    )
                    if ns.agreement:
                        agreement_section(paths, ns.threads, example_inputs, Path(tmp))
            if ns.blocks:
                from torch_blocks import export_blocks  # tests/perf/, beside us

                paths = export_blocks(Path(tmp) / "blocks")
                torch_section("small exporter models", paths, ns.repeat, ns.threads, 3.0)
    if ns.real:
        real_section(ns.real_dir, ns.repeat, ns.threads)


def real_section(out_dir: Path, repeat: int, threads: int) -> None:
    """The real mid-size models of tests/perf/real_models.py, exported (kept in ``out_dir``
    for reruns) and timed: issue 29's geometric mean target."""
    from real_models import export_real, feeds_of, parameters  # tests/perf/, beside us

    paths = export_real(out_dir)
    for path in paths:
        print(f"{path}  ({parameters(path.stem.rsplit('_', 1)[0]) / 1e6:.2f}M parameters)")
    torch_section(
        "real mid-size models, random weights (their example inputs)",
        paths,
        repeat,
        threads,
        1.3,
        lambda p: feeds_of(p.stem.rsplit("_", 1)[0]),
        "geometric mean",
    )


if __name__ == "__main__":
    main()
