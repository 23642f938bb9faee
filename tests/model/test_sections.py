"""xocview/model/sections.py: ordered "part i of k" groups for crowded levels."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tests.model.conftest import graph, node, tensor
from xocview.formats import load, save
from xocview.model import Graph, Hierarchy, Node, Tensor, validate
from xocview.model.boxes import box_weights
from xocview.model.sections import SECTION_BOXES, WINDOW, add_section_groups


def sections(g: Graph) -> list[Node]:
    return [nd for nd in g.nodes if nd.metadata.get("derived") == "section"]


def kids(g: Graph, group: Node) -> list[Node]:
    return [g.node(k) for k in group.metadata["children_ids"]]


def blocks(count: int, branches: int = 8) -> Graph:
    """``count`` blocks in a row, each a split, ``branches`` parallel nodes and a join that adds
    the block's input: inside a block two or more tensors are live, between blocks only one."""
    tensors = [tensor("x", "input")]
    nodes: list[Node] = []
    for b in range(count):
        given = len(tensors) - 1
        tensors.append(tensor(f"s{b}"))
        nodes.append(node(f"split{b}", "Split", [given], [len(tensors) - 1]))
        split = len(tensors) - 1
        outs = []
        for k in range(branches):
            tensors.append(tensor(f"b{b}.{k}"))
            outs.append(len(tensors) - 1)
            nodes.append(node(f"branch{b}.{k}", "Relu", [split], [outs[-1]]))
        tensors.append(tensor(f"j{b}"))
        nodes.append(node(f"join{b}", "Concat", [*outs, given], [len(tensors) - 1]))
    tensors[-1].kind = "output"
    return graph(tensors, nodes, [0], [len(tensors) - 1])


def chain(n: int, constants: bool = False) -> Graph:
    """x -> n0 -> ... -> n{n-1}; with ``constants`` each node also reads a ConstantOfShape of
    a weight, all of them written first in the file (as the ONNX light models do)."""
    tensors = [tensor("x", "input")]
    consts: list[Node] = []
    nodes: list[Node] = []
    for i in range(n):
        ins = [len(tensors) - 1]
        if constants:
            tensors += [tensor(f"w{i}", "weight"), tensor(f"c{i}")]
            consts.append(node(f"k{i}", "ConstantOfShape", [len(tensors) - 2], [len(tensors) - 1]))
            ins.append(len(tensors) - 1)
        tensors.append(tensor(f"t{i}"))
        nodes.append(node(f"n{i}", "Add", ins, [len(tensors) - 1]))
    tensors[-1].kind = "output"
    return graph(tensors, consts + nodes, [0], [len(tensors) - 1])


def random_dag(n: int, seed: int = 0) -> Graph:
    """A flat graph of ``n`` nodes, each reading the previous one and sometimes an earlier one."""
    rng = np.random.default_rng(seed)
    tensors = [Tensor("x", "input", [1], "float32")]
    nodes = []
    for i in range(n):
        ins = [len(tensors) - 1]
        if i > 4 and rng.random() < 0.3:
            ins.append(int(rng.integers(max(1, len(tensors) - 40), len(tensors) - 1)))
        tensors.append(Tensor(f"t{i}", "activation", [1], "float32"))
        nodes.append(Node(f"n{i}", "Add", ins, [len(tensors) - 1]))
    tensors[-1].kind = "output"
    return Graph("g", "g", tensors, nodes, [0], [len(tensors) - 1])


def test_cuts_fall_between_blocks_where_one_tensor_is_live() -> None:
    g = blocks(7)  # 70 nodes; 3 parts of 23 would cut inside blocks 3 and 5
    assert add_section_groups(g, limit=40, size=25) == 3
    parts = sections(g)
    assert [len(p.metadata["children_ids"]) for p in parts] == [20, 30, 20]
    for p in parts:
        members = kids(g, p)
        assert members[0].op_type == "Split" and members[-1].op_type == "Concat"
    assert [p.metadata["name"] for p in parts] == [
        "part 1 of 3: Split \u2026 Concat",
        "part 2 of 3: Split \u2026 Concat",
        "part 3 of 3: Split \u2026 Concat",
    ]
    assert validate(g) == []


def test_where_every_cut_is_as_narrow_the_nearest_to_even_shares_wins() -> None:
    g = chain(100)
    assert add_section_groups(g, limit=50, size=30) == 4
    assert [p.metadata["children_ids"][0] for p in sections(g)] == ["n0", "n25", "n50", "n75"]


def test_parts_are_consecutive_in_topological_order_and_hold_every_node_once() -> None:
    g = random_dag(3000)
    added = add_section_groups(g)
    h = Hierarchy(g)
    parts = sections(g)
    assert added == len(parts) > 1
    assert all(h.parent[i] >= 0 for i in range(3000))  # every node went into a part
    part_of = {c: k for k, p in enumerate(parts) for c in p.metadata["children_ids"]}
    assert len(part_of) == 3000
    index = g.index
    for s, d in zip(index.edge_src.tolist(), index.edge_dst.tolist(), strict=True):
        assert part_of[g.nodes[s].id] <= part_of[g.nodes[d].id]  # data flows forwards
    sizes = [len(p.metadata["children_ids"]) for p in parts]
    share = 3000 / len(parts)
    assert share <= SECTION_BOXES
    assert all((1 - 2 * WINDOW) * share <= s <= (1 + 2 * WINDOW) * share for s in sizes)
    assert validate(g) == []


def test_small_levels_get_no_parts() -> None:
    g = random_dag(400)
    assert add_section_groups(g) == 0
    assert not sections(g)
    g = chain(300, constants=True)  # 600 nodes, but the constants make no boxes: 300
    assert add_section_groups(g) == 0


def test_constants_written_first_go_with_their_readers() -> None:
    g = chain(500, constants=True)
    assert add_section_groups(g) > 1
    weights = box_weights(g, Hierarchy(g))
    for p in sections(g):
        members = kids(g, p)
        assert sum(int(weights[g.index.node_position(m.id)]) for m in members) <= 1.5 * 180
        reader = {m.id for m in members}
        for m in members:
            if m.op_type == "ConstantOfShape":
                assert f"n{m.id[1:]}" in reader


def test_a_crowded_group_is_split_inside_and_lists_its_parts() -> None:
    g = random_dag(900)
    ids = [nd.id for nd in g.nodes]
    for nd in g.nodes:
        nd.metadata["parent_id"] = "block"
    g.nodes.append(Node("block", "Scope", [], [], {}, {"children_ids": ids}))
    g.invalidate()
    added = add_section_groups(g)
    block = g.node("block")
    assert block.metadata["children_ids"] == [p.id for p in sections(g)]
    assert [p.id for p in sections(g)] == [f"block#part{j}" for j in range(1, added + 1)]
    assert all(p.metadata["parent_id"] == "block" for p in sections(g))
    assert validate(g) == []


def test_ids_never_clash_with_the_graphs() -> None:
    g = random_dag(900)
    g.nodes[0].id = "#part1"
    g.invalidate()
    add_section_groups(g)
    ids = [nd.id for nd in g.nodes]
    assert len(set(ids)) == len(ids)
    assert sections(g)[0].id == "#part1#section"


def test_a_cycle_still_gives_every_node_one_part() -> None:
    g = random_dag(900)
    last = g.nodes[-1].outputs[0]
    g.nodes[10].inputs.append(last)  # n10 reads the last tensor: a cycle through most nodes
    g.invalidate()
    add_section_groups(g)
    members = [c for p in sections(g) for c in p.metadata["children_ids"]]
    assert sorted(members) == sorted(f"n{i}" for i in range(900))


def test_children_of_an_operator_with_bodies_stay_whole() -> None:
    g = random_dag(900)
    ids = [nd.id for nd in g.nodes]
    for nd in g.nodes:
        nd.metadata["parent_id"] = "loop"
    g.tensors.append(Tensor("cond", "input", [1], "bool"))
    g.nodes.append(Node("loop", "Loop", [len(g.tensors) - 1], [], {}, {"children_ids": ids}))
    g.invalidate()
    assert add_section_groups(g) == 0


def test_saving_leaves_sections_out_and_loading_makes_them_again(tmp_path: Path) -> None:
    g = random_dag(1000)
    assert add_section_groups(g) > 0
    path = tmp_path / "sectioned.json"
    save(g, path)
    assert "#part" not in path.read_text()  # the file holds what was loaded, no parts
    flat = load_without_sections(path)
    assert len(flat.nodes) == 1000 and not sections(flat)
    assert validate(flat) == []
    back = load(path)  # loading splits the level again, into the same parts
    assert back == g


def load_without_sections(path: Path) -> Graph:
    from xocview.model.sections import without_sections

    return without_sections(load(path))


def test_a_flat_xoc_file_gets_parts_on_loading(tmp_path: Path) -> None:
    path = tmp_path / "flat.json"
    save(random_dag(1000), path)
    assert len(sections(load(path))) > 1


def test_a_flat_100k_node_level_is_split_quickly_into_parts_of_parts() -> None:
    g = random_dag(100_000)
    _ = g.index  # loading builds it anyway
    start = time.perf_counter()
    added = add_section_groups(g)
    seconds = time.perf_counter() - start
    h = Hierarchy(g)
    assert int((h.parent < 0).sum()) <= 32 and h.max_depth == 2  # parts of parts, then nodes
    assert added == len(sections(g))
    leaf_parts = [p for p in sections(g) if not p.metadata["children_ids"][0].startswith("#")]
    assert max(len(p.metadata["children_ids"]) for p in leaf_parts) <= 1.5 * SECTION_BOXES
    assert seconds < 3.0, f"{seconds:.2f} s"  # about 0.2 s; generous for loaded machines


def test_a_bad_size_is_refused() -> None:
    with pytest.raises(ValueError, match="below the limit"):
        add_section_groups(random_dag(10), limit=10, size=10)
