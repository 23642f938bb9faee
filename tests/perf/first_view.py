"""The default first view of real-shaped models: boxes drawn and the picture's aspect ratio.

Issue 16's check: `xocview render MODEL OUT.png` with no options draws the first view, whose
aspect ratio should stay within 1:6 and 6:1 with 10 to 400 boxes drawn. This script builds the
same first view (initial expansion, folded weights, the layout) for every ONNX light model and
for generated torch-style exports (scoped /layers.i/attn/... names, random weights, no
download), prints one row each and says which miss the targets. A script, not a test: the
aspect target is not met yet for long chains, and the figures are what a session reports.

    python tests/perf/first_view.py [--layers 4 12 40]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import onnx
from onnx_models import transformer_like
from PySide6.QtGui import QGuiApplication

from xocview.formats import load
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import KIND_GROUP, KIND_NODE, build_drawing
from xocview.ui.document import initial_expanded

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
ASPECT, BOXES = 6.0, (10, 400)


def first_view(path: Path) -> tuple[int, float, float, float]:
    """Boxes drawn, width, height (layout units) and seconds for the default first view."""
    start = time.perf_counter()
    graph = load(path)
    h = Hierarchy(graph)
    drawing = build_drawing(graph, initial_expanded(graph, h))
    seconds = time.perf_counter() - start
    boxes = int(((drawing.kind == KIND_NODE) | (drawing.kind == KIND_GROUP)).sum())
    return boxes, drawing.width, drawing.height, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="*", default=[4, 12, 40])
    args = parser.parse_args()
    _app = QGuiApplication(sys.argv[:1])  # fonts for label sizes
    models = sorted(LIGHT.glob("*.onnx"))
    with tempfile.TemporaryDirectory() as tmp:
        for layers in args.layers:
            path = Path(tmp) / f"torch_style_{layers}_layers.onnx"
            onnx.save(transformer_like(layers * 10), str(path))
            models.append(path)
        print(f"{'model':34} {'boxes':>6} {'width':>8} {'height':>8} {'aspect':>7} {'s':>6}  ok")
        missed = 0
        for path in models:
            boxes, w, hgt, s = first_view(path)
            aspect = max(w, hgt) / max(min(w, hgt), 1.0)
            ok = aspect <= ASPECT and BOXES[0] <= boxes <= BOXES[1]
            missed += not ok
            print(
                f"{path.stem:34} {boxes:6d} {w:8.0f} {hgt:8.0f} {aspect:7.1f} {s:6.2f}  "
                f"{'yes' if ok else 'no'}"
            )
    print(f"{missed} of {len(models)} first views miss 1:{ASPECT:g}..{ASPECT:g}:1 or {BOXES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
