"""Model Explorer's node data JSON put onto a graph as a named metric (``performance.<name>``).

The format (google-ai-edge/model-explorer, ``node_data_builder.py``) is either one graph's
data, ``{"results": {"<key>": {"value": 12.3, "bgColor": ...}}, "name": ..., "thresholds":
[...], "gradient": [...]}``, or a model's, the same objects by graph id (``{"<graph id>":
{"results": ...}}``). A result's key is a node id or the name of one of the node's output
tensors. Its colours, thresholds and gradient are Model Explorer's styling: xocview colours by
the values with its own heat scale, so they are not read.

Of a model's graphs, the one whose id is the graph's id or name is read; else the only one;
else all of them, a key given twice keeping its first value. The metric is named by
``--source``, else the data's ``name``, else the file's name. A value that is not a number
(Model Explorer also shows strings) cannot be coloured by and is listed as unmatched.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from xocview.errors import FormatError
from xocview.formats.atomic import write_atomic
from xocview.formats.profiles.result import ImportedProfile, source_name, unmatched_by_name
from xocview.formats.source import Source
from xocview.model import Graph
from xocview.model.analyses.metrics import own_metric

__all__ = ["NAME", "read", "sniff", "write"]

NAME = "Model Explorer node data"
_EXPECTED = "Model Explorer node data: {'results': {key: {'value': number}}} or such by graph id"


def _graphs(data: Any) -> dict[str, Any] | None:
    """The graph data by graph id ("" for a file of one graph's data), or None."""
    if not isinstance(data, dict) or not data:
        return None
    if isinstance(data.get("results"), dict) and not isinstance(
        data["results"].get("results"), dict
    ):
        return {"": data}
    if all(isinstance(v, dict) and isinstance(v.get("results"), dict) for v in data.values()):
        return data
    return None


def sniff(source: Source) -> str | None:
    """None when the file is Model Explorer node data, else why not."""
    if not source.looks_like_json():
        return "not a JSON object"
    if _graphs(source.json) is None:
        return "no 'results' object (nor graph ids holding one)"
    return None


def read(source: Source, graph: Graph, name: str | None = None) -> ImportedProfile:
    """The values of the results whose key names a node or an output tensor of one.
    Raises FormatError naming the result that is not ``{"value": ...}``."""
    chosen = _chosen(source, graph)
    first = next(iter(chosen.values()))
    label = name or (first.get("name") if isinstance(first.get("name"), str) else None)
    out = ImportedProfile(NAME, source_name(label or Path(source.name).stem), False)
    out.what = "results"
    lookup = _node_lookup(graph)
    lost: list[tuple[str, float]] = []
    for gid, data in chosen.items():
        for key, result in data["results"].items():
            place = f"{gid}.results.{key}" if gid else f"results.{key}"
            value = _value(result, source.name, place)
            out.events += 1
            node = lookup.get(key)
            if node is None or isinstance(value, str):
                lost.append((key if node is None else f"{key} (not a number: {value!r})", 0.0))
            elif node in out.values:
                lost.append((f"{key} (given again)", value))
            else:
                out.values[node] = value
    out.matched = out.events - len(lost)
    out.unmatched = unmatched_by_name(lost)
    if len(chosen) > 1:
        out.notes.append(f"read the results of {len(chosen)} graphs: {', '.join(chosen)}")
    return out


def _chosen(source: Source, graph: Graph) -> dict[str, Any]:
    graphs = _graphs(source.json)
    if graphs is None:
        raise FormatError(source.name, "", "no 'results' object", _EXPECTED)
    for gid in (graph.id, graph.name):
        if gid in graphs:
            return {gid: graphs[gid]}
    return graphs


def _value(result: Any, file: str, place: str) -> float | str:
    if not isinstance(result, dict) or "value" not in result:
        raise FormatError(file, place, "not an object with a 'value'", "{'value': number}")
    value = result["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise FormatError(file, f"{place}.value", f"{value!r} is not a number", "a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise FormatError(file, f"{place}.value", f"{value!r} is not finite", "a finite number")
    return value if isinstance(value, str) else float(value)


def _node_lookup(graph: Graph) -> dict[str, str]:
    """Result key -> node id: node ids, node names, then output tensor ids."""
    out: dict[str, str] = {}
    for node in graph.nodes:
        out.setdefault(node.id, node.id)
    for node in graph.nodes:
        label = node.metadata.get("name")
        if isinstance(label, str):
            out.setdefault(label, node.id)
    for node in graph.nodes:
        for t in node.outputs:
            if 0 <= t < len(graph.tensors):
                out.setdefault(graph.tensors[t].id, node.id)
    return out


def write(graph: Graph, name: str, path: Path) -> int:
    """Write the metric ``name`` of ``graph``'s nodes (their own ``performance.<name>``) as
    node data, ``{graph id: {"results": {node id: {"value": v}}}}``, which Model Explorer and
    ``read`` take back; returns how many nodes it holds (0: none stores it, nothing
    written)."""
    results = {}
    for node in graph.nodes:
        value = own_metric(node.metadata, name)
        if not math.isnan(value):
            results[node.id] = {"value": value}
    if results:
        text = json.dumps({graph.id: {"results": results}}, indent=1, ensure_ascii=False)
        write_atomic(path, lambda f: f.write(text.encode("utf-8")))
    return len(results)
