"""XOC JSON load/save speed on a generated 100k-node graph, against bare json in the same run.

Prints the median of several runs of: json.load vs xocview's load (parse + model), and
json.dump (indent=2, as the file is written) vs xocview's save (model -> canonical text ->
atomic write). Target of the foundation issue: both ratios <= 2.

    python tests/perf/xoc_io.py [--nodes 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from timing import median_time  # tests/perf/, beside us

from xocview.formats import load
from xocview.formats.xoc import save


def generate(num_nodes: int, seed: int = 0) -> dict[str, Any]:
    """A ResNet-like chain of blocks: convs with weights, norms, activations, residual adds.

    About one node in six carries metadata (timings, a source scope), every block is a group
    with children, and shapes vary, so the file resembles an exported CNN at scale.
    """
    rng = random.Random(seed)
    tensors: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []

    def tensor(kind: str, shape: list[int], dtype: str = "float32") -> int:
        tensors.append({"id": f"t{len(tensors)}", "name": kind, "shape": shape, "dtype": dtype})
        return len(tensors) - 1

    x = tensor("input", [1, 64, 56, 56])
    inputs = [x]
    block = 0
    while len(nodes) < num_nodes - 1:
        c = rng.choice([64, 128, 256, 512])
        hw = rng.choice([7, 14, 28, 56])
        group_id = f"block{block}"
        members: list[str] = []
        skip = x
        for k in range(2):
            w = tensor("weight", [c, c, 3, 3])
            y = tensor("activation", [1, c, hw, hw])
            nid = f"b{block}_conv{k}"
            node: dict[str, Any] = {
                "id": nid,
                "name": "Conv",
                "inputs": [x, w],
                "outputs": [y],
                "attributes": {
                    "kernel_shape": [3, 3],
                    "strides": [1, 1],
                    "pads": [1, 1, 1, 1],
                    "group": 1,
                },
                "metadata": {
                    "parent_id": group_id,
                    "level": 1,
                    "performance": {"time": {"cpu": round(rng.random(), 4)}},
                },
            }
            nodes.append(node)
            members.append(nid)
            x = y
            gamma, beta = tensor("weight", [c]), tensor("weight", [c])
            y = tensor("activation", [1, c, hw, hw])
            nid = f"b{block}_bn{k}"
            nodes.append(
                {
                    "id": nid,
                    "name": "BatchNormalization",
                    "inputs": [x, gamma, beta],
                    "outputs": [y],
                    "attributes": {"epsilon": 1e-05},
                    "metadata": {"parent_id": group_id, "level": 1},
                }
            )
            members.append(nid)
            x = y
            y = tensor("activation", [1, c, hw, hw])
            nid = f"b{block}_relu{k}"
            nodes.append(
                {
                    "id": nid,
                    "name": "Relu",
                    "inputs": [x],
                    "outputs": [y],
                    "attributes": {},
                    "metadata": {"parent_id": group_id, "level": 1},
                }
            )
            members.append(nid)
            x = y
        y = tensor("activation", [1, c, hw, hw])
        nid = f"b{block}_add"
        nodes.append(
            {
                "id": nid,
                "name": "Add",
                "inputs": [x, skip],
                "outputs": [y],
                "attributes": {},
                "metadata": {"parent_id": group_id, "level": 1},
            }
        )
        members.append(nid)
        x = y
        nodes.append(
            {
                "id": group_id,
                "name": "ResidualBlock",
                "inputs": [],
                "outputs": [],
                "attributes": {},
                "metadata": {
                    "level": 0,
                    "children_ids": members,
                    "source": {"scope": f"layer{block}"},
                },
            }
        )
        block += 1
    out = tensor("output", [1, 1000])
    nodes.append(
        {
            "id": "head",
            "name": "Flatten",
            "inputs": [x],
            "outputs": [out],
            "attributes": {"axis": 1},
        }
    )
    return {
        "id": "synthetic",
        "name": f"synthetic {len(nodes)} nodes",
        "tensors": tensors,
        "nodes": nodes,
        "inputs": inputs,
        "outputs": [out],
        "metadata": {"seed": seed},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    data = generate(args.nodes)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "big.json"
        with open(src, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        graph = load(src)
        size_mb = src.stat().st_size / 1e6
        print(
            f"graph: {len(graph.nodes):,} nodes, {len(graph.tensors):,} tensors, "
            f"file {size_mb:.1f} MB; median of {args.repeat} runs"
        )

        def bare_load() -> object:
            with open(src, encoding="utf-8") as f:
                return json.load(f)

        def bare_dump(indent: int | None) -> Callable[[], None]:
            def run() -> None:
                with open(Path(tmp) / "bare.json", "w", encoding="utf-8") as f:
                    json.dump(data, f, indent=indent)

            return run

        rows = [
            (
                "load",
                median_time(bare_load, args.repeat),
                median_time(lambda: load(src), args.repeat),
            ),
            (
                "save",
                median_time(bare_dump(2), args.repeat),
                median_time(lambda: save(graph, Path(tmp) / "out.json"), args.repeat),
            ),
        ]
        compact = median_time(bare_dump(None), args.repeat)

        def bare_load_no_gc() -> object:
            gc.disable()
            try:
                return bare_load()
            finally:
                gc.enable()

        no_gc = median_time(bare_load_no_gc, args.repeat)
        print(f"{'':6}{'bare json':>12}{'xocview':>12}{'ratio':>8}")
        for name, bare, ours in rows:
            print(f"{name:6}{bare:11.3f}s{ours:11.3f}s{ours / bare:8.2f}")
        print(
            f"(json.load with the garbage collector paused, as xocview loads: {no_gc:.3f}s; "
            f"xocview load / that: {rows[0][2] / no_gc:.2f})"
        )
        print(
            f"(json.dump without indent: {compact:.3f}s; xocview save / that: "
            f"{rows[1][2] / compact:.2f})"
        )


if __name__ == "__main__":
    main()
