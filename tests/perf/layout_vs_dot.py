"""xocview's layout against Graphviz dot and Netron's dagre on the same graphs, in one run.

For every ONNX light model (one vertex per node), every corpus graph, synthetic layered DAGs,
chains (a chained model's spine), NN-like DAGs (``nn_like``) and the block-built DAGs of
``net_dags.py`` (``--seeds`` of them per size) of 1k, 5k, 20k and 50k nodes (fixed seeds) it
prints: xocview's time, dot's and dagre's, edge crossings of all three
counted by one function on the final polylines (dot's from -Tplain spline points), total
edge length and drawing size. dot and dagre are capped at --timeout seconds.

    python tests/perf/layout_vs_dot.py [--sizes 1000 5000 20000 50000] [--timeout 300]
        [--only chain nn-like net-dags] [--seeds 3] [--no-dot] [--no-dagre]

Needs Graphviz (Debian package graphviz) and node with the netron package (bench extra,
tests/perf/dagre_runner.py) for the comparison; both are benchmark-only dependencies.
Targets (issue 19): >= 3x faster than dagre at 5k, 20k and 50k on the chains and NN-like
DAGs, with no more crossings than dot where dot finishes and at most a fifth of dagre's;
(issue 30) on net-dags no more than dot's and at most a third of dagre's at 1k, 5k and 20k,
>= 3x faster than dagre. Graphs made with several seeds get a line of medians at the end.
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
from dagre_runner import dagre_available, run_dagre  # tests/perf/, beside us
from net_dags import net_dag
from polyline_crossings import count_crossings, total_length

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


def chain(n: int) -> Graph:
    """A chained model's spine: n nodes one after the other."""
    v = np.arange(n - 1, dtype=np.int64)
    return f"chain {n}", n, v, v + 1


def nn_like(n: int, seed: int = 0) -> Graph:
    """A network-like DAG of about ``n`` nodes: a compute spine whose forks re-merge, residual
    edges back up to 32 steps (p=0.1), 0-2 constant sources per compute node, and 3 hub
    sources (like attention masks) each feeding 0.2% of the compute nodes through long edges.
    """
    rng = np.random.default_rng(seed)
    m = max(2, (n - 3) // 2)  # compute nodes; about as many constants come on top
    src: list[int] = []
    dst: list[int] = []
    for i in range(1, m):
        src.append(i - 1)
        dst.append(i)
        if i >= 2 and rng.random() < 0.2:  # a fork of two re-merging here
            src.append(i - 2)
            dst.append(i)
        if i >= 3 and rng.random() < 0.1:  # a residual edge
            src.append(i - int(rng.integers(3, min(32, i) + 1)))
            dst.append(i)
    k = m
    for i in range(m):
        for _ in range(int(rng.integers(0, 3))):
            src.append(k)
            dst.append(i)
            k += 1
    for _hub in range(3):
        for i in rng.choice(m, size=max(1, m // 500), replace=False).tolist():
            src.append(k)
            dst.append(int(i))
        k += 1
    return f"nn-like {k}", k, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)


def graphs(sizes: list[int], seeds: int = 3) -> Iterator[Graph]:
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
    for make in (synthetic, chain, nn_like):
        for n in sizes:
            yield make(n)
    for n in sizes:  # the second, independent generator (net_dags.py), several seeds each
        for seed in range(seeds):
            yield net_dag(n, seed)


def run_dot(
    n: int, src: np.ndarray, dst: np.ndarray, timeout: float
) -> tuple[float, list[np.ndarray], float, float] | str:
    """dot's time, polylines and size; or why it has none ("timeout", "crashed")."""
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
        return "timeout"
    except subprocess.CalledProcessError:  # dot 2.42 overflows its stack on 50k chains
        return "crashed"
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
    ap.add_argument("--only", nargs="*", help="graphs whose name starts with one of these")
    ap.add_argument("--seeds", type=int, default=3, help="net-dags graphs per size")
    ap.add_argument("--no-dot", action="store_true")
    ap.add_argument("--no-dagre", action="store_true")
    args = ap.parse_args()
    has_dot = shutil.which("dot") is not None and not args.no_dot
    if shutil.which("dot") is None:
        print("Graphviz dot not found: no dot column", file=sys.stderr)
    why = dagre_available()
    has_dagre = why is None and not args.no_dagre
    if why:
        print(f"dagre not run: {why}", file=sys.stderr)
    head = (
        f"{'graph':<34}{'nodes':>7}{'ours s':>9}{'dot s':>9}{'dagre s':>9}{'dagre/us':>9}"
        f"{'cross':>8}{'dot':>8}{'dagre':>8}{'length':>11}{'dot':>11}{'size':>14}{'dot':>14}"
    )
    print(head)
    totals = {"ours": 0, "dot": 0}
    runs: dict[str, list[tuple[float, ...]]] = {}
    for name, n, src, dst in graphs(args.sizes, args.seeds):
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        w, h = np.full(n, NODE_W), np.full(n, NODE_H)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            res = layout(n, src, dst, w, h, node_sep=NODE_SEP, rank_sep=RANK_SEP)
            times.append(time.perf_counter() - start)
        ours = statistics.median(times)
        cross = count_crossings(res.points, src, dst)
        ran = run_dot(n, src, dst, args.timeout) if has_dot else "-"
        dot = None if isinstance(ran, str) else ran
        got = run_dagre(src, dst, w, h, args.timeout) if has_dagre else "-"
        dagre = None if isinstance(got, str) else got
        row = f"{name[:33]:<34}{n:>7}{ours:>9.3f}"
        row += f"{dot[0]:>9.2f}" if dot else f"{ran:>9}"
        row += f"{dagre[0]:>9.2f}{dagre[0] / ours:>9.2f}" if dagre else f"{got:>9}{'':>9}"
        dcross = count_crossings(dot[1], src, dst) if dot else None
        gcross = count_crossings(dagre[1], src, dst) if dagre else None
        row += f"{cross:>8}{dcross if dcross is not None else '-':>8}"
        row += f"{gcross if gcross is not None else '-':>8}"
        row += f"{total_length(res.points):>11.0f}"
        row += f"{total_length(dot[1]):>11.0f}" if dot else f"{'-':>11}"
        row += f"{f'{res.width:.0f}x{res.height:.0f}':>14}"
        row += f"{f'{dot[2]:.0f}x{dot[3]:.0f}':>14}" if dot else f"{'-':>14}"
        if dot and dcross is not None and name.startswith("light_"):
            totals["ours"] += cross
            totals["dot"] += dcross
        print(row, flush=True)
        nan = float("nan")
        runs.setdefault(name.split(" s")[0], []).append(
            (
                ours,
                dot[0] if dot else nan,
                dagre[0] if dagre else nan,
                cross,
                nan if dcross is None else dcross,
                nan if gcross is None else gcross,
            )
        )
    _medians(runs)
    if has_dot:
        print(f"crossings over the light models: xocview {totals['ours']}, dot {totals['dot']}")
    relayout_after_collapse()


def _medians(runs: dict[str, list[tuple[float, ...]]]) -> None:
    """One line of medians for each graph made with several seeds."""
    for name, rows in runs.items():
        if len(rows) < 2:
            continue
        ours, dot, dagre, cross, dcross, gcross = np.nanmedian(np.array(rows), axis=0).tolist()
        print(
            f"median of {len(rows)} {name}: ours {ours:.3f}s dot {dot:.2f}s dagre {dagre:.2f}s "
            f"(dagre/us {dagre / ours:.1f}); crossings ours {cross:.0f} dot {dcross:.0f} "
            f"dagre {gcross:.0f}"
        )


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
