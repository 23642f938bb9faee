"""Opening a Llama-7B-shaped sharded safetensors checkpoint (two sparse bf16 shards, 13.5 GB):
xocview against the safetensors library reading the same headers, in the same run.

The anchor is what any tool must do at least: `safetensors.safe_open` on each shard and every
tensor's dtype and shape (`get_slice`), no values. xocview's open is `formats.load`: the index,
both headers, the module tree of groups. Also the first view (the headless window's layout)
and the peak memory of a fresh process that opens the checkpoint.
Targets (issue 31): open under 1 s and under 200 MB.

    python tests/perf/weights_open.py [--repeat 7] [--layers 32]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import paired_times  # tests/perf/, beside us
from weight_files import llama_shapes, sharded_safetensors  # tests/perf/, beside us

from xocview.formats import load

_PEAK = (
    "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024"
)


def anchor(index: Path) -> int:
    from safetensors import safe_open

    weight_map = json.loads(index.read_text())["weight_map"]
    seen = 0
    for shard in sorted(set(weight_map.values())):
        with safe_open(index.parent / shard, framework="numpy") as f:
            for key in f.keys():  # noqa: SIM118 (safe_open is not a dict)
                part = f.get_slice(key)
                seen += len(part.get_shape()) + len(part.get_dtype())
    return seen


def first_view(index: Path) -> object:
    from xocview.model import Hierarchy
    from xocview.ui.first_view import first_view_state

    graph = load(index)
    return first_view_state(graph, Hierarchy(graph))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--layers", type=int, default=32)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        index = sharded_safetensors(Path(tmp), llama_shapes(layers=args.layers))
        size = sum(p.stat().st_size for p in Path(tmp).glob("*.safetensors"))
        graph = load(index)
        print(
            f"checkpoint: {len(graph.tensors)} tensors, {size / 1e9:.1f} GB in 2 sparse shards; "
            f"median of {args.repeat} runs"
        )
        t_anchor, t_ours, ratio = paired_times(
            lambda: anchor(index), lambda: load(index), args.repeat
        )
        print(
            f"safetensors safe_open + get_slice: {t_anchor * 1e3:.1f} ms   xocview load: "
            f"{t_ours * 1e3:.1f} ms   ratio {ratio:.2f}"
        )
        from timing import median_time

        t_view = median_time(lambda: first_view(index), args.repeat)
        print(f"xocview load + first view (layout of what the window shows): {t_view * 1e3:.0f} ms")
        probe = f"import sys; from xocview.formats import load; load(sys.argv[1]); print({_PEAK})"
        peak = subprocess.run(
            [sys.executable, "-c", probe, str(index)], check=True, capture_output=True, text=True
        ).stdout.strip()
        base = subprocess.run(
            [sys.executable, "-c", f"import xocview.formats; print({_PEAK})"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        print(f"peak RSS opening it: {peak} MB (interpreter + imports alone: {base} MB)")


if __name__ == "__main__":
    main()
