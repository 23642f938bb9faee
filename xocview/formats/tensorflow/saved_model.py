"""A SavedModel as the graph its serving signature computes, variables bound to their values.

In a TF2 SavedModel the signature's call (``StatefulPartitionedCall``) takes the inputs and,
after them, one VarHandleOp per captured variable; the object graph says which saved object
each capture is (``concrete_functions[f].bound_inputs``) and the checkpoint's object graph,
node for node the same, gives that object's ``checkpoint_key`` in ``variables/``. A TF1
SavedModel keys its variables by their names, which VarHandleOp's ``shared_name`` holds.
"""

from __future__ import annotations

from typing import Any

from xocview.errors import FormatError
from xocview.formats.source import Source
from xocview.formats.tensorflow.build import Builder
from xocview.formats.tensorflow.bundle import OBJECT_GRAPH_KEY, Bundle
from xocview.formats.tensorflow.mapping import lower_graph
from xocview.formats.tensorflow.refs import parse_ref
from xocview.model import Graph, Tensor
from xocview.model.bodies import mark_body_inputs
from xocview.model.unread import drop_unread_weights

__all__ = ["saved_model_graph"]

_SERVING = "serving_default"
_VALUE = "VARIABLE_VALUE"
_VARIABLE_OPS = frozenset({"VarHandleOp", "VariableV2", "Variable"})


def saved_model_graph(sm: Any, source: Source) -> Graph:
    """The first MetaGraph's serving signature (or its whole graph when it has none)."""
    if not sm.meta_graphs:
        raise FormatError(source.name, "meta_graphs", "the SavedModel holds no MetaGraph")
    mg = sm.meta_graphs[0]
    gd = mg.graph_def
    names = sorted(k for k in mg.signature_def if not k.startswith("__"))
    key = _SERVING if _SERVING in mg.signature_def else (names[0] if names else None)
    sig = mg.signature_def[key] if key is not None else None
    bundle = _bundle(source)
    keys = _checkpoint_keys(mg, bundle) if bundle is not None else {}
    b = Builder(source.name, gd.library, _variables(bundle, keys))
    wanted = _signature_tensors(sig, source.name, key) if sig is not None else None
    defs = _needed(gd.node, [r for r, _ in wanted]) if wanted else list(gd.node)
    if not defs:
        raise FormatError(source.name, "meta_graphs[0].graph_def", "the graph has no node")
    outs = b.level(defs, "meta_graphs[0].graph_def.node")
    outputs = (
        [outs[r.node][r.k] for r, _ in wanted if r.k < len(outs[r.node])] if wanted else b.sinks()
    )
    tensors, nodes, inputs, outputs = b.finish(outputs)
    if sig is not None and wanted:
        _signature_names(tensors, sig, inputs, outputs, [n for _, n in wanted])
    title = (
        source.path.parent.name if source.path.name.startswith("saved_model") else source.path.stem
    )
    info: dict[str, Any] = {"tags": list(mg.meta_info_def.tags), "signatures": names}
    if key is not None:
        info["signature"] = key
    if mg.meta_info_def.tensorflow_version:
        info["tensorflow_version"] = mg.meta_info_def.tensorflow_version
    info["variables"] = len(keys) if bundle is not None else "no variables/ folder"
    meta = {"opset_import": [{"domain": "", "version": 20}], "tensorflow": info}
    graph = lower_graph(Graph(title, title or "saved_model", tensors, nodes, inputs, outputs, meta))
    drop_unread_weights(graph)  # Consts the mappings took into attributes
    mark_body_inputs(graph)  # Loop and If body inputs, as ONNX bodies have them
    return graph


def _bundle(source: Source) -> Bundle | None:
    folder = source.path.parent
    if not (folder / "variables" / "variables.index").is_file():
        return None
    return Bundle(folder)


def _signature_tensors(sig: Any, file: str, key: str | None) -> list[tuple[Any, str]]:
    """The signature's output tensors as refs, with their signature names."""
    out = []
    for name in sorted(sig.outputs):
        r = parse_ref(sig.outputs[name].name)
        if r is None:
            raise FormatError(file, f"signature_def[{key}].outputs[{name}]", "names no tensor")
        out.append((r, name))
    return out


def _signature_names(
    tensors: list[Tensor], sig: Any, inputs: list[int], outputs: list[int], names: list[str]
) -> None:
    """Name the graph's inputs and outputs by their signature keys (``image``, ``output_0``)
    rather than the exporter's node names, where no other tensor has that name."""
    placeholders = {parse_ref(sig.inputs[k].name): k for k in sig.inputs}
    by_node = {r.node: k for r, k in placeholders.items() if r is not None}
    taken = {t.id for t in tensors}
    renames = [(i, by_node.get(tensors[i].id)) for i in inputs]
    renames += list(zip(outputs, names, strict=False))
    for i, name in renames:
        if name and name not in taken:
            tensors[i].metadata["tf_name"] = tensors[i].id
            taken.discard(tensors[i].id)
            tensors[i].id = name
            taken.add(name)


def _needed(defs: Any, wanted: list[Any]) -> list[Any]:
    """The NodeDefs the wanted tensors depend on, in file order (the saver's functions and
    initialisers of a SavedModel are left out)."""
    by_name = {nd.name: nd for nd in defs}
    keep: set[str] = set()
    stack = [r.node for r in wanted]
    while stack:
        name = stack.pop()
        if name in keep or name not in by_name:
            continue
        keep.add(name)
        for text in by_name[name].input:
            r = parse_ref(text)
            if r is not None and not r.control:
                stack.append(r.node)
    return [nd for nd in defs if nd.name in keep]


def _checkpoint_keys(mg: Any, bundle: Bundle) -> dict[str, str]:
    """Checkpoint key by VarHandleOp name: through the calls' bound inputs (TF2), else by
    the variable's own name when the bundle holds it (TF1)."""
    out: dict[str, str] = {}
    known = set(bundle.keys())
    for nd in mg.graph_def.node:
        if nd.op in _VARIABLE_OPS:
            shared = (
                nd.attr["shared_name"].s.decode("utf-8", "replace")
                if "shared_name" in nd.attr
                else ""
            )
            for name in (shared, nd.name):
                if name in known:
                    out[nd.name] = name
                    break
    if OBJECT_GRAPH_KEY not in known:
        return out
    objects = mg.object_graph_def
    ckpt = bundle.object_graph()
    for nd in mg.graph_def.node:
        if nd.op not in ("StatefulPartitionedCall", "PartitionedCall") or "f" not in nd.attr:
            continue
        fn = objects.concrete_functions.get(nd.attr["f"].func.name)
        if fn is None or not fn.bound_inputs:
            continue
        captures = [parse_ref(t) for t in nd.input if not t.startswith("^")]
        for ref, node_id in zip(captures[-len(fn.bound_inputs) :], fn.bound_inputs, strict=False):
            key = _value_key(ckpt, node_id)
            if ref is not None and key is not None:
                out[ref.node] = key
    return out


def _value_key(ckpt: Any, node_id: int) -> str | None:
    if not 0 <= node_id < len(ckpt.nodes):
        return None
    for attr in ckpt.nodes[node_id].attributes:
        if attr.name == _VALUE:
            return str(attr.checkpoint_key)
    return None


def _variables(bundle: Bundle | None, keys: dict[str, str]) -> Any:
    """The hook that gives a VarHandleOp its variable as a weight read on first use."""
    if bundle is None:
        return None

    def variable(nd: Any) -> Tensor | None:
        key = keys.get(nd.name)
        if key is None:
            return None
        e = bundle.entry(key)
        shape = [int(d) for d in e.shape] if e.shape is not None else []
        meta = {"checkpoint_key": key}
        return Tensor(nd.name, "weight", shape, e.dtype, meta, lambda: bundle.array(key))

    return variable
