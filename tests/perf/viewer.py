"""Viewer speed, offscreen: time to first paint and frame times, for real and generated graphs.

First paint = load + layout + document + view + one frame rendered into an image. Frames are
timed at fit-to-window and at 100% zoom (the middle of the graph). Targets of the viewer
issue: resnet50 first paint <= 1 s, 50k nodes <= 10 s, any frame <= 30 ms; the 50k graph's
peak RSS is printed as well.

With --huge, the hierarchy-first figures (issue 19) in a real main window, offscreen: open to
first paint, Expand All, one collapse and one expand inside the expanded graph (at once, while
the labels of the drawing before are still being placed, and again once they are), each with the
longest the GUI thread went without serving its event loop (a 5 ms timer's largest gap), and
`xocview render` of the first view and with --expand-all, for a GPT-2 torch export of many
small layers (made here when the bench extra is installed; tests/perf/torch_exports.py), a
torch-style ONNX graph of 100k nodes (tests/perf/onnx_models.py) and a flat 100k-node graph.
Targets: open <= 3 s, render <= 5 s, Expand All <= 10 s (render --expand-all <= 20 s), each
expand/collapse <= 0.3 s, the GUI thread never stalled > 100 ms.

    python tests/perf/viewer.py [--sizes 5000 20000 50000] [--repeat 5]
    python tests/perf/viewer.py --huge [--gpt2-layers 272] [--huge-nodes 100000]
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

from collections.abc import Callable
from functools import partial

import onnx
from layout_vs_dot import synthetic
from PySide6.QtCore import QCoreApplication, QEventLoop, QPointF, QTimer
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


class StallMeter:
    """The longest gap between ticks of a 5 ms timer: how long the GUI thread was away."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.worst = 0.0
        self._last = 0.0

    def _tick(self) -> None:
        now = time.perf_counter()
        self.worst = max(self.worst, now - self._last)
        self._last = now

    def __enter__(self) -> StallMeter:
        self.worst, self._last = 0.0, time.perf_counter()
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._tick()
        self.timer.stop()


def wait_for(app: QCoreApplication, done: Callable[[], bool], limit: float = 900.0) -> float:
    """Run the event loop until ``done()``: asleep between events, as a real event loop is
    (a loop that spins would take the GIL from the workers it waits for)."""
    start = time.perf_counter()
    wake = QTimer()  # a tick now and then, so that ``done`` is asked even with no events
    wake.start(20)
    while not done():
        app.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
        if time.perf_counter() - start > limit:
            raise TimeoutError(f"not done after {limit:.0f} s")
    wake.stop()
    return time.perf_counter() - start


def huge_figures(app: QCoreApplication, path: Path) -> None:
    """Open, Expand All, collapse and expand one group, in a main window; then render."""
    from PySide6.QtCore import QSettings

    from xocview.ui.main_window import MainWindow

    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "s.ini"), QSettings.Format.IniFormat)
        window = MainWindow(settings)
        window.resize(1600, 1000)
        window.show()
        rows = []
        with StallMeter() as stall:
            start = time.perf_counter()
            window.open_path(path)
            wait_for(app, lambda: window.tabs.count() == 1)
            view = window.tabs.currentWidget()
            assert isinstance(view, GraphView)
            view.viewport().grab()
            rows.append(("open to first paint", time.perf_counter() - start, stall.worst))
        doc = view.doc
        boxes = doc.drawing.count
        changes: list[int] = []
        doc.drawing_changed.connect(lambda: changes.append(1))
        for name, act in (
            ("Expand All", lambda: window.doc_do("set_level", None)),
            ("collapse one group", lambda: doc.toggle(_middle_group(doc))),
            ("expand it again", lambda: doc.toggle(_middle_group(doc))),
            ("collapse, settled", lambda: doc.toggle(_middle_group(doc))),
            ("expand, settled", lambda: doc.toggle(_middle_group(doc))),
        ):
            if "settled" in name:  # the labels of the last drawing placed: nothing else runs
                wait_for(app, lambda: view.labels.idle, limit=120.0)
            seen = len(changes)
            with StallMeter() as stall:
                start = time.perf_counter()
                act()
                wait_for(app, partial(_changed, changes, seen, doc))
                view.viewport().grab()
                rows.append((name, time.perf_counter() - start, stall.worst))
        print(
            f"  {len(doc.graph.nodes)} nodes; first view {boxes} boxes, all open "
            f"{doc.drawing.count} boxes, {len(doc.drawing.frames)} frames"
        )
        for name, seconds, worst in rows:
            away = f"GUI thread away at most {worst * 1000:>6.0f} ms"
            print(f"  {name:<24}{seconds:>8.2f} s   {away}")
        wait_for(app, lambda: view.labels.idle, limit=120.0)  # no placement left running
        window.close()
        for extra in ([], ["--expand-all"]):
            out = Path(tmp) / "out.png"
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "xocview", "render", *extra, str(path), str(out)],
                capture_output=True,
                text=True,
            )
            took = time.perf_counter() - start
            what = done.stdout.strip() or done.stderr.strip()[-200:]
            print(f"  render {' '.join(extra) or '(first view)':<16}{took:>8.2f} s   {what}")


def _changed(changes: list[int], seen: int, doc: Document) -> bool:
    return len(changes) > seen and not doc.busy


def _middle_group(doc: Document) -> int:
    """The open group nearest the middle of the graph's order that holds other groups."""
    h = doc.hierarchy
    groups = [
        i
        for i in range(len(doc.graph.nodes))
        if h.is_group[i] and h.depth[i] == 1 and h.child_count[i] > 1
    ] or [i for i in range(len(doc.graph.nodes)) if h.is_group[i]]
    return groups[len(groups) // 2]


def huge_inputs(folder: Path, gpt2_layers: int, nodes: int) -> list[Path]:
    out = []
    sys.path.insert(0, str(Path(__file__).parent))
    import torch_exports  # tests/perf/, beside us

    reason = torch_exports.missing()
    if reason:
        print(f"GPT-2 export skipped: {reason}")
    else:
        export = torch_exports.export_one("gpt2", gpt2_layers, "ts", folder)
        out.append(export.path)
    from onnx_models import transformer_like

    torch_like = folder / f"torch_like_{nodes}.onnx"
    onnx.save(transformer_like(nodes), torch_like)
    out.append(torch_like)
    out.append(generated(nodes, folder))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[5000, 20000, 50000])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--huge", action="store_true", help="the hierarchy-first figures")
    ap.add_argument("--gpt2-layers", type=int, default=272)
    ap.add_argument("--huge-nodes", type=int, default=100_000)
    ap.add_argument("--huge-files", type=Path, nargs="*", help="--huge on these files only")
    args = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    if args.huge_files:
        for path in args.huge_files:
            print(path.name, flush=True)
            huge_figures(app, path)
        return
    if args.huge:
        with tempfile.TemporaryDirectory() as tmp:
            for path in huge_inputs(Path(tmp), args.gpt2_layers, args.huge_nodes):
                print(path.name, flush=True)
                huge_figures(app, path)
        return
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
