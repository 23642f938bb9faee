"""What the TensorFlow run tests share: the test files' folder, the tolerances, and the checks
that a built graph ran through the mapping whole and keeps its group links."""

from __future__ import annotations

from pathlib import Path

from xocview.formats.source import Source
from xocview.formats.tensorflow import reader
from xocview.model import Graph

__all__ = ["ATOL", "DATA", "RTOL", "groups_agree", "left_unmapped", "load"]

DATA = Path(__file__).resolve().parents[2] / "data" / "tensorflow"
RTOL, ATOL = 1e-4, 1e-5


def load(name: str) -> Graph:
    return reader.load(Source(DATA / name))


def left_unmapped(graph: Graph) -> list[str]:
    """TF ops that stayed TF ops (call groups hold their bodies and run nothing)."""
    return [
        n.op_type
        for n in graph.nodes
        if n.metadata.get("domain") == "tensorflow" and "children_ids" not in n.metadata
    ]


def groups_agree(graph: Graph) -> None:
    """Each node's parent lists it among its children, and each child names its parent."""
    by_id = {n.id: n for n in graph.nodes}
    assert len(by_id) == len(graph.nodes)
    for n in graph.nodes:
        parent = n.metadata.get("parent_id")
        if parent is not None:
            assert n.id in by_id[parent].metadata["children_ids"], n.id
        for child in n.metadata.get("children_ids", []):
            assert by_id[child].metadata["parent_id"] == n.id, child
