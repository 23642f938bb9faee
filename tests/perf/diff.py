"""Diff speed: ``diff_graphs`` on generated transformer-like models of 20k and 100k nodes.

Two comparisons per size: the model against itself (every id matches), and against a copy
whose nodes lost their names (the loader numbers them by position, so every match is made by
structure) and had one Relu bypassed. Target: seconds, not minutes, at 100k nodes.

    python tests/perf/diff.py [--nodes 20000 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import onnx
from onnx_models import transformer_like  # tests/perf/, beside us
from timing import median_time  # tests/perf/, beside us

from xocview.formats import load
from xocview.model.analyses.diff import diff_graphs


def anonymous_bypassed(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` without node names and with the Relu nearest its middle bypassed."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    nodes = copy.graph.node
    for node in nodes:
        node.name = ""
    k = next(i for i in range(len(nodes) // 2, len(nodes)) if nodes[i].op_type == "Relu")
    x, y = nodes[k].input[0], nodes[k].output[0]
    del nodes[k]
    for node in nodes:
        for i, name in enumerate(node.input):
            if name == y:
                node.input[i] = x
    return copy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'nodes':>8} {'comparison':<22} {'seconds':>8}  result")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.nodes:
            model = transformer_like(n)
            base, other = Path(tmp, f"m{n}.onnx"), Path(tmp, f"m{n}_anon.onnx")
            onnx.save(model, str(base))
            onnx.save(anonymous_bypassed(model), str(other))
            old, new = load(base), load(other)
            for label, right in (("itself", load(base)), ("anonymous, bypassed", new)):
                seconds = median_time(lambda a=old, b=right: diff_graphs(a, b), args.repeat)
                diff = diff_graphs(old, right)
                result = f"{diff.matched_nodes()} matched, {len(diff.findings)} findings"
                print(f"{n:>8} {label:<22} {seconds:8.2f}  {result}")


if __name__ == "__main__":
    main()
