"""Hostile XOC JSON (issue 28): keys the reader passes over are each a ``check`` warning,
metadata nested 100,000 deep is one located error, a key of 2,000 dotted parts is kept whole,
groups nested 5,000 deep open in bounded time and memory."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from xocview.errors import FormatError
from xocview.formats import check, load, save
from xocview.model.dotted import MAX_METADATA_DEPTH
from xocview.model.hierarchy import MAX_GROUP_DEPTH


def doc(node_metadata: str = "{}", **extra: Any) -> str:
    """A one-node XOC file as text; the node's metadata is given as JSON text (json.dumps
    recurses, so deep values are written by hand)."""
    text = (
        '{"id": "g", "name": "g", "tensors": ['
        '{"id": "x", "name": "input", "shape": [1], "dtype": "float32"}, '
        '{"id": "y", "name": "output", "shape": [1], "dtype": "float32"}], '
        '"nodes": [{"id": "n", "name": "Relu", "inputs": [0], "outputs": [1], '
        f'"attributes": {{}}, "metadata": {node_metadata}}}], '
        '"inputs": [0], "outputs": [1], "metadata": {}'
    )
    return text + "".join(f", {json.dumps(k)}: {json.dumps(v)}" for k, v in extra.items()) + "}"


def write(tmp_path: Path, text: str, name: str = "g.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def warnings(path: Path) -> list[str]:
    return [str(f) for f in check(path)[1] if f.severity == "warning"]


def at_stack_depth(frames: int, work: Callable[[], Any]) -> Any:
    """``work()`` called ``frames`` Python frames deeper than here."""
    return work() if frames <= 0 else at_stack_depth(frames - 1, work)


# -- keys read past (finding 9) ----------------------------------------------------------------


def test_operators_beside_nodes_is_a_check_warning(tmp_path: Path) -> None:
    ops = [{"id": "z", "name": "Relu", "inputs": [0], "outputs": [1], "attributes": {}}]
    path = write(tmp_path, doc(operators=ops))
    assert [nd.id for nd in load(path).nodes] == ["n"]  # 'nodes' is what is read
    assert warnings(path) == [
        "operators: warning: ignored beside 'nodes', which is read (a graph has one node list)"
    ]


def test_operators_alone_is_read_without_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, doc().replace('"nodes"', '"operators"'))
    assert [nd.id for nd in load(path).nodes] == ["n"]
    assert warnings(path) == []


def test_every_key_read_past_is_a_warning_at_its_place(tmp_path: Path) -> None:
    inner = json.loads(doc())
    inner["edges"] = [[0, 1]]
    inner["tensors"][1]["layout"] = "NCHW"
    inner["nodes"][0]["domain"] = "ai.onnx"
    inner["nodes"][0]["note"] = 1
    path = write(tmp_path, json.dumps({"graph": inner, "version": 2}))
    assert warnings(path) == [
        "version: warning: ignored beside 'graph', which holds the graph",
        "graph.edges: warning: ignored: edges are the nodes' inputs and outputs",
        "graph.tensors[1].layout: warning: unknown tensor key, ignored",
        "graph.nodes[0].domain: warning: unknown node key, ignored",
        "graph.nodes[0].note: warning: unknown node key, ignored",
    ]
    assert load(path).nodes[0].metadata == {}  # loading itself says nothing and keeps going


def test_a_spec_file_has_no_warning(tmp_path: Path) -> None:
    assert warnings(write(tmp_path, doc('{"level": 0, "perf.time.cpu": 1.5}'))) == []


# -- metadata nested deep (finding 7) ----------------------------------------------------------


def test_metadata_nested_100000_deep_is_one_located_error(tmp_path: Path) -> None:
    d = 100_000
    path = write(tmp_path, doc('{"k": ' + '{"a": ' * d + "1" + "}" * d + "}"))
    start = time.perf_counter()
    for read in (load, check):
        with pytest.raises(FormatError) as info:
            read(path)
        assert str(info.value) == (
            f"{path}: nodes[0].metadata.k.a…: nested 100,004 deep (line 1 column 1449); "
            "expected arrays and objects nested at most 200 deep"
        )
    assert time.perf_counter() - start < 20


def test_the_depth_limit_does_not_depend_on_the_callers_stack(tmp_path: Path) -> None:
    # json.loads gave up where the caller's stack left it room: a file 985 deep opened in
    # check and failed in info. Now 190 levels read anywhere and 300 nowhere.
    ok = write(tmp_path, doc('{"k": ' + "[" * 190 + "]" * 190 + "}"), "ok.json")
    deep = write(tmp_path, doc('{"k": ' + "[" * 300 + "]" * 300 + "}"), "deep.json")
    for frames in (0, 500):
        assert at_stack_depth(frames, lambda: load(ok)).nodes[0].metadata is not None
        with pytest.raises(FormatError, match="nested 304 deep"):
            at_stack_depth(frames, lambda: load(deep))


def test_metadata_as_deep_as_read_saves_and_reads_back(tmp_path: Path) -> None:
    d = 195  # with root, nodes, the node and its metadata: 199 levels
    path = write(tmp_path, doc('{"k": ' + "[" * d + "]" * d + "}"))
    graph = at_stack_depth(300, lambda: load(path))
    out = tmp_path / "out.json"
    at_stack_depth(300, lambda: save(graph, out))
    assert load(out).nodes[0].metadata == graph.nodes[0].metadata


# -- a key of 2,000 dotted parts (finding 7) ---------------------------------------------------


def test_a_key_of_2000_dotted_parts_is_kept_whole_and_saves(tmp_path: Path) -> None:
    key = ".".join(["a"] * 2_000)
    path = write(tmp_path, doc(json.dumps({key: 1, "perf.cpu": 2})))
    graph = load(path)
    assert graph.nodes[0].metadata == {key: 1, "perf": {"cpu": 2}}
    assert warnings(path) == [
        "nodes[0].metadata.a.a.a.a.a…: warning: a key of 2,000 dotted parts kept whole; "
        f"metadata nests at most {MAX_METADATA_DEPTH} levels deep"
    ]
    for name in ("out.json", "out.onnx"):  # convert
        save(graph, tmp_path / name)
        assert load(tmp_path / name).nodes[0].metadata == graph.nodes[0].metadata


def test_dotted_keys_never_nest_past_the_limit(tmp_path: Path) -> None:
    # Each level's key adds 30 levels: the expansion stops adding once it would pass the limit.
    level = ".".join(["b"] * 30)
    text = "{" + f'"{level}": {{' * 9 + f'"{level}": 1' + "}" * 10
    graph = load(write(tmp_path, doc(text)))
    stack, deepest = [(graph.nodes[0].metadata, 1)], 0
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        stack += [(v, depth + 1) for v in value.values() if isinstance(v, dict)]
    assert 150 < deepest <= MAX_METADATA_DEPTH


# -- groups nested deep (finding 6) ------------------------------------------------------------


def test_groups_nested_5000_deep_load_check_and_save_in_linear_memory(tmp_path: Path) -> None:
    n = 5_000
    nodes = [
        {
            "id": f"g{i}",
            "name": "Group",
            "inputs": [],
            "outputs": [],
            "attributes": {},
            "metadata": {
                "children_ids": [f"g{i + 1}" if i + 1 < n else "n"],
                **({"parent_id": f"g{i - 1}"} if i else {}),
            },
        }
        for i in range(n)
    ]
    inner = json.loads(doc())
    inner["nodes"][0]["metadata"] = {"parent_id": f"g{n - 1}"}
    inner["nodes"] += nodes
    path = write(tmp_path, json.dumps(inner))
    tracemalloc.start()
    start = time.perf_counter()
    try:
        graph = load(path)
        found = check(path)[1]
        save(graph, tmp_path / "out.json")
        peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 60
    assert peak < 200, f"{peak:.0f} MB"
    assert [f.message for f in found] == [
        f"groups nested {n:,} deep; levels past {MAX_GROUP_DEPTH} are shown flattened into "
        f"group 'g{MAX_GROUP_DEPTH - 1}'"
    ]
    # The file's hierarchy is saved as it was, not as it is shown.
    assert json.loads((tmp_path / "out.json").read_text())["nodes"] == inner["nodes"]
