"""Redraw the README screenshots from the window as a newcomer sees it.

Each shot opens a file in a fresh main window (offscreen, default settings), optionally
selects a node or runs the graph, and grabs the window, so the pictures show the real first
view, not a staged one. Files outside the repository (the ONNX light models that ship with
the onnx package, the shared corpus) are read where they are; a missing one is skipped.

    python resources/make_screenshots.py [--out resources/screenshots] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import onnx
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from xocview.ui.main_window import MainWindow
from xocview.ui.run_dialog import RunOptions

HERE = Path(__file__).resolve().parent
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
CORPUS = HERE.parent.parent / "shared" / "corpus"
SIZE = (1400, 900)


def _settle(app: QApplication, until: Callable[[], bool], seconds: float = 120.0) -> None:
    for _ in range(int(seconds / 0.025)):
        app.processEvents()
        if until():
            break
        app.thread().msleep(25)
    for _ in range(10):
        app.processEvents()


def shoot(
    app: QApplication,
    source: Path,
    target: Path,
    *,
    select: str | None = None,
    run: bool = False,
    shapes: dict[str, list[int]] | None = None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = QSettings(str(Path(tmp) / "fresh.ini"), QSettings.Format.IniFormat)
        window = MainWindow(settings)
        window.resize(*SIZE)
        window.show()
        window.open_path(source)  # as File > Open does: in a worker, format named
        _settle(app, lambda: window.tabs.count() > 0)
        doc = window.tabs.currentWidget().doc  # type: ignore[attr-defined]
        _settle(app, lambda: not doc.busy)
        if run:
            options = RunOptions(shapes=shapes or {}, repeat=3, warmup=1)
            window.runner.ask = lambda parent, doc: options
            if window.runner.start() is not None:
                _settle(app, lambda: window.runner.job is None)
        if select is not None:
            node = next(i for i, n in enumerate(doc.graph.nodes) if n.op_type == select)
            doc.select_node(node)
        _settle(app, lambda: not doc.busy)
        window.grab().save(str(target))
        window.hide()  # not close(): a run left unsaved times, and close() would ask
        window.deleteLater()
        print(f"wrote {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "screenshots")
    parser.add_argument("--only", nargs="*")
    parser.add_argument(
        "--transformer",
        type=Path,
        help="a torch export to show (tests/perf/torch_exports.py makes them)",
    )
    args = parser.parse_args()
    faulthandler.dump_traceback_later(90, exit=True)
    app = QApplication(sys.argv[:1])
    shots = {
        "inception_v1_first_view": (LIGHT / "light_inception_v1.onnx", {"select": "Conv"}),
        "mxnet_resnet18_first_view": (CORPUS / "nnvm" / "mxnet12_resnet18-priv-symbol.json", {}),
        "transformer_first_view": (args.transformer or HERE / "none", {}),
        "resnet50_heat_profile": (LIGHT / "light_resnet50.onnx", {"run": True}),
        "mtcnn_shapes_after_run": (
            CORPUS / "nnvm" / "mxnet14_mtcnn_det1-symbol.json",
            {"run": True, "select": "Conv", "shapes": {"data": [1, 3, 48, 48]}},
        ),
    }
    for name, (source, options) in shots.items():
        if args.only and name not in args.only:
            continue
        if not source.is_file():
            print(f"skipped {name}: {source} not found")
            continue
        shoot(app, source, args.out / f"{name}.png", **options)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
