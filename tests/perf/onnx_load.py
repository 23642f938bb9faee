"""ONNX load speed and memory: xocview against onnx's own load + shape inference, same run.

1. A generated 50k-node model: median time of `onnx.load` + `onnx.shape_inference.
   infer_shapes` (the anchor) and of `xocview.formats.load` (parse, types, model, groups),
   run in alternation. Target: xocview <= 2x the anchor.
2. A model with 1 GB of external-data weights: peak RSS of a fresh process that opens it with
   xocview (weights are not read). Target: under 300 MB.

    python tests/perf/onnx_load.py [--nodes 50000] [--repeat 5] [--external-gb 1]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
from onnx_models import transformer_like, with_big_external_weights  # tests/perf/, beside us
from timing import paired_times  # tests/perf/, beside us

from xocview.formats import load


def anchor(path: Path) -> object:
    model = onnx.load(str(path))
    return onnx.shape_inference.infer_shapes(model)


# VmHWM, not ru_maxrss: the latter carries the parent's peak across fork + exec on Linux.
_PEAK = (
    "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024"
)
_RSS_PROBE = f"""
import sys
from xocview.formats import load
g = load(sys.argv[1])
n = sum(1 for t in g.tensors if t.kind == "weight")
print({_PEAK}, n)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--external-gb", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.onnx"
        onnx.save(transformer_like(args.nodes), str(path))
        g = load(path)
        print(
            f"model: {len(g.nodes):,} nodes in xocview ({args.nodes:,} ONNX nodes + scope "
            f"groups), {len(g.tensors):,} tensors, {path.stat().st_size / 1e6:.1f} MB; "
            f"median of {args.repeat} runs"
        )
        t_anchor, t_ours, ratio = paired_times(
            lambda: anchor(path), lambda: load(path), args.repeat
        )
        print(
            f"onnx.load + infer_shapes: {t_anchor:.3f}s   xocview load: {t_ours:.3f}s   "
            f"ratio {t_ours / t_anchor:.2f} (median of the paired ratios {ratio:.2f})"
        )

        if args.external_gb > 0:
            folder = Path(tmp) / "ext"
            folder.mkdir()
            model = with_big_external_weights(folder, int(args.external_gb * (1 << 30)))
            size = (folder / "weights.bin").stat().st_size
            out = subprocess.run(
                [sys.executable, "-c", _RSS_PROBE, str(model)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            baseline = subprocess.run(
                [sys.executable, "-c", f"import xocview.formats; print({_PEAK})"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            print(
                f"external data {size / (1 << 30):.2f} GiB in {out[1]} weights: peak RSS "
                f"{out[0]} MB opening it (interpreter + imports alone: {baseline} MB)"
            )


if __name__ == "__main__":
    main()
