"""Each box's texts and size: title, detail, category and weight rows, measured in scene
units; made once per graph state and kept with its index, since an expand or collapse draws
mostly the boxes it drew before."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.model import Graph, Hierarchy, Node
from xocview.model.analyses.opdoc import node_doc, roles
from xocview.model.analyses.summary import shape_text
from xocview.model.group_facts import OpMix, group_parameters, inside, mix_label

__all__ = [
    "BADGE",
    "CHAR_W",
    "ELLIPSIS",
    "KIND_GROUP",
    "KIND_NODE",
    "KIND_TENSOR",
    "LABEL_CHARS",
    "ROW_H",
    "SHOW_NAMES",
    "BoxTexts",
    "elide",
    "frame_title",
    "node_name",
    "set_show_names",
    "weight_rows",
]

CHAR_W = 8.6  # a bold title character at the base font size (ONNX op names: mean 8.5)
NODE_H = 34.0
NODE_H_DETAIL = 46.0
TENSOR_H = 24.0
TENSOR_H_DETAIL = 34.0
MIN_W = 72.0
ROW_H = 15.0  # one folded weight's row (role and shape) below a node's title and detail
ROW_CHAR_W = 6.4  # average width of a row character (the detail font)
PAD = 20.0
BADGE = 16.0  # the margin a closed group's "+" badge takes, on each side to keep titles centred
# Labels longer than this are cut with an ellipsis before boxes are sized: a file may name a
# node with a million characters, and its box must still be a box (the Inspector shows more).
LABEL_CHARS = 48
ELLIPSIS = "\u2026"

KIND_NODE, KIND_GROUP, KIND_TENSOR = 0, 1, 2
# View > Show Names: each node box lists its name (as Netron's Show Names), for every drawing
# made from now on; one setting for the whole application, as the window's overlays
SHOW_NAMES = {"on": False}
_Box = tuple[str, str, str, tuple[str, ...], float, float]  # title, detail, category, rows, w, h


class BoxTexts:
    """Each box's texts and size, made once per graph state and kept with its index: an
    expand or collapse draws mostly the boxes it drew before."""

    def __init__(
        self,
        graph: Graph,
        categories: Callable[[str], str],
        details: Callable[[Node], str],
        show_weights: bool,
        folded: np.ndarray,
    ) -> None:
        self.graph = graph
        self.categories = categories
        self.details = details
        self.show_weights = show_weights
        self.folded = folded
        self.names = SHOW_NAMES["on"]
        self.hierarchy = Hierarchy.of(graph)
        self._open: dict[int, _Box] = {}
        self._closed: dict[int, _Box] = {}
        self._tensors: dict[int, _Box] = {}
        self._labels: dict[int, str] = {}
        self._titles: dict[int, str] = {}

    @staticmethod
    def of(
        graph: Graph,
        categories: Callable[[str], str],
        details: Callable[[Node], str],
        show_weights: bool,
        folded: np.ndarray,
    ) -> BoxTexts:
        names = SHOW_NAMES["on"]
        key = f"drawing.boxes:{id(categories)}:{id(details)}:{show_weights}:{names}"
        found = graph.index.derived.get(key)
        if not isinstance(found, BoxTexts) or found.categories is not categories:
            found = BoxTexts(graph, categories, details, show_weights, folded)
            graph.index.derived[key] = found
        return found

    def nodes(self, items: np.ndarray, closed: np.ndarray) -> list[_Box]:
        out = []
        opened, shut = self._open, self._closed
        for i in items.tolist():
            table = shut if closed[i] else opened
            e = table.get(i)
            if e is None:
                e = table[i] = self._node(i, bool(closed[i]))
            out.append(e)
        return out

    def tensors(self, items: np.ndarray) -> list[_Box]:
        out = []
        table = self._tensors
        for t in items.tolist():
            e = table.get(t)
            if e is None:
                ten = self.graph.tensors[t]
                title, detail = elide(ten.id), elide(shape_text(ten))
                e = table[t] = (
                    title,
                    detail,
                    ten.kind,
                    (),
                    *box_size(title, detail, (), KIND_TENSOR),
                )
            out.append(e)
        return out

    def frame_titles(self, frames: list[int]) -> list[str]:
        table = self._titles
        out = []
        for g in frames:
            text = table.get(g)
            if text is None:
                text = table[g] = frame_title(self.graph, g)
            out.append(text)
        return out

    def edge_labels(self, tensors: np.ndarray) -> list[str]:
        out = []
        table = self._labels
        for t in tensors.tolist():
            text = table.get(t)
            if text is None:
                text = table[t] = elide(shape_text(self.graph.tensors[t]))
            out.append(text)
        return out

    def op_mix(self) -> OpMix:
        """Every group's operators, made on the first closed group drawn."""
        return OpMix.of_graph(self.graph)

    def _node(self, i: int, closed: bool) -> _Box:
        node = self.graph.nodes[i]
        rows: tuple[str, ...] = ()
        if closed:  # a group drawn as one box; an open If or Loop heads its frame instead
            title = elide(str(node.metadata.get("name") or node.op_type))
            if node.metadata.get("derived") == "weights":  # a module of a weights file
                detail = self._module_label(i)
            else:
                detail = mix_label(self.op_mix().of(i))  # "Attention: 14 ops"
            cat, kind = "group", KIND_GROUP
        else:
            title, detail = elide(node.op_type), elide(self.details(node))
            cat, kind = self.categories(node.op_type), KIND_NODE
            if not self.show_weights:  # an open If or Loop lists its weights too
                rows = rows_of(self.graph, i, self.folded)
            if self.names:  # the name first, above the weights
                rows = (elide(node_name(node)), *rows)
        return (title, detail, cat, rows, *box_size(title, detail, rows, kind))

    def _module_label(self, i: int) -> str:
        """``9 modules, 202M params``; ``32 blocks alike, 6.5B params`` for a numbered family
        of equal blocks: a weights file's group has no operators to name."""
        h = Hierarchy.of(self.graph)
        mask = inside(h, i)
        params = _count(group_parameters(self.graph, mask))
        meta = self.graph.nodes[i].metadata
        blocks = meta.get("repeated_blocks")
        if isinstance(blocks, int):
            kinds = meta.get("block_kinds")
            alike = f"of {kinds} kinds" if isinstance(kinds, int) else "alike"
            return f"{blocks} blocks {alike}, {params} params"
        modules = int((mask & ~h.is_group).sum())
        return f"{modules} module{'s' * (modules != 1)}, {params} params"


def _count(n: int) -> str:
    """A parameter count as people say it: 8.3k, 202M, 6.7B."""
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(n)


def set_show_names(on: bool) -> None:
    """Show each node's name on its box in the drawings made from now on (a relayout makes
    them: the boxes grow by a line)."""
    SHOW_NAMES["on"] = on


def node_name(node: Node) -> str:
    """The name a node was given in its file (an ONNX node's ``name``), else its id."""
    name = node.metadata.get("name")
    return name if isinstance(name, str) and name else node.id


def box_size(title: str, detail: str, rows: tuple[str, ...], kind: int) -> tuple[float, float]:
    """A box's width and height for its texts (a closed group's "+" badge beside its title)."""
    length = max(len(title), len(detail) * 0.85)
    row_chars = max(map(len, rows), default=0)
    w = max(MIN_W, max(length * CHAR_W, row_chars * ROW_CHAR_W) + PAD)
    if kind == KIND_GROUP:
        w += 2 * BADGE
    if kind == KIND_TENSOR:
        h = TENSOR_H_DETAIL if detail else TENSOR_H
    else:
        h = NODE_H_DETAIL if detail else NODE_H
    if rows:
        h += len(rows) * ROW_H + 4.0
    return w, h


def rows_of(graph: Graph, i: int, folded: np.ndarray) -> tuple[str, ...]:
    """Node i's ``role shape`` text per folded tensor it reads (see ``weight_rows``)."""
    node = graph.nodes[i]
    weights = [k for k, t in enumerate(node.inputs) if folded[t]]
    if not weights:
        return ()
    schema = node_doc(graph, i)
    names = [""] * len(node.inputs)
    if schema is not None:
        names = roles(schema.inputs, len(node.inputs), node.metadata.get("omitted_inputs"))
    else:  # a format's own names (a module's "weight" and "bias"), where it gives them
        given = node.metadata.get("input_names")
        if isinstance(given, list) and len(given) == len(node.inputs):
            names = [n if isinstance(n, str) else "" for n in given]
    tensors = graph.tensors
    return tuple(
        elide(f"{names[k] or f'in{k}'} {shape_text(tensors[node.inputs[k]])}") for k in weights
    )


def weight_rows(
    graph: Graph, node_items: np.ndarray, is_group: np.ndarray, folded: np.ndarray
) -> list[tuple[str, ...]]:
    """For each item node, one ``role shape`` text per folded tensor it reads (``folded``:
    per tensor; weights and made constants), in input order.

    The role is the input's formal name in the operator's ONNX schema (``W``, ``B``), else the
    name the format gave (metadata ``input_names``), else its input position (``in2``); a
    collapsed group lists none, so that a group never draws its
    weights one by one.
    """
    return [() if is_group[i] else rows_of(graph, i, folded) for i in node_items.tolist()]


def elide(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the last of them an ellipsis when it was longer.

    Line breaks become spaces, since a label is one line.
    """
    if len(text) > limit:
        text = text[: limit - 1] + ELLIPSIS
    return text.replace("\n", " ").replace("\r", " ") if "\n" in text or "\r" in text else text


def frame_title(graph: Graph, g: int) -> str:
    node = graph.nodes[g]
    name = str(node.metadata.get("name") or node.id)
    blocks = node.metadata.get("repeated_blocks")  # a weights file's numbered family
    if isinstance(blocks, int) and node.metadata.get("derived") == "weights":
        kinds = node.metadata.get("block_kinds")
        alike = f"of {kinds} kinds" if isinstance(kinds, int) else "alike"
        return f"{elide(name)}  ({blocks} blocks {alike})"
    if node.op_type in ("Scope", "Section", name):
        return elide(name)
    return f"{elide(name)}  ({elide(node.op_type, LABEL_CHARS // 2)})"
