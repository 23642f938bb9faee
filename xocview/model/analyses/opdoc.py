"""An operator's ONNX schema for people: input and output roles, and its documentation.

Read from ``onnx.defs`` at the version the model imports (the newest when the graph names no
opset, as NNVM and LightNet files do not); an operator that no ONNX domain defines has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from xocview.model.graph import Graph

__all__ = ["Formal", "OpDoc", "node_doc", "op_doc", "opset_of", "roles"]

_DOC_CHARS = 600  # the first paragraph, cut at a sentence end near this length


@dataclass(frozen=True)
class Formal:
    """A formal input or output: ``name`` ("X", "W", "B") and ``option``: "single",
    "optional" or "variadic"."""

    name: str
    option: str


@dataclass(frozen=True)
class OpDoc:
    """What the schema says of an operator: the version that applies, its formals, its doc."""

    op_type: str
    domain: str  # "ai.onnx" for the default domain
    since_version: int
    summary: str  # the first paragraph of the documentation, whitespace collapsed
    inputs: tuple[Formal, ...]
    outputs: tuple[Formal, ...]


def _formals(params: Any) -> tuple[Formal, ...]:
    return tuple(Formal(p.name, str(p.option).rsplit(".", 1)[-1].lower()) for p in params)


def _summary(doc: str) -> str:
    """The first paragraph (markdown headings, code fences and blank lines end it)."""
    paragraph: list[str] = []
    for line in doc.strip().splitlines():
        text = line.strip()
        if not text or text.startswith(("#", "```", "|")):
            if paragraph:
                break
            continue
        paragraph.append(text)
    summary = re.sub(r"\s+", " ", " ".join(paragraph))
    if len(summary) > _DOC_CHARS:
        cut = summary.rfind(". ", 0, _DOC_CHARS)
        summary = summary[: cut + 1] if cut > 0 else summary[:_DOC_CHARS] + "..."
    return summary


@lru_cache(maxsize=512)
def op_doc(op_type: str, domain: str = "", opset: int | None = None) -> OpDoc | None:
    """The schema of ``op_type`` in ``domain`` ("" or "ai.onnx": the default) at ``opset``
    (None: the newest); None when no such operator or version exists."""
    import onnx.defs

    onnx_domain = "" if domain in ("", "ai.onnx") else domain
    if opset is not None:
        opset = min(opset, 2**31 - 1)  # a damaged file's version: onnx takes an int32
    try:
        if opset is None:
            schema = onnx.defs.get_schema(op_type, onnx_domain)
        else:
            schema = onnx.defs.get_schema(op_type, opset, onnx_domain)
    except (onnx.defs.SchemaError, TypeError, ValueError):
        return None
    return OpDoc(
        op_type,
        schema.domain or "ai.onnx",
        int(schema.since_version),
        _summary(schema.doc or ""),
        _formals(schema.inputs),
        _formals(schema.outputs),
    )


def opset_of(graph: Graph, domain: str = "") -> int | None:
    """The version of ``domain`` the graph imports (ONNX ``opset_import``), else None."""
    wanted = {"", "ai.onnx"} if domain in ("", "ai.onnx") else {domain}
    imports = graph.metadata.get("opset_import")
    for entry in imports if isinstance(imports, list) else []:
        if isinstance(entry, dict) and entry.get("domain", "") in wanted:
            version = entry.get("version")
            if isinstance(version, int) and not isinstance(version, bool):
                return version
    return None


def node_doc(graph: Graph, node_index: int) -> OpDoc | None:
    """The schema of a node's operator at the opset its graph imports; None for an operator
    ONNX does not define. Raises IndexError for a bad index."""
    node = graph.nodes[node_index]
    domain = node.metadata.get("domain", "")
    domain = domain if isinstance(domain, str) else ""
    opset = opset_of(graph, domain)
    return op_doc(node.op_type, domain, opset) or op_doc(node.op_type, domain)


def roles(formals: tuple[Formal, ...], count: int, omitted: Any = ()) -> list[str]:
    """The formal name of each of ``count`` actual inputs (or outputs).

    ``omitted`` lists the schema positions left out (the ONNX loader records them as
    ``omitted_inputs``), so that the tensors after an omitted optional input keep their roles.
    A variadic formal takes every remaining tensor, numbered ("inputs[0]", "inputs[1]"); a
    tensor beyond the formals gets "".
    """
    skip = {p for p in omitted if isinstance(p, int)} if isinstance(omitted, list) else set()
    out: list[str] = []
    position = 0
    while len(out) < count:
        if position in skip:
            position += 1
            continue
        if position < len(formals) and formals[position].option != "variadic":
            out.append(formals[position].name)
        elif formals and formals[-1].option == "variadic" and position >= len(formals) - 1:
            out.append(f"{formals[-1].name}[{position - len(formals) + 1}]")
        else:
            out.append("")
        position += 1
    return out
