"""WHILE and IF: the subgraphs they call, copied in as the bodies of ONNX Loop and If.

TFLite's WHILE calls a condition subgraph on the loop values and, while it is true, a body
subgraph that gives the next values; ONNX's Loop has one body that gives the next condition
with the next values. So the condition is copied twice: once on the initial values (beside the
Loop, inside the WHILE group) and once on the body's outputs (inside the Loop's body). IF's two
branches read the operator's inputs from the outer graph (captures). Each copy's tensors and
nodes are prefixed with the operator's id so that ids stay unique.
"""

from __future__ import annotations

from typing import Any

from xocview.formats.tflite.flat import Flat
from xocview.formats.tflite.lower import NotMapped
from xocview.formats.tflite.subgraph import build_graph
from xocview.model import Node, Tensor

__all__ = ["Control"]


class Control:
    """Maps WHILE and IF of any subgraph, reading the subgraphs they call."""

    def __init__(
        self, flat: Flat, model: Any, codes: list[tuple[str, bool]], nbuffers: int, nsub: int
    ) -> None:
        self.flat, self.model, self.codes = flat, model, codes
        self.nbuffers, self.nsub = nbuffers, nsub
        self.stack: list[int] = [0]

    def __call__(
        self,
        name: str,
        node_id: str,
        ins: list[int],
        outs: list[int],
        metadata: dict[str, Any],
        tensors: list[Tensor],
        nodes: list[Node],
    ) -> bool:
        """Write ``name`` if it is WHILE or IF (True), else leave it (False)."""
        if name == "WHILE":
            self._while(node_id, ins, outs, metadata, tensors, nodes)
        elif name == "IF":
            self._if(node_id, ins, outs, metadata, tensors, nodes)
        else:
            return False
        return True

    def _index(self, metadata: dict[str, Any], field: str) -> int:
        k = metadata["tflite"].get("options", {}).get(field)
        place = f"subgraphs[{self.stack[-1]}].operators[{metadata['tflite']['index']}]"
        if not isinstance(k, int) or not 0 <= k < self.nsub:
            raise self.flat.error(
                f"{place}.builtin_options.{field}", f"{k} names no subgraph", f"below {self.nsub}"
            )
        if k in self.stack:
            raise self.flat.error(
                f"{place}.builtin_options.{field}", f"subgraph {k} calls itself", "no recursion"
            )
        return k

    def _copy(
        self, k: int, prefix: str, tensors: list[Tensor], bind: list[int]
    ) -> tuple[list[Node], list[int], list[int]]:
        """Subgraph ``k`` copied into ``tensors``, its input j read from ``bind[j]`` when given:
        (its nodes, its inputs, its outputs) as positions in ``tensors``."""
        self.stack.append(k)
        try:
            sub = build_graph(self.flat, self.model, k, self.codes, self.nbuffers, prefix, self)
        finally:
            self.stack.pop()
        if bind and len(bind) != len(sub.inputs):
            raise NotMapped(f"subgraph {k} takes {len(sub.inputs)} values, not {len(bind)}")
        pos = {t: bind[j] for j, t in enumerate(sub.inputs) if bind}
        for t, tensor in enumerate(sub.tensors):
            if t in pos:
                continue
            tensor.id = f"{prefix}/{tensor.id}"
            if tensor.kind in ("input", "output"):
                tensor.kind = "activation"
            tensors.append(tensor)
            pos[t] = len(tensors) - 1
        for n in sub.nodes:
            n.id = f"{prefix}/{n.id}"
            n.inputs = [pos[t] for t in n.inputs]
            n.outputs = [pos[t] for t in n.outputs]
            if "parent_id" in n.metadata:
                n.metadata["parent_id"] = f"{prefix}/{n.metadata['parent_id']}"
            if "children_ids" in n.metadata:
                n.metadata["children_ids"] = [f"{prefix}/{c}" for c in n.metadata["children_ids"]]
        return sub.nodes, [pos[t] for t in sub.inputs], [pos[t] for t in sub.outputs]

    def _while(
        self,
        node_id: str,
        ins: list[int],
        outs: list[int],
        metadata: dict[str, Any],
        tensors: list[Tensor],
        nodes: list[Node],
    ) -> None:
        cond_k = self._index(metadata, "cond_subgraph_index")
        body_k = self._index(metadata, "body_subgraph_index")
        first, _, cond0 = self._copy(cond_k, f"{node_id}/cond0", tensors, ins)
        body, body_in, body_out = self._copy(body_k, f"{node_id}/body", tensors, [])
        again, _, cond = self._copy(cond_k, f"{node_id}/cond", tensors, body_out)
        if len(body_out) != len(ins) or len(cond0) != 1 or len(outs) != len(ins):
            raise NotMapped("the condition or body do not fit the loop's values")
        tensors.append(Tensor(f"{node_id}/iteration", "activation", [], "int64"))
        tensors.append(Tensor(f"{node_id}/condition", "activation", [], "bool"))
        formal_in = [len(tensors) - 2, len(tensors) - 1, *body_in]
        loop_id = f"{node_id}/Loop"
        attrs = {
            "body": {
                "graph": "while_body",
                "inputs": [tensors[t].id for t in formal_in],
                "outputs": [tensors[t].id for t in [cond[0], *body_out]],
            }
        }
        inner = [*body, *again]
        loop_meta: dict[str, Any] = {"omitted_inputs": [0], "parent_id": node_id}
        loop_meta["children_ids"] = _adopt(inner, loop_id, "body")
        loop = Node(loop_id, "Loop", [cond0[0], *ins], list(outs), attrs, loop_meta)
        kids = [*_adopt(first, node_id, None), loop_id]
        nodes.append(
            Node(
                node_id,
                "WHILE",
                [],
                [],
                {},
                {**metadata, "children_ids": kids, "derived": "tflite"},
            )
        )
        nodes.extend([*first, loop, *inner])

    def _if(
        self,
        node_id: str,
        ins: list[int],
        outs: list[int],
        metadata: dict[str, Any],
        tensors: list[Tensor],
        nodes: list[Node],
    ) -> None:
        branches = {}
        inner: list[Node] = []
        attrs: dict[str, Any] = {}
        for attr, field in (
            ("then_branch", "then_subgraph_index"),
            ("else_branch", "else_subgraph_index"),
        ):
            k = self._index(metadata, field)
            made, _, result = self._copy(k, f"{node_id}/{attr}", tensors, ins[1:])
            if len(result) != len(outs):
                raise NotMapped(f"the {attr} gives {len(result)} values for {len(outs)}")
            branches[attr] = _adopt(made, node_id, attr)
            attrs[attr] = {"graph": attr, "inputs": [], "outputs": [tensors[t].id for t in result]}
            inner.extend(made)
        kids = [c for ids in branches.values() for c in ids]
        meta = {**metadata, "children_ids": kids}
        nodes.append(Node(node_id, "If", [ins[0]], list(outs), attrs, meta))
        nodes.extend(inner)


def _adopt(made: list[Node], parent: str, subgraph: str | None) -> list[str]:
    """The top-level nodes of ``made`` put under ``parent`` (in body ``subgraph``)."""
    top = []
    for n in made:
        if "parent_id" not in n.metadata:
            n.metadata["parent_id"] = parent
            if subgraph:
                n.metadata["subgraph"] = subgraph
            top.append(n.id)
    return top
