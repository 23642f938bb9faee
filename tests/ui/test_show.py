"""``show_graph`` and ``show_compare`` from Python into the running window (ui/show_client.py
and ui/show_host.py): named tabs replaced in place, watched files, heat colours, a new window
when none runs."""

from __future__ import annotations

import math
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from tests.conftest import REPO
from xocview.cli.app import _parser
from xocview.errors import XocviewError
from xocview.formats import load, save
from xocview.model import Graph, Hierarchy
from xocview.ui import show_client
from xocview.ui.app import attach
from xocview.ui.canvas.view import GraphView
from xocview.ui.compare import CompareTab
from xocview.ui.show_client import (
    preferred_colouring,
    request_from_args,
    show_compare,
    show_dir,
    show_graph,
)

TINY = REPO / "sample_graphs" / "tiny_transformer.json"


@pytest.fixture
def name(monkeypatch, tmp_path: Path) -> str:  # type: ignore[no-untyped-def]
    """A server name of this test alone, and a temp folder of its own for the shown files."""
    unique = f"xocview-test-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("XOCVIEW_INSTANCE", unique)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(show_client, "_spawned_at", -math.inf)
    return unique


@pytest.fixture
def served(qtbot, window, name, monkeypatch):  # type: ignore[no-untyped-def]
    """The window serving ``name``; a window started instead would be a failure."""
    attach(window, QApplication.instance(), name)
    monkeypatch.setattr(
        show_client.subprocess, "Popen", lambda *a, **k: pytest.fail("a window was started")
    )
    return window


def call(qtbot, fn: Callable[[], None]) -> None:  # type: ignore[no-untyped-def]
    """``fn`` in a thread while this one serves the window: the client waits for its answer."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as e:  # re-raised below, in the test
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    qtbot.waitUntil(lambda: not thread.is_alive(), timeout=15000)
    if errors:
        raise errors[0]


def tiny(note: str = "") -> Graph:
    """The sample transformer without the times it stores, and a ``note`` on its last node."""
    graph = load(TINY)
    for node in graph.nodes:
        node.metadata.pop("performance", None)
    if note:
        graph.nodes[-1].metadata["note"] = note
    return graph


def graph_views(window) -> list[GraphView]:  # type: ignore[no-untyped-def]
    views = (window.tabs.widget(i) for i in range(window.tabs.count()))
    return [v for v in views if isinstance(v, GraphView)]


def settled(qtbot, window, count: int) -> GraphView:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: len(graph_views(window)) == count, timeout=20000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    qtbot.waitUntil(lambda: not view.doc.busy, timeout=20000)
    return view


def test_a_graph_shown_from_python_opens_in_a_tab_and_its_file_goes(qtbot, served) -> None:  # type: ignore[no-untyped-def]
    call(qtbot, lambda: show_graph(tiny(), name="tiny"))

    view = settled(qtbot, served, 1)
    assert len(view.doc.graph.nodes) == len(tiny().nodes)
    assert view.doc.path is None  # Save asks where: the temp file is no place to keep it
    assert served.tabs.tabText(0) == "tiny transformer encoder"
    qtbot.waitUntil(lambda: not any(show_dir().iterdir()), timeout=5000)  # read, then deleted


def test_the_same_name_replaces_its_tab_keeping_open_groups_and_zoom(qtbot, served) -> None:  # type: ignore[no-untyped-def]
    call(qtbot, lambda: show_graph(tiny(), name="other"))
    settled(qtbot, served, 1)
    call(qtbot, lambda: show_graph(tiny(), name="m"))
    view = settled(qtbot, served, 2)
    graph = view.doc.graph
    attention = graph.index.node_position("l0.attention")
    assert "l0.attention" not in view.doc.expanded
    view.toggle_group(attention)
    qtbot.waitUntil(lambda: "l0.attention" in view.doc.expanded and not view.doc.busy)
    view.zoom_to(0.7)

    call(qtbot, lambda: show_graph(tiny("changed"), name="m"))

    qtbot.waitUntil(lambda: served.tabs.currentWidget() is not view, timeout=20000)
    again = settled(qtbot, served, 2)
    assert served.tabs.indexOf(again) == 1  # the replaced tab's place
    assert again.doc.graph.nodes[-1].metadata["note"] == "changed"
    assert "l0.attention" in again.doc.expanded
    assert again.scale_factor == pytest.approx(0.7)


def test_a_watched_file_reloads_when_rewritten_and_keeps_the_old_graph_when_broken(
    qtbot, served, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "watched.json"
    save(tiny(), path)
    call(qtbot, lambda: show_graph(load(path), path=path, watch=True))
    view = settled(qtbot, served, 1)
    assert view.doc.path == path.absolute()  # the file itself, not a copy
    view.zoom_to(0.8)

    for note in ("first", "second"):  # an atomic save replaces the file: watched again
        save(tiny(note), path)
        qtbot.waitUntil(
            lambda n=note: (
                served.tabs.currentWidget().doc.graph.nodes[-1].metadata.get("note") == n
            ),
            timeout=20000,
        )
    now = served.tabs.currentWidget()
    assert len(graph_views(served)) == 1
    assert now.scale_factor == pytest.approx(0.8)

    path.write_text('{"id": "g", "name": ', encoding="utf-8")  # caught half written
    qtbot.waitUntil(lambda: "watched.json" in served.statusBar().currentMessage(), timeout=20000)
    assert served.tabs.currentWidget() is now
    assert now.doc.graph.nodes[-1].metadata["note"] == "second"


def test_a_comparison_opens_in_a_tab_that_the_same_name_replaces(qtbot, served) -> None:  # type: ignore[no-untyped-def]
    def compares() -> list[CompareTab]:
        tabs = served.tabs
        found = (tabs.widget(i) for i in range(tabs.count()))
        return [t for t in found if isinstance(t, CompareTab)]

    smaller = tiny()
    smaller.nodes[-1].metadata["note"] = "b"
    call(qtbot, lambda: show_compare(tiny(), smaller, name="cmp"))
    qtbot.waitUntil(lambda: len(compares()) == 1, timeout=20000)
    first = compares()[0]
    assert first.right.doc.graph.nodes[-1].metadata["note"] == "b"

    call(qtbot, lambda: show_compare(tiny(), tiny("c"), name="cmp"))
    qtbot.waitUntil(lambda: compares() and compares()[0] is not first, timeout=20000)
    assert len(compares()) == 1
    assert compares()[0].right.doc.graph.nodes[-1].metadata["note"] == "c"
    qtbot.waitUntil(lambda: not any(show_dir().iterdir()), timeout=5000)


def timed(graph: Graph) -> Graph:
    h = Hierarchy.of(graph)
    for i, node in enumerate(graph.nodes):
        if not h.is_group[i]:
            node.metadata["performance"] = {"time": {"cpu": 0.001 * (i + 1)}}
    return graph


def test_a_graph_with_times_opens_coloured_by_them(qtbot, served) -> None:  # type: ignore[no-untyped-def]
    call(qtbot, lambda: show_graph(tiny(), name="cold"))
    assert settled(qtbot, served, 1).doc.colour_by == "category"

    call(qtbot, lambda: show_graph(timed(tiny()), name="hot"))

    view = settled(qtbot, served, 2)
    assert view.doc.colour_by == "time"
    assert served.runner.colour_actions["time"].isChecked()


def test_a_graph_with_a_metric_added_last_opens_coloured_by_it(qtbot, served) -> None:  # type: ignore[no-untyped-def]
    graph = timed(tiny())
    for node in graph.nodes[:5]:
        node.metadata.setdefault("performance", {})["error"] = 0.5

    call(qtbot, lambda: show_graph(graph, name="err"))

    view = settled(qtbot, served, 1)
    assert view.doc.colour_by == "metric:error"


def test_the_colouring_stored_last_is_preferred() -> None:
    graph = tiny()
    assert preferred_colouring(graph) is None
    graph.nodes[0].metadata["performance"] = {"error": 1.0, "time": {"cpu": 1.0, "ort": 2.0}}
    assert preferred_colouring(graph) == "time:ort"
    perf = {"error": 1.0, "time": {"cpu": 1.0}, "a": 1.0, "b": True}
    graph.nodes[1].metadata["performance"] = perf
    assert preferred_colouring(graph) == "metric:a"  # b is no number


def test_without_a_running_window_one_is_started_and_the_caller_goes_on(name, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    started: list[list[str]] = []
    options: list[dict[str, object]] = []
    monkeypatch.setattr(
        show_client.subprocess,
        "Popen",
        lambda argv, **kw: (started.append(argv), options.append(kw)),
    )
    t0 = time.monotonic()
    show_graph(timed(tiny()), name="fresh")
    assert time.monotonic() - t0 < 2.0

    [argv] = started
    assert argv[:4] == [sys.executable, "-m", "xocview", "open"]
    assert options[0]["start_new_session"] is True
    assert options[0]["stdout"] == show_client.subprocess.DEVNULL
    ns = _parser().parse_args(argv[3:])  # the hidden options are there, and mean the request
    request = request_from_args(
        [Path(f) for f in ns.files], ns.show_name, ns.watch, ns.colour, False
    )
    file = Path(argv[4])
    assert request == {
        "show": {"path": str(file), "name": "fresh", "watch": False, "colour": "time:cpu"}
    }
    assert file.parent.parent == show_dir()
    assert len(load(file).nodes) == len(tiny().nodes)


def test_a_window_that_cannot_start_is_one_error_and_leaves_no_file(name, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def refuse(*_a: object, **_k: object) -> None:
        raise OSError("no such program")

    monkeypatch.setattr(show_client.subprocess, "Popen", refuse)
    with pytest.raises(XocviewError, match="cannot start the xocview window"):
        show_graph(tiny(), name="x")
    assert not any(show_dir().iterdir())


def test_watch_needs_a_file_xocview_reads(name, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(XocviewError, match="watch=True needs path="):
        show_graph(tiny(), watch=True)
    odd = tmp_path / "notes.txt"
    odd.write_text("not a graph", encoding="utf-8")
    with pytest.raises(XocviewError, match=r"notes\.txt"):
        show_graph(tiny(), path=odd, watch=True)


def test_a_model_shown_from_its_bytes_keeps_its_weights_values(qtbot, served) -> None:  # type: ignore[no-untyped-def]
    """XOC JSON holds no weight values: a ModelProto goes as its own bytes, so the window can
    show its weights' statistics and run it on them."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import xocview

    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
            "weighted",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
            [numpy_helper.from_array(w, "w")],
        ),
        opset_imports=[helper.make_opsetid("", 21)],
    )
    data = model.SerializeToString()
    graph = xocview.load(data)
    call(qtbot, lambda: show_graph(graph, name="weighted", onnx_bytes=data))

    view = settled(qtbot, served, 1)
    np.testing.assert_array_equal(view.doc.graph.tensor("w").data, w)
    assert view.doc.path is None  # its temp file was read, then deleted
    qtbot.waitUntil(lambda: not any(show_dir().iterdir()), timeout=5000)
    assert onnx.load_from_string(data) == model
