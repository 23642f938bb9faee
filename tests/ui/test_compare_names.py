"""Issue 30: a comparison names its two files (the tab's and the picked one) in its title,
headers, summary and keys, never "old" and "new"; files of one name are told apart."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QLabel

from tests.model.test_group_facts import attention_graph
from xocview.formats import save
from xocview.ui.compare import CompareTab
from xocview.ui.compare.names import side_names


def test_side_names_tell_files_apart() -> None:
    a, b = Path("/m/v1/model.onnx"), Path("/m/v2/model.onnx")
    assert side_names((Path("/m/a.onnx"), "a.onnx"), (b, "model.onnx")) == (
        "a.onnx",
        "model.onnx",
    )
    assert side_names((a, "model.onnx"), (b, "model.onnx")) == ("v1/model.onnx", "v2/model.onnx")
    assert side_names((a, "model.onnx"), (a, "model.onnx")) == (
        "model.onnx (open tab)",
        "model.onnx (on disk)",
    )
    assert side_names((None, "graph"), (b, "model.onnx")) == ("graph", "model.onnx")
    deep = Path("/x/" + "d" * 80 + "/v1/model.onnx"), Path("/y/" + "d" * 80 + "/v1/model.onnx")
    left, right = side_names((deep[0], "model.onnx"), (deep[1], "model.onnx"))
    assert (left, right) == ("x/\u2026/model.onnx", "y/\u2026/model.onnx")


def test_compare_with_names_both_files(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first, second = tmp_path / "v1" / "net.json", tmp_path / "v2" / "net.json"
    g = attention_graph()
    for path in (first, second):
        path.parent.mkdir()
        save(g, path)
    g.nodes[1].op_type = "Sigmoid"  # one changed node
    save(g, second)
    window.open_path(first)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    window.comparer.compare(second)
    qtbot.waitUntil(lambda: window.tabs.count() == 2, timeout=30000)
    tab = window.tabs.currentWidget()
    assert isinstance(tab, CompareTab)
    names = ("v1/net.json", "v2/net.json")
    assert tab.title == f"{names[0]} \u2194 {names[1]}"
    assert window.tabs.tabText(1) == tab.title
    headers = [w.text() for w in tab.findChildren(QLabel) if w.text().startswith("<b>")]
    assert headers[:2] == [f"<b>{n}</b>" for n in names]
    summary = tab.differences.summary.text()
    assert f"from {names[0]} to {names[1]}" in summary
    texts = " ".join([tab.title, summary, *headers, tab.swap_button.toolTip()])
    assert " old" not in texts and " new" not in texts
