"""Viewer speed, offscreen: time to first paint and frame times, for real and generated graphs.

First paint = load + layout + document + view + one frame rendered into an image. Frames are
timed at fit-to-window and at 100% zoom (the middle of the graph). Targets of the viewer
issue: resnet50 first paint <= 1 s, 50k nodes <= 10 s, any frame <= 30 ms; the 50k graph's
peak RSS is printed as well.

    python tests/perf/viewer.py [--sizes 5000 20000 50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import onnx
from layout_vs_dot import synthetic
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

from xocview.formats import load
from xocview.formats.xoc import save
from xocview.model import Graph, Hierarchy, Node, Tensor
from xocview.ui.canvas.drawing import build_drawing
from xocview.ui.canvas.view import GraphView
from xocview.ui.document import Document, initial_expanded

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
OPS = ["Conv", "Relu", "Add", "BatchNormalization", "MaxPool", "Concat", "MatMul", "Gelu"]


def generated(n: int, folder: Path) -> Path:
    """A flat XOC graph of ``n`` nodes on the synthetic layered DAG of the layout benchmark."""
    _, n, src, dst = synthetic(n)
    tensors = [Tensor("x", "input", [1, 64, 56, 56], "float32")]
    tensors += [Tensor(f"t{v}", "activation", [1, 64, 56, 56], "float32") for v in range(n)]
    ins: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        ins[b].append(a + 1)
    nodes = [Node(f"n{v}", OPS[v % len(OPS)], ins[v] or [0], [v + 1]) for v in range(n)]
    path = folder / f"generated_{n}.json"
    save(Graph(f"gen{n}", f"generated {n}", tensors, nodes, [0], [n]), path)
    return path


def measure(path: Path, repeat: int) -> tuple[int, float, float, float]:
    """Items drawn, first paint, median frame at fit, median frame at 100%."""
    start = time.perf_counter()
    graph = load(path)
    drawing = build_drawing(graph, initial_expanded(graph, Hierarchy(graph)))
    doc = Document(graph, path, drawing=drawing)
    view = GraphView(doc)
    view.resize(1600, 1000)
    view.show()
    view.fit()
    view.viewport().grab()
    first = time.perf_counter() - start
    fit_times = []
    for _ in range(repeat):
        t = time.perf_counter()
        view.viewport().grab()
        fit_times.append(time.perf_counter() - t)
    view.zoom_to(1.0)
    view.centerOn(QPointF(drawing.width / 2, drawing.height / 2))
    zoom_times = []
    for _ in range(repeat):
        t = time.perf_counter()
        view.viewport().grab()
        zoom_times.append(time.perf_counter() - t)
    view.close()
    return drawing.count, first, statistics.median(fit_times), statistics.median(zoom_times)


_PEAK = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"


def peak_rss(path: Path) -> int:
    """Peak RSS (MB) of a fresh process that opens ``path`` and paints one frame."""
    code = (
        "import os, sys; os.environ.setdefault('QT_QPA_PLATFORM', 'offscreen'); "
        f"sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "from PySide6.QtWidgets import QApplication; app = QApplication([]); "
        "import viewer; from pathlib import Path; viewer.measure(Path(sys.argv[1]), 1); "
        f"print({_PEAK} // 1024)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent,
    )
    return int(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[5000, 20000, 50000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    files = sorted(light.glob("*.onnx"))
    for rel in (
        "xoc/xoc_mobilenetv2.json",
        "nnvm/mxnet12_resnet269_v2-symbol.json",
        "lightnet/lightnet_yolov3_ir.json",
    ):
        if (SHARED / "corpus" / rel).exists():
            files.append(SHARED / "corpus" / rel)
    print(f"{'graph':<40}{'boxes':>8}{'first paint':>13}{'frame fit':>11}{'frame 100%':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        files += [generated(n, Path(tmp)) for n in args.sizes]
        for path in files:
            count, first, fit, zoom = measure(path, args.repeat)
            print(
                f"{path.stem[:39]:<40}{count:>8}{first:>12.2f}s{fit * 1000:>9.1f}ms"
                f"{zoom * 1000:>10.1f}ms",
                flush=True,
            )
        if args.sizes:
            big = Path(tmp) / f"generated_{max(args.sizes)}.json"
            print(f"peak RSS opening {big.stem}: {peak_rss(big)} MB")
    del app


if __name__ == "__main__":
    main()
