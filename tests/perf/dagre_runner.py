"""Netron's dagre, run with node on the same graph as xocview's layout, for the benchmarks.

Netron lays graphs out with its own copy of dagre (``dagre.js`` in the ``netron`` PyPI
package, in the bench extra) and the settings of its ``grapher.js``: nodesep and ranksep 20,
longest-path ranking above 3,000 nodes (network simplex below). The layout is timed inside
node around ``dagre.layout`` alone, as xocview's is timed around ``layout`` alone; the edges'
points come back for the crossing count.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["dagre_available", "run_dagre"]

_RUNNER = """
import fs from 'fs';
import { layout } from './dagre.mjs';
const [input, output] = process.argv.slice(2);
const g = JSON.parse(fs.readFileSync(input, 'utf8'));
const nodes = g.w.map((w, i) => ({ v: `n${i}`, width: w, height: g.h[i] }));
const edges = g.src.map((s, k) => ({
    v: `n${s}`, w: `n${g.dst[k]}`, minlen: 1, weight: 1, width: 0, height: 0,
    labeloffset: 10, labelpos: 'r' }));
const settings = { nodesep: 20, ranksep: 20 };
if (nodes.length > 3000) {
    settings.ranker = 'longest-path';  // as Netron's grapher.js does
}
const start = performance.now();
layout(nodes, edges, settings, {});
const ms = performance.now() - start;
let width = 0;
let height = 0;
for (const n of nodes) {
    width = Math.max(width, n.x + n.width / 2);
    height = Math.max(height, n.y + n.height / 2);
}
const points = edges.map((e) => (e.points || []).map((p) => [p.x, p.y]));
fs.writeFileSync(output, JSON.stringify({ ms, width, height, points }));
"""


def _dagre_js() -> Path | None:
    spec = importlib.util.find_spec("netron")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "dagre.js"
    return path if path.exists() else None


def dagre_available() -> str | None:
    """None when dagre can run here, else why not."""
    if shutil.which("node") is None:
        return "node not found"
    if _dagre_js() is None:
        return "the netron package (bench extra) is not installed"
    return None


def run_dagre(
    src: np.ndarray, dst: np.ndarray, w: np.ndarray, h: np.ndarray, timeout: float
) -> tuple[float, list[np.ndarray], float, float] | str:
    """Seconds inside dagre.layout, the edges' polylines and the drawing's size; or why
    there are none ("timeout", or "crashed" with node's last words)."""
    js = _dagre_js()
    assert js is not None, dagre_available()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(js, folder / "dagre.mjs")  # an ES module: node wants the .mjs name
        (folder / "run.mjs").write_text(_RUNNER)
        graph = {"w": w.tolist(), "h": h.tolist(), "src": src.tolist(), "dst": dst.tolist()}
        (folder / "in.json").write_text(json.dumps(graph))
        try:
            subprocess.run(
                ["node", "--max-old-space-size=16384", "run.mjs", "in.json", "out.json"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
            )
        except subprocess.TimeoutExpired:
            return "timeout"
        except subprocess.CalledProcessError as e:  # nn-like 50k: out of memory at 8 GB
            last = (e.stderr or "").strip().splitlines()[-1:] or [f"exit {e.returncode}"]
            print(f"  dagre crashed: {last[0][:160]}", file=sys.stderr)
            return "crashed"
        out = json.loads((folder / "out.json").read_text())
    lines = [np.array(p, dtype=float).reshape(-1, 2) for p in out["points"]]
    return out["ms"] / 1000, lines, float(out["width"]), float(out["height"])
