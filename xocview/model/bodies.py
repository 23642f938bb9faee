"""Body inputs of control-flow ops made by a reader (``mark_body_inputs``).

An ONNX Loop or If body names its inputs in the op's body attribute (``{"graph": "body",
"inputs": [...], "outputs": [...]}``); the ONNX reader gives those tensors kind ``input`` and
``subgraph_of`` the op, since nothing in the graph produces them. Readers that write a TFLite
WHILE or a TensorFlow While as a Loop build the same attribute; this gives their body inputs
the same kind, so validation does not call them dangling and the writer knows them.
"""

from __future__ import annotations

from xocview.model.graph import Graph

__all__ = ["mark_body_inputs"]


def mark_body_inputs(graph: Graph) -> int:
    """Mark each body input that nothing produces as the ONNX reader does; returns how many."""
    by_id = {t.id: t for t in graph.tensors}
    produced = {t for node in graph.nodes for t in node.outputs}
    position = {t.id: i for i, t in enumerate(graph.tensors)}
    marked = 0
    for node in graph.nodes:
        for value in node.attributes.values():
            if not (isinstance(value, dict) and "graph" in value and "inputs" in value):
                continue
            for name in value["inputs"]:
                t = by_id.get(name) if isinstance(name, str) else None
                if t is None or t.kind != "activation" or position[name] in produced:
                    continue
                t.kind = "input"
                t.metadata = {**t.metadata, "subgraph_of": node.id}
                marked += 1
    if marked:
        graph.invalidate()
    return marked
