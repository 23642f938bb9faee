"""The default first view of real-shaped models: boxes drawn and the picture's size.

Issue 30's check: `xocview render MODEL OUT.png` with no options draws the first view; for a
model with a hierarchy of its own (scopes, functions, groups) it must fit 1,860 x 1,140 px at
100% (a 1,300 x 800 canvas at zoom 0.7, where 10 pt titles are about 9 px tall) and show at
least 8 boxes. A flat model (no groups, or only derived sections) opens at 100% on its inputs
and is listed without a verdict. This script builds the
same first view (initial expansion, folded weights, the layout) for every ONNX light model and
for generated torch-style exports (scoped /layers.i/attn/... names, random weights, no
download), prints one row each and says which miss the targets. With ``--torch`` it adds real
exports of BERT, GPT-2, T5, Whisper and ViT by both PyTorch exporters (``torch_exports.py``, small
random models; needs ``pip install -e .[bench]``), whose rows also say how many nodes, scope
groups and weight-passing Identity nodes (TorchScript's shared weights) they hold and how
many of those Identity nodes are drawn as boxes. A script, not a test: the figures (and the
exports, which need torch) are what a session reports; tests/ui/test_first_view.py checks the
same targets on the light models.

    python tests/perf/first_view.py [--layers 4 12 40] [--torch [--torch-layers 4 12]]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import onnx
import torch_exports
from onnx_models import transformer_like
from PySide6.QtGui import QGuiApplication

from xocview.formats import load
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import KIND_NODE, build_drawing
from xocview.ui.first_view import FIT, MIN_BOXES, boxes_of, first_view_state

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


@dataclass
class View:
    """A first view's size and cost, and the graph facts that explain it."""

    boxes: int
    width: float
    height: float
    seconds: float
    nodes: int  # leaves: the operators of the file
    groups: int  # groups, derived from scoped names or the file's own
    weight_ids: int  # Identity leaves that read only weights (TorchScript's shared weights)
    weight_id_boxes: int  # how many of them the first view draws as boxes
    own_groups: bool  # a hierarchy of its own (not only derived sections)

    @property
    def ok(self) -> bool | None:
        """Fits and shows enough boxes; None for a flat graph (opens on its inputs)."""
        if not self.own_groups:
            return None
        return self.width <= FIT[0] and self.height <= FIT[1] and self.boxes >= MIN_BOXES


def first_view(path: Path) -> View:
    """The default first view of ``path``: what ``xocview render`` draws with no options."""
    start = time.perf_counter()
    graph = load(path)
    h = Hierarchy(graph)
    expanded, drawing = first_view_state(graph, h)
    if drawing is None:
        drawing = build_drawing(graph, expanded)
    seconds = time.perf_counter() - start
    boxes = boxes_of(drawing)
    weight_ids = {
        i
        for i, node in enumerate(graph.nodes)
        if node.op_type == "Identity"
        and not h.is_group[i]
        and node.inputs
        and all(graph.tensors[t].kind == "weight" for t in node.inputs)
    }
    drawn = drawing.item_node[drawing.kind == KIND_NODE].tolist()
    return View(
        boxes,
        drawing.width,
        drawing.height,
        seconds,
        int((~h.is_group).sum()),
        int(h.is_group.sum()),
        len(weight_ids),
        sum(i in weight_ids for i in drawn),
        any(
            h.is_group[i] and nd.metadata.get("derived") != "section"
            for i, nd in enumerate(graph.nodes)
        ),
    )


def torch_models(out_dir: Path, layers: list[int], hf_init: bool) -> list[Path]:
    """Export the models (or reuse the exports already in ``out_dir``)."""
    kept = sorted(out_dir.glob("*.onnx")) if out_dir.is_dir() else []
    if kept:
        return kept
    return _export(out_dir, layers, hf_init)


def _export(out_dir: Path, layers: list[int], hf_init: bool) -> list[Path]:
    """Export BERT, GPT-2, T5, Whisper and ViT by both exporters; an absent package or a
    failed export is printed, not raised, so that the other rows still come."""
    reason = torch_exports.missing()
    if reason:
        print(f"skipping torch exports: {reason}")
        return []
    torch_exports.quiet()
    start = time.perf_counter()
    done = torch_exports.make_exports(
        out_dir,
        layers,
        families=list(torch_exports.FAMILIES),
        report=lambda e: print(torch_exports.describe(e), flush=True),
        hf_init=hf_init,
    )
    print(f"torch exports: {len(done)} in {time.perf_counter() - start:.1f} s, in {out_dir}")
    return [e.path for e in done if e.path is not None]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="*", default=[4, 12, 40])
    parser.add_argument(
        "--torch", action="store_true", help="add BERT/GPT-2/T5/Whisper/ViT exports"
    )
    parser.add_argument("--torch-layers", type=int, nargs="+", default=[4, 12])
    parser.add_argument(
        "--torch-dir", type=Path, help="keep the torch exports here (default: a temporary folder)"
    )
    parser.add_argument(
        "--torch-hf-init",
        action="store_true",
        help="keep Hugging Face's init: equal biases then merge into weight Identity nodes",
    )
    args = parser.parse_args()
    _app = QGuiApplication(sys.argv[:1])  # fonts for label sizes
    models = sorted(LIGHT.glob("*.onnx"))
    with tempfile.TemporaryDirectory() as tmp:
        for layers in args.layers:
            path = Path(tmp) / f"torch_style_{layers}_layers.onnx"
            onnx.save(transformer_like(layers * 10), str(path))
            models.append(path)
        if args.torch:
            folder = args.torch_dir or Path(tmp) / "torch"
            models += torch_models(folder, args.torch_layers, args.torch_hf_init)
        print(
            f"{'model':34} {'boxes':>6} {'width':>8} {'height':>8} {'s':>6}  ok   "
            f"{'nodes':>6} {'groups':>6} {'wId':>4} {'wIdBox':>6}"
        )
        missed = judged = 0
        for path in models:
            v = first_view(path)
            judged += v.ok is not None
            missed += v.ok is False
            verdict = {True: "yes ", False: "no  ", None: "flat"}[v.ok]
            print(
                f"{path.stem:34} {v.boxes:6d} {v.width:8.0f} {v.height:8.0f} "
                f"{v.seconds:6.2f}  {verdict} {v.nodes:6d} {v.groups:6d} "
                f"{v.weight_ids:4d} {v.weight_id_boxes:6d}",
                flush=True,
            )
    print(
        f"{missed} of {judged} models with a hierarchy miss {FIT[0]:.0f} x {FIT[1]:.0f} "
        f"or {MIN_BOXES} boxes ({len(models) - judged} flat)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
