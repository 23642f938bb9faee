"""xocview's layout against Graphviz dot on the same graphs, in the same run.

For every ONNX light model (one vertex per node), every corpus graph and synthetic layered
DAGs of 1k, 5k, 20k and 50k nodes (fixed seeds) it prints: xocview's time and dot's, edge
crossings of both counted by one function on the final polylines (dot's from -Tplain spline
points), total edge length and drawing size. dot is capped at --timeout seconds.

    python tests/perf/layout_vs_dot.py [--sizes 1000 5000 20000 50000] [--timeout 300]

Needs Graphviz (Debian package graphviz) for the comparison; it is a benchmark-only
dependency.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from polyline_crossings import count_crossings, total_length  # tests/perf/, beside us

from xocview.errors import XocviewError
from xocview.formats import load
from xocview.layout import layout

NODE_W, NODE_H = 80.0, 30.0
NODE_SEP, RANK_SEP = 24.0, 48.0
SHARED = Path(__file__).resolve().parents[2].parent / "shared"
Graph = tuple[str, int, np.ndarray, np.ndarray]


def synthetic(n: int, seed: int = 0, width: int = 25, extra: float = 0.35) -> Graph:
    """A layered DAG: ~``width`` nodes a layer, each fed by one or two nodes 1-3 layers up."""
    rng = np.random.default_rng(seed)
    layer = np.sort(rng.integers(0, max(1, n // width), n))
    by_layer: dict[int, list[int]] = {}
    for v, lv in enumerate(layer.tolist()):
        by_layer.setdefault(lv, []).append(v)
    src, dst = [], []
    for v, lv in enumerate(layer.tolist()):
        for _ in range(1 + int(rng.random() < extra)):
            up = lv - int(rng.integers(1, 4))
            if up in by_layer:
                cands = by_layer[up]
                src.append(cands[int(rng.integers(len(cands)))])
                dst.append(v)
    return f"synthetic {n}", n, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)


def graphs(sizes: list[int]) -> Iterator[Graph]:
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    files = sorted(light.glob("*.onnx"))
    for sub in ("xoc", "nnvm", "lightnet"):
        files += sorted((SHARED / "corpus" / sub).glob("*.json"))
    for path in files:
        try:
            g = load(path)
        except XocviewError as e:
            print(f"  (skipped {path.name}: {e})", file=sys.stderr)
            continue
        ix = g.index
        yield path.stem, len(g.nodes), ix.edge_src, ix.edge_dst
    for n in sizes:
        yield synthetic(n)


def run_dot(
    n: int, src: np.ndarray, dst: np.ndarray, timeout: float
) -> tuple[float, list[np.ndarray], float, float] | None:
    lines = [
        "digraph G {",
        f"nodesep={NODE_SEP / 72:.4f}; ranksep={RANK_SEP / 72:.4f};",
        f"node [shape=box fixedsize=true width={NODE_W / 72:.4f} "
        f'height={NODE_H / 72:.4f} label=""];',
    ]
    lines += [f"n{v};" for v in range(n)]
    lines += [f"n{a} -> n{b};" for a, b in zip(src.tolist(), dst.tolist(), strict=True)]
    lines.append("}")
    start = time.perf_counter()
    try:
        out = subprocess.run(
            ["dot", "-Tplain"],
            input="\n".join(lines),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        ).stdout
    except subprocess.TimeoutExpired:
        return None
    elapsed = time.perf_counter() - start
    polylines: list[np.ndarray] = []
    height = width = 0.0
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == "graph":
            width, height = float(parts[2]) * 72, float(parts[3]) * 72
        elif parts[0] == "edge":
            k = int(parts[3])
            ctrl = np.array(parts[4 : 4 + 2 * k], dtype=float).reshape(k, 2) * 72
            ctrl[:, 1] = height - ctrl[:, 1]
            polylines.append(_bezier_points(ctrl))
    return elapsed, polylines, width, height


def _bezier_points(ctrl: np.ndarray, samples: int = 6) -> np.ndarray:
    """Points along a piecewise cubic Bezier given by 3k+1 control points."""
    pieces = (len(ctrl) - 1) // 3
    if pieces < 1:
        return ctrl
    t = np.linspace(0, 1, samples + 1)[:-1, None]
    out = []
    for i in range(pieces):
        p0, p1, p2, p3 = ctrl[3 * i : 3 * i + 4]
        out.append(
            (1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t**2 * p2 + t**3 * p3
        )
    out.append(ctrl[-1:])
    return np.vstack(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 5000, 20000, 50000])
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--repeat", type=int, default=3, help="xocview runs per graph (median)")
    args = ap.parse_args()
    has_dot = shutil.which("dot") is not None
    if not has_dot:
        print("Graphviz dot not found: printing xocview's figures only", file=sys.stderr)
    head = (
        f"{'graph':<42}{'nodes':>7}{'ours s':>9}{'dot s':>9}{'ratio':>7}"
        f"{'cross':>8}{'dot':>8}{'length':>11}{'dot':>11}{'size':>14}{'dot':>14}"
    )
    print(head)
    totals = {"ours": 0, "dot": 0}
    for name, n, src, dst in graphs(args.sizes):
        w, h = np.full(n, NODE_W), np.full(n, NODE_H)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            res = layout(n, src, dst, w, h, node_sep=NODE_SEP, rank_sep=RANK_SEP)
            times.append(time.perf_counter() - start)
        ours = statistics.median(times)
        cross = count_crossings(res.points, src, dst)
        row = f"{name[:41]:<42}{n:>7}{ours:>9.3f}"
        dot = run_dot(n, src, dst, args.timeout) if has_dot else None
        if dot is None:
            row += f"{'timeout' if has_dot else '-':>9}{'':>7}{cross:>8}{'-':>8}"
            row += f"{total_length(res.points):>11.0f}{'-':>11}"
            row += f"{f'{res.width:.0f}x{res.height:.0f}':>14}{'-':>14}"
        else:
            dt, lines, dw, dh = dot
            dcross = count_crossings(lines, src, dst)
            if name.startswith("light_"):
                totals["ours"] += cross
                totals["dot"] += dcross
            row += f"{dt:>9.3f}{ours / dt:>7.2f}{cross:>8}{dcross:>8}"
            row += f"{total_length(res.points):>11.0f}{total_length(lines):>11.0f}"
            row += f"{f'{res.width:.0f}x{res.height:.0f}':>14}{f'{dw:.0f}x{dh:.0f}':>14}"
        print(row, flush=True)
    if has_dot:
        print(f"crossings over the light models: xocview {totals['ours']}, dot {totals['dot']}")
    relayout_after_collapse()


def relayout_after_collapse(n: int = 5000, group: int = 100) -> None:
    """Collapse ``group`` consecutive nodes of a synthetic graph into one and lay it out again
    with the previous x as the hint: time, and whether untouched nodes kept their order."""
    _, n, src, dst = synthetic(n)
    w, h = np.full(n, NODE_W), np.full(n, NODE_H)
    first = layout(n, src, dst, w, h, node_sep=NODE_SEP, rank_sep=RANK_SEP)
    lo = n // 2
    members = np.arange(lo, lo + group)
    new_id = np.arange(n)
    keep = np.ones(n, dtype=bool)
    keep[members] = False
    new_id[keep] = np.arange(int(keep.sum()))
    box = int(keep.sum())
    new_id[members] = box
    s2, d2 = new_id[src], new_id[dst]
    inside = s2 == d2
    s2, d2 = s2[~inside], d2[~inside]
    m = box + 1
    hint = np.full(m, np.nan)
    hint[new_id[keep]] = first.x[keep]
    times = []
    for _ in range(5):
        start = time.perf_counter()
        again = layout(
            m,
            s2,
            d2,
            np.full(m, NODE_W),
            np.full(m, NODE_H),
            order_hint=hint,
            node_sep=NODE_SEP,
            rank_sep=RANK_SEP,
        )
        times.append(time.perf_counter() - start)
    # relative order of untouched nodes that share a layer before and after
    old_nodes = np.flatnonzero(keep)
    moved = 0
    pairs = 0
    for r in np.unique(first.rank[old_nodes]):
        on = old_nodes[first.rank[old_nodes] == r]
        same = on[again.rank[new_id[on]] == np.bincount(again.rank[new_id[on]]).argmax()]
        if len(same) < 2:
            continue
        before = np.argsort(first.x[same])
        after = np.argsort(again.x[new_id[same]])
        pairs += 1
        moved += int(not np.array_equal(before, after))
    print(
        f"relayout after collapsing {group} of {n} nodes with the hint: "
        f"median {statistics.median(times):.3f}s; layers whose untouched nodes changed "
        f"order: {moved} of {pairs}"
    )


if __name__ == "__main__":
    main()
