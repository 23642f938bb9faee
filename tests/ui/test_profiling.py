"""Running a graph in the viewer: live heat, recorded times, the Profile pane, colourings."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QLabel

from tests.conftest import REPO, corpus_path
from tests.ui.test_viewer import click_item, item_of
from xocview.formats import load, save
from xocview.model import Graph, Node, Tensor
from xocview.model.analyses.profile import format_ms, node_times_ms
from xocview.ui.canvas.view import GraphView
from xocview.ui.run_dialog import RunDialog, RunOptions

SAMPLES = REPO / "sample_graphs"


def relu_graph(path: Path, op: str = "Relu") -> Path:
    """x -> Add(w) -> Relu -> Relu (grouped in 'block') -> y, saved as XOC JSON."""
    tensors = [
        Tensor("x", "input", [4, 8], "float32"),
        Tensor("w", "weight", [8], "float32"),
        Tensor("a", "activation", [4, 8], "float32"),
        Tensor("b", "activation", [4, 8], "float32"),
        Tensor("y", "output", [4, 8], "float32"),
    ]
    nodes = [
        Node("add", "Add", [0, 1], [2]),
        Node("r1", "Relu", [2], [3], None, {"parent_id": "block"}),
        Node("r2", op, [3], [4], None, {"parent_id": "block"}),
        Node("block", "Block", [], [], None, {"children_ids": ["r1", "r2"]}),
    ]
    save(Graph("g", "g", tensors, nodes, [0], [4]), path)
    return path


def open_file(qtbot, window, path: Path) -> GraphView:  # type: ignore[no-untyped-def]
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    return window.tabs.currentWidget()


def run_and_wait(qtbot, window, options: RunOptions | None = None) -> None:  # type: ignore[no-untyped-def]
    runner = window.runner
    runner.ask = lambda parent, doc: options or RunOptions(repeat=2, warmup=1)
    assert runner.start() is not None
    qtbot.waitUntil(lambda: runner.job is None, timeout=30000)


def test_a_run_records_times_colours_by_time_and_fills_the_profile(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, relu_graph(tmp_path / "g.json"))
    doc = view.doc
    assert doc.colour_by == "category" and doc.heat() is None
    run_and_wait(qtbot, window)
    g = doc.graph
    times = node_times_ms(g, doc.hierarchy)
    leaves = [g.index.node_position(n) for n in ("add", "r1", "r2")]
    assert np.isfinite(times[leaves]).all()
    block = g.index.node_position("block")
    assert times[block] == times[[g.index.node_position("r1"), g.index.node_position("r2")]].sum()
    assert doc.colour_by == "time" and doc.dirty
    heat = doc.heat()
    assert heat is not None and (heat.levels >= 0).sum() >= 1
    panel = window.runner.profile
    assert panel.nodes.rowCount() == 3
    assert {panel.nodes.item(r, 0).text() for r in range(3)} == {"add", "r1", "r2"}
    assert panel.outputs.item(0, 0).text() == "y" and panel.outputs.item(0, 1).text() == "4x8"
    assert "peak memory" in panel.summary.text()
    doc.select_node(block)  # the inspector tells a node's time, a group's as a sum
    rows = window.inspector.tree.findItems("Time (CPU)", Qt.MatchFlag.MatchExactly)
    assert rows and rows[0].text(1) == f"{format_ms(times[block])} (sum of its leaves)"
    window.undo_group.undo()  # the recorded times are one undo step
    assert not np.isfinite(node_times_ms(g)).any()


def test_clicking_a_slow_node_selects_it(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, relu_graph(tmp_path / "g.json"))
    run_and_wait(qtbot, window)
    panel = window.runner.profile
    node_id = panel.nodes.item(0, 0).text()
    panel.nodes.cellClicked.emit(0, 0)
    assert view.doc.selected_node == view.doc.graph.index.node_position(node_id)


def test_live_times_colour_nodes_as_they_are_measured(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, relu_graph(tmp_path / "g.json"))
    doc, runner = view.doc, window.runner
    doc.expanded.discard("block")
    doc.relayout()
    n = len(doc.graph.nodes)
    runner.job_doc = doc
    doc.set_live_times(np.full(n, np.nan))
    runner._progress(
        [("add", 0.002)],
        1,
        3,
    )
    live = doc.node_values()
    assert live is not None and live[doc.graph.index.node_position("add")] == 2.0
    assert np.isnan(live[doc.graph.index.node_position("block")])
    runner._progress([("r1", 0.001), ("r2", 0.003)], 3, 3)
    live = doc.node_values()
    assert live is not None and live[doc.graph.index.node_position("block")] == 4.0
    heat = doc.heat()  # the collapsed group is coloured by the sum of its leaves
    assert heat is not None and heat.high == 4.0
    runner.job_doc = None
    doc.set_live_times(None)


def test_a_failing_run_says_where_and_keeps_the_times_so_far(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, relu_graph(tmp_path / "g.json", op="NoSuchOp"))
    run_and_wait(qtbot, window, RunOptions(repeat=1, warmup=0))
    assert window.runner.messages and "node 'r2' (NoSuchOp)" in window.runner.messages[0]
    times = node_times_ms(view.doc.graph)
    pos = view.doc.graph.index.node_position
    assert np.isfinite(times[[pos("add"), pos("r1")]]).all() and np.isnan(times[pos("r2")])


def test_a_file_with_times_opens_heat_coloured(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.json"
    shutil.copy(SAMPLES / "tiny_transformer.json", path)
    view = open_file(qtbot, window, path)
    assert view.doc.colour_by == "time"
    assert window.runner.colour_actions["time"].isChecked()
    assert view.doc.heat() is not None


def test_colour_by_flops_and_parameters_and_back(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.json"
    shutil.copy(SAMPLES / "tiny_transformer.json", path)
    view = open_file(qtbot, window, path)
    doc = view.doc
    plain = view.grab().toImage()
    window.runner.colour_actions["flops"].trigger()
    assert doc.colour_by == "flops"
    heat = doc.heat()
    assert heat is not None and heat.high > heat.low > 0
    flops_image = view.grab().toImage()
    assert flops_image != plain
    window.runner.colour_actions["params"].trigger()
    assert doc.colour_by == "params"
    window.runner.log_action.trigger()
    assert not doc.heat_log
    window.runner.colour_actions["category"].trigger()
    assert doc.heat() is None


def test_run_results_saved_and_reopened_keep_their_times(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, relu_graph(tmp_path / "g.json"))
    run_and_wait(qtbot, window)
    out = tmp_path / "timed.json"
    view.doc.save_to(out)
    again = load(out)
    assert np.isfinite(node_times_ms(again)).sum() == 4  # three leaves and the group's sum


def test_heat_screenshot_is_not_blank(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, relu_graph(tmp_path / "g.json"))
    run_and_wait(qtbot, window)
    image: QImage = view.grab().toImage()
    colours = {
        image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)
    }
    assert len(colours) > 5


def test_the_run_dialog_offers_each_input_and_the_settings(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from xocview.ui.run_dialog import RunDialog

    view = open_file(qtbot, window, relu_graph(tmp_path / "g.json", op="NoSuchOp"))
    dialog = RunDialog(view.doc, window)
    qtbot.addWidget(dialog)
    assert list(dialog.paths) == ["x"]
    assert "random float32 4x8" in dialog.paths["x"].placeholderText()
    assert dialog.options() == RunOptions(repeat=3, warmup=1, seed=0, symbol_default=1)
    np.save(tmp_path / "x.npy", np.ones((4, 8), np.float32))
    dialog.paths["x"].setText(str(tmp_path / "x.npy"))
    dialog.repeat.setValue(7)
    dialog.symbols.setValue(4)
    options = dialog.options()
    assert options.feeds == {"x": str(tmp_path / "x.npy")}
    assert (options.repeat, options.symbol_default) == (7, 4)
    notes = [w.text() for w in dialog.findChildren(QLabel) if "No kernel" in w.text()]
    assert notes == ["No kernel for: NoSuchOp (1). The run stops at the first of them."]


def dynamic_batch_model(path: Path) -> Path:
    """x[N, 16] -> MatMul(w[16, 32]) -> Relu -> y: the batch is a symbol, as exporters leave it."""
    w = onnx.numpy_helper.from_array(np.ones((16, 32), np.float32), "w")
    graph = onnx.helper.make_graph(
        [
            onnx.helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            onnx.helper.make_node("Relu", ["h"], ["y"], name="relu"),
        ],
        "dyn",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 16])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 32])],
        [w],
    )
    onnx.save(onnx.helper.make_model(graph), str(path))
    return path


def test_a_dynamic_batch_gets_flops_per_sample_and_says_so(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, dynamic_batch_model(tmp_path / "dyn.onnx"))
    rows = window.inspector.rows()
    assert rows["FLOPs"] == f"{2 * 16 * 32 + 32:,} (unknown dims as 1)"
    view.zoom_to(1.0)
    click_item(qtbot, view, item_of(view, "mm"))
    assert window.inspector.rows()["FLOPs"] == f"{2 * 16 * 32:,} (unknown dims as 1)"
    window.runner.colour_actions["flops"].trigger()
    heat = view.doc.heat()
    assert heat is not None and heat.high > heat.low > 0


def test_a_run_fills_in_the_shapes_an_mxnet_file_leaves_out(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    """The user types the input's shape in the Run dialog; after the run every tensor has the
    shape it had in the run, undo takes them back with the times."""
    view = open_file(qtbot, window, corpus_path("nnvm", "mxnet08_mtcnn_det1-symbol.json"))
    doc = view.doc
    conv1 = doc.graph.index.tensor_position("conv1")
    assert doc.graph.tensors[conv1].metadata.get("rank_unknown")
    run_and_wait(qtbot, window, RunOptions(shapes={"data": [1, 3, 12, 12]}, repeat=1, warmup=0))
    t = doc.graph.tensors[conv1]
    assert (t.shape, t.dtype, t.metadata) == ([1, 10, 10, 10], "float32", {"shape_source": "run"})
    doc.select_tensor(conv1)
    assert window.inspector.rows()["Shape"] == "1x10x10x10"
    doc.undo_stack.undo()
    assert doc.graph.tensors[conv1].metadata.get("rank_unknown")
    assert not np.isfinite(doc.times_ms()).any()


def test_the_run_dialog_takes_a_shape_and_refuses_a_bad_one(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, corpus_path("nnvm", "mxnet08_mtcnn_det1-symbol.json"))
    dialog = RunDialog(view.doc, window)
    qtbot.addWidget(dialog)
    accepted = RunDialog.DialogCode.Accepted
    dialog.shape_edits["data"].setText("1,3,oops")
    dialog.accept()
    assert dialog.result() != accepted and "input 'data'" in dialog.problem.text()
    dialog.shape_edits["data"].setText("?x3x12x12")
    dialog.accept()
    assert dialog.result() != accepted and "every size" in dialog.problem.text()
    dialog.shape_edits["data"].setText("1x3x12x12")
    dialog.accept()
    assert dialog.result() == accepted
    assert dialog.options().shapes == {"data": [1, 3, 12, 12]}


def test_a_bug_during_a_run_is_one_short_line(qtbot, window, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An exception xocview did not expect reaches the window as one line, not a traceback."""
    import xocview.ui.running as running

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("first\nsecond " + "x" * 1_000_000)

    monkeypatch.setattr(running, "run", broken)
    open_file(qtbot, window, relu_graph(tmp_path / "g.json"))
    run_and_wait(qtbot, window, RunOptions(repeat=1, warmup=0))
    (message,) = window.runner.messages
    assert "internal error: RuntimeError: first second" in message
    assert "\n" not in message and len(message) < 500


def test_a_loop_runs_in_the_window_and_its_time_splits_into_body_and_own(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Open an ONNX Loop (a Cast/Mul/Add/ReduceSum/Less/Identity body reading outer tensors),
    run it: every body node is timed, the Profile pane counts the Loop's own share beside its
    body's nodes, and the inspector says how the Loop's time is made."""
    from tests.executor.test_control_flow import running_sum_loop

    view = open_file(qtbot, window, running_sum_loop(tmp_path))
    doc = view.doc
    feeds = {}
    for name, value in (("M", np.array(6, np.int64)), ("cond", np.array(True))):
        np.save(tmp_path / f"{name}.npy", value)
        feeds[name] = str(tmp_path / f"{name}.npy")
    run_and_wait(qtbot, window, RunOptions(feeds=feeds, repeat=2, warmup=1))
    g, h = doc.graph, doc.hierarchy
    loop = next(i for i, n in enumerate(g.nodes) if n.op_type == "Loop")
    body = h.children(loop).tolist()
    assert len(body) == 6
    times = node_times_ms(g, h)
    assert np.isfinite(times[body]).all() and np.isfinite(times[loop])
    panel = window.runner.profile
    assert "over 7 timed nodes" in panel.summary.text()  # the body's 6 and the Loop itself
    assert "Loop" in {panel.nodes.item(r, 1).text() for r in range(panel.nodes.rowCount())}
    doc.select_node(loop)
    rows = window.inspector.tree.findItems("Time (CPU)", Qt.MatchFlag.MatchExactly)
    assert rows and rows[0].text(1).startswith(format_ms(times[loop]) + " (its bodies, and ")


def test_the_inspector_says_a_node_ran_fused_and_how_its_time_was_split(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from tests.executor.test_fusion import conv_bn_relu

    view = open_file(qtbot, window, conv_bn_relu(tmp_path))
    doc = view.doc
    run_and_wait(qtbot, window)
    assert doc.last_run is not None and doc.last_run.fused == {"conv": ["bn", "relu"]}
    doc.select_node(doc.graph.index.node_position("bn"))
    rows = window.inspector.tree.findItems("Time (CPU)", Qt.MatchFlag.MatchExactly)
    assert rows and rows[0].text(1).endswith("; run fused with conv, relu, the time split by FLOPs")


def test_a_long_loop_shows_its_iterations_on_the_progress_bar(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from tests.executor.test_loop_limits import counting_loop

    open_file(qtbot, window, counting_loop(tmp_path, 10**9, condition="less", stop_at=2e5))
    runner = window.runner
    shown: list[str] = []
    runner.ask = lambda parent, doc: RunOptions(repeat=1, warmup=0)
    job = runner.start()
    assert job is not None
    job.signals.iteration.connect(lambda text: shown.append(runner.bar.format()))
    qtbot.waitUntil(lambda: runner.job is None, timeout=60000)
    assert shown and all(s.startswith("%p%  loop1: iteration ") for s in shown)
    assert shown[-1].endswith(" of 1,000,000,000")
    assert runner.bar.format() == "%p%"  # a new run starts with a plain bar


def test_the_profile_panel_waits_for_the_first_run(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    """No empty Profile pane under a file that has no times; a run brings it, and View >
    Panels shows or hides every dock."""
    window.open_path(REPO / "sample_graphs" / "simple_model.json")
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=30000)
    dock = window.runner.dock
    assert not dock.isVisible()
    toggles = {a.text(): a for a in window.menus.panels.actions()}
    assert set(toggles) == {"Inspector", "Search", "Problems", "Undo History", "Profile"}
    toggles["Profile"].trigger()
    assert dock.isVisible()
    toggles["Profile"].trigger()
    assert not dock.isVisible()
    window.runner.ask = lambda parent, doc: RunOptions(repeat=1, warmup=0)
    window.runner.start()
    assert dock.isVisible()
    qtbot.waitUntil(lambda: window.runner.job is None, timeout=60000)
