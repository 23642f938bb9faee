"""LightNet JSON IR (specs/lightnet-json-ir.md): the reader the registry calls.

``check`` type-checks the ops array, ``build`` links the checked ops into the shared model (its
docstring gives the rules: which ops become nodes, which tensors weights, what warns).
"""

from __future__ import annotations

from typing import Any

from xocview.formats.lightnet.build import Builder
from xocview.formats.lightnet.check import Checker
from xocview.formats.source import Source
from xocview.formats.unread_keys import unread_keys
from xocview.model import Finding, Graph
from xocview.model.dotted import (
    expand_dotted_if_possible,
)
from xocview.model.gc_pause import gc_paused

__all__ = ["EXTENSIONS", "NAME", "load", "read_findings", "sniff"]

NAME = "LightNet JSON IR"
EXTENSIONS = (".json",)
EXPANDS_DOTTED_KEYS = True  # params and extra fields go through _expanded


def sniff(source: Source) -> str | None:
    """None when the file is LightNet IR, else why not: an ``ops`` array is its only mark."""
    if not source.looks_like_json():
        return "not a JSON object"
    root = source.json
    if not isinstance(root, dict):
        return "the JSON root is not an object"
    for key in ("tensors", "nodes", "operators"):
        if key in root:
            return f"has a '{key}' list (XOC or NNVM JSON), which LightNet IR does not"
    if "ops" not in root:
        return "no 'ops' list at the root"
    return None


def load(source: Source) -> Graph:
    """The graph in a LightNet IR file; FormatError names the first fault and its JSON path."""
    return read_findings(source)[0]


def read_findings(source: Source) -> tuple[Graph, list[Finding]]:
    """The graph and its warnings (undefined tensors, renamed ops, empty tensor names)."""
    with gc_paused():
        ops, extra = Checker(source.name).document(source.json)
        name = source.path.stem
        graph, found = Builder(
            source.name, Graph(name, name, metadata=expand_dotted_if_possible(extra))
        ).build(ops)
    return graph, _unread(source.json["ops"]) + found


# Keys of an op's tensor and param entries; the ops' own other keys are kept as metadata.
_ENTRY_KEYS = {
    "tensors_in": frozenset({"arg_name", "name"}),
    "tensors_out": frozenset({"arg_name", "name"}),
    "params": frozenset({"arg_name", "value"}),
}


def _unread(ops: list[dict[str, Any]]) -> list[Finding]:
    """A warning for each key of a tensor or param entry that reading passes over."""
    found: list[Finding] = []
    for i, op in enumerate(ops):
        for field, known in _ENTRY_KEYS.items():
            entries = ((f"ops[{i}].{field}[{k}]", e) for k, e in enumerate(op.get(field, ())))
            found += [
                Finding("warning", place, "unknown key, ignored")
                for place in unread_keys(entries, known)
            ]
    return found
