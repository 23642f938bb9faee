"""The Python API (``xocview.load``, ``render``, ``diff``, ``overlay``, ``show``, ``profile``) on
files, bytes and ``onnx.ModelProto``s, checked against what the command line gives for the
same file. Torch objects are in ``test_torch.py``."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import xocview
from tests.cli.running import run
from tests.conftest import REPO
from xocview import api, sources
from xocview.errors import ApiError, FormatError, XocviewError
from xocview.model import Graph

TINY = REPO / "sample_graphs" / "tiny_transformer.json"
SIMPLE = REPO / "sample_graphs" / "simple_model.json"
PT2 = REPO / "tests" / "data" / "pytorch" / "pt2_cnn.pt2"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def small_model(alpha: float = 0.5, graph_name: str = "small") -> onnx.ModelProto:
    """x -> Relu (relu0) -> r; r + w -> LeakyRelu (leaky0) -> y."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], np.arange(6, dtype=np.float32))
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu0"),
        helper.make_node("Add", ["r", "w"], ["s"], name="add0"),
        helper.make_node("LeakyRelu", ["s"], ["y"], name="leaky0", alpha=alpha),
    ]
    graph = helper.make_graph(
        nodes,
        graph_name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ops(graph: Graph) -> list[str]:
    return [n.op_type for n in graph.nodes]


@pytest.fixture
def temp_folders(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The temporary folders the API makes, recorded as it makes them."""
    made: list[Path] = []
    real: Callable[..., str] = tempfile.mkdtemp

    def mkdtemp(*args: Any, **kwargs: Any) -> str:
        path = real(*args, **kwargs)
        made.append(Path(path))
        return path

    monkeypatch.setattr(sources.tempfile, "mkdtemp", mkdtemp)
    return made


# -- the package root --------------------------------------------------------------------------


def test_import_xocview_imports_neither_qt_nor_onnx_nor_the_api() -> None:
    code = (
        "import sys, xocview; "
        "assert 'PySide6' not in sys.modules, 'PySide6'; "
        "assert 'onnx' not in sys.modules, 'onnx'; "
        "assert 'xocview.api' not in sys.modules, 'api'; "
        "print(xocview.__version__)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == xocview.__version__


def test_the_root_offers_the_api_functions_and_nothing_unknown() -> None:
    for name in ("load", "render", "show", "profile", "diff", "overlay", "write_node_data"):
        assert getattr(xocview, name) is getattr(api, name)
        assert name in dir(xocview)
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        _ = xocview.nonesuch  # type: ignore[attr-defined]


# -- load --------------------------------------------------------------------------------------


def test_load_a_path_is_the_registrys_graph() -> None:
    from xocview.formats import registry

    for source in (TINY, str(TINY)):
        graph = xocview.load(source)
        assert graph == registry.load(TINY)
        assert len(graph.nodes) == 44


def test_load_json_bytes_reads_them_from_memory(temp_folders: list[Path]) -> None:
    graph = xocview.load(TINY.read_bytes())
    assert graph == xocview.load(TINY)
    assert temp_folders == []


def test_load_onnx_bytes_reads_them_from_memory(temp_folders: list[Path]) -> None:
    graph = xocview.load(small_model().SerializeToString())
    assert ops(graph) == ["Relu", "Add", "LeakyRelu"]
    assert temp_folders == []


def test_load_zip_bytes_goes_through_a_temporary_file_that_is_removed(
    temp_folders: list[Path],
) -> None:
    graph = xocview.load(PT2.read_bytes())
    assert ops(graph) == ops(xocview.load(PT2))
    weights = [t for t in graph.tensors if t.has_data]
    assert weights, "the CNN has weights"
    assert all(isinstance(t.data, np.ndarray) for t in weights)  # read before removal
    assert len(temp_folders) == 1 and not temp_folders[0].exists()


def test_load_a_model_proto_gives_what_the_saved_file_gives(tmp_path: Path) -> None:
    model = small_model()
    path = tmp_path / "small.onnx"
    onnx.save(model, path)
    from_memory, from_file = xocview.load(model), xocview.load(path)
    assert ops(from_memory) == ["Relu", "Add", "LeakyRelu"]
    assert [t.id for t in from_memory.tensors] == [t.id for t in from_file.tensors]
    assert [n.attributes for n in from_memory.nodes] == [n.attributes for n in from_file.nodes]
    w = next(t for t in from_memory.tensors if t.id == "w")
    assert w.data is not None and w.data.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_load_returns_a_graph_as_it_is_and_name_renames_others() -> None:
    graph = xocview.load(small_model())
    assert xocview.load(graph) is graph
    assert xocview.load(small_model(), name="mine").name == "mine"


def test_an_unsupported_type_is_one_line_naming_it_and_what_is_accepted() -> None:
    with pytest.raises(ApiError) as e:
        xocview.load(42)
    message = str(e.value)
    assert "int" in message and "onnx.ModelProto" in message and "\n" not in message
    with pytest.raises(ApiError, match=r"args= is for a torch\.nn\.Module"):
        xocview.load(TINY, args=(1,))


def test_a_missing_file_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.onnx"
    with pytest.raises(XocviewError, match=r"nope\.onnx: no such file"):
        xocview.load(missing)


def test_bytes_no_reader_takes_are_named_as_bytes_not_as_a_temporary_path() -> None:
    with pytest.raises(FormatError) as e:
        xocview.load(b"PK\x03\x04 this is no zip at all")
    assert str(e.value).startswith("<bytes>: ")
    assert "xocview-" not in str(e.value) and e.value.file == "<bytes>"


# -- render ------------------------------------------------------------------------------------


def test_render_without_a_path_gives_png_and_svg_for_a_notebook() -> None:
    picture = xocview.render(TINY)
    png = picture._repr_png_()
    assert png.startswith(PNG_SIGNATURE) and len(png) > 1000
    svg = picture._repr_svg_()
    assert isinstance(svg, str) and "<svg" in svg
    assert picture._repr_png_() is png  # made once


def test_render_to_a_path_writes_what_xocview_render_writes(tmp_path: Path) -> None:
    cli_png = tmp_path / "cli.png"
    r = run("render", TINY, cli_png, "--level", "1")
    assert r.returncode == 0, r.stderr
    out = xocview.render(TINY, tmp_path / "api.png", level=1)
    assert out == tmp_path / "api.png"
    assert out.read_bytes() == cli_png.read_bytes()
    svg = xocview.render(str(TINY), tmp_path / "api.svg", expand_all=True, theme="dark")
    assert "<svg" in svg.read_text()


def test_render_a_model_proto_and_save_the_picture(tmp_path: Path) -> None:
    picture = xocview.render(small_model())
    assert picture._repr_png_().startswith(PNG_SIGNATURE)
    saved = picture.save(tmp_path / "small.png")
    assert saved.read_bytes().startswith(PNG_SIGNATURE)
    with pytest.raises(FormatError, match=r"a \.png or \.svg path"):
        picture.save(tmp_path / "small.gif")


def test_render_refuses_unknown_options() -> None:
    with pytest.raises(ApiError, match="not both"):
        xocview.render(TINY, level=1, expand_all=True)
    with pytest.raises(ApiError, match="'blue'"):
        xocview.render(TINY, theme="blue")


# -- overlay -----------------------------------------------------------------------------------


def _stored(graph: Graph, name: str) -> dict[str, float]:
    return {
        n.id: n.metadata["performance"][name]
        for n in graph.nodes
        if name in n.metadata.get("performance", {})
    }


def test_overlay_matches_node_names_and_output_tensors_and_warns_of_the_rest() -> None:
    with pytest.warns(UserWarning, match=r"1 key matched no node of graph 'small': ghost$"):
        graph = xocview.overlay(small_model(), {"relu0": 2, "y": 8.5, "ghost": 1}, name="err")
    assert _stored(graph, "err") == {"relu0": 2.0, "leaky0": 8.5}


def test_overlay_warns_of_at_most_five_unmatched_keys() -> None:
    values = {"relu0": 1.0, **{f"k{i}": float(i) for i in range(7)}}
    with pytest.warns(UserWarning) as caught:
        xocview.overlay(small_model(), values, name="m")
    text = str(caught[0].message)
    assert "7 keys matched no node" in text and text.endswith("and 2 more")


def test_overlay_colours_render_by_the_metric() -> None:
    plain = xocview.render(small_model())
    assert plain.heat is None
    graph = xocview.overlay(small_model(), {"relu0": 1.0, "leaky0": 100.0}, name="err")
    hot = xocview.render(graph)
    assert hot.heat is not None
    levels = hot.heat.levels[hot.drawing.item_node >= 0]
    assert (levels >= 0).sum() == 2 and levels.max() > levels[levels >= 0].min()
    assert hot._repr_png_() != plain._repr_png_()
    assert xocview.render(graph, colour_by="category").heat is None
    with pytest.raises(ApiError, match="stored: err"):
        xocview.render(graph, colour_by="other")


def test_node_data_written_reads_back_to_the_same_values(tmp_path: Path) -> None:
    graph = xocview.overlay(small_model(), {"relu0": 0.25, "add0": 3.0}, name="err")
    path = api.write_node_data(graph, "err", tmp_path / "err.json")
    doc = json.loads(path.read_text())
    assert doc == {"small": {"results": {"relu0": {"value": 0.25}, "add0": {"value": 3.0}}}}
    again = xocview.overlay(small_model(), path, name="err")
    assert _stored(again, "err") == _stored(graph, "err")
    from_dict = xocview.overlay(TINY.read_bytes(), {"results": {"l0.mlp": {"value": 5}}}, name="e")
    assert _stored(from_dict, "e") == {"l0.mlp": 5.0}


def test_overlay_errors_are_one_line_xocview_errors() -> None:
    with pytest.raises(XocviewError, match="0 of 1 results matched a node"):
        xocview.overlay(small_model(), {"ghost": 1.0}, name="m")
    with pytest.raises(ApiError, match="'relu0' is str; expected a number"):
        xocview.overlay(small_model(), {"relu0": "hot"}, name="m")
    with pytest.raises(ApiError, match="got list"):
        xocview.overlay(small_model(), [1, 2], name="m")
    with pytest.raises(ApiError, match="'time' is taken"):
        xocview.overlay(small_model(), {"relu0": 1.0}, name="time")
    with pytest.raises(ApiError, match=r"no node stores performance\.none"):
        api.write_node_data(xocview.load(small_model()), "none", "x.json")


# -- diff --------------------------------------------------------------------------------------


def test_diff_json_is_what_xocview_diff_json_prints() -> None:
    r = run("diff", "--json", TINY, SIMPLE)
    assert r.returncode == 1, r.stderr
    d = xocview.diff(TINY, SIMPLE)
    assert not d.equal
    assert d.to_json() + "\n" == r.stdout
    text = run("diff", TINY, SIMPLE).stdout
    assert d.report() + "\n" == text


def test_diff_of_model_protos_finds_the_changed_attribute() -> None:
    same = xocview.diff(small_model(), small_model())
    assert same.equal and "equal" in repr(same)
    changed = xocview.diff(small_model(0.5), small_model(0.25))
    assert not changed.equal
    assert repr(changed) == "<Diff: 1 difference (1 node changed)>"
    assert "attribute alpha: 0.5 -> 0.25" in changed.report()
    report = json.loads(changed.to_json())
    assert report["old"]["file"] is None and report["findings"][0]["old"] == "leaky0"


def test_diff_show_hands_both_graphs_to_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Graph, Graph, str | None]] = []
    fake = types.ModuleType("xocview.ui.show_client")
    fake.show_compare = lambda a, b, *, name=None: calls.append((a, b, name))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "xocview.ui.show_client", fake)
    d = xocview.diff(small_model(0.5), small_model(0.25))
    d.show()
    assert calls == [(d.result.old, d.result.new, None)]


# -- show and profile --------------------------------------------------------------------------


def test_show_passes_the_graph_and_the_path_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    fake = types.ModuleType("xocview.ui.show_client")

    def show_graph(graph: Graph, **kwargs: Any) -> None:
        calls.append({"graph": graph, **kwargs})

    fake.show_graph = show_graph  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "xocview.ui.show_client", fake)
    assert xocview.show(str(TINY), name="t", watch=True) is None
    assert calls[0]["path"] == TINY and calls[0]["name"] == "t" and calls[0]["watch"] is True
    assert len(calls[0]["graph"].nodes) == 44
    model = small_model()
    xocview.show(model)
    assert calls[1]["path"] is None and calls[1]["name"] is None and calls[1]["watch"] is False
    # a ModelProto goes as its own bytes, so the window has its weights' values
    assert onnx.load_from_string(calls[1]["onnx_bytes"]) == model
    assert calls[0]["onnx_bytes"] is None  # a path goes as itself
    with pytest.raises(ApiError, match="watch=True needs a path"):
        xocview.show(small_model(), watch=True)


def test_profile_loads_and_hands_over_every_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Graph, Any, dict[str, Any]]] = []
    fake = types.ModuleType("xocview.cli.profiling")

    def profile_graph(graph: Graph, inputs: Any = None, **kwargs: Any) -> str:
        calls.append((graph, inputs, kwargs))
        return "result"

    fake.profile_graph = profile_graph  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "xocview.cli.profiling", fake)
    feeds = {"x": np.ones((2, 3), np.float32)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert xocview.profile(small_model(), feeds, repeat=3, threads=2) == "result"
    graph, inputs, kwargs = calls[0]
    assert ops(graph) == ["Relu", "Add", "LeakyRelu"] and inputs is feeds
    assert kwargs == {"repeat": 3, "warmup": 1, "threads": 2, "engine": "xocview"}
