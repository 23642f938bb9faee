"""Graphs written as ONNX models: the edited graph with its weights, checked, saved atomically.

What is written: the operators in topological order; function calls as calls of functions
rebuilt from their bodies; If/Loop/Scan with bodies rebuilt from their children (so edits
inside are saved); groups that stand for nothing in ONNX (scopes, the user's groups) are not
written. Weights with values become initializers: inline, or as external data in a data file
beside the model (``<model>.data`` or, when that name is taken, ``<model>.<n>.data``: see
``model_files``) when the source kept them external or the model would be too big for one
protobuf, each of at least ``EXTERNAL_THRESHOLD`` bytes. Opset imports, IR
version, producer, doc strings and metadata_props are kept; metadata ONNX has no field for
goes to one metadata_props entry (``sidecar``), which the reader puts back.

The model must pass ``onnx.checker.check_model(full_check=True)`` before anything is
written; then ``model_files`` writes a new data file and replaces the model, so that a kill
at any point leaves the old pair or the new. ``save`` returns notes of what the file could
not keep (weights without values, groups), for the CLI to print and the window to show.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import BinaryIO

import onnx

from xocview.errors import FormatError, shorten
from xocview.formats.onnx.assemble import Assembler, prop_items
from xocview.formats.onnx.data import needed_bytes
from xocview.formats.onnx.expansion import kept_functions, plan
from xocview.formats.onnx.model_files import data_header, write_model_files
from xocview.formats.onnx.nesting import Nesting
from xocview.formats.onnx.opsets import ir_version, model_opsets, opset_domain
from xocview.formats.onnx.sidecar import KEY, pack
from xocview.formats.onnx.stale_types import settle_types
from xocview.formats.onnx.types import weightless_copy
from xocview.formats.onnx.value_protos import dtype_code, weight_proto
from xocview.model import Graph
from xocview.model.gc_pause import gc_paused

__all__ = ["EXTERNAL_THRESHOLD", "INLINE_LIMIT", "save"]

# A weight of at least this many bytes may go to the external data file (onnx's own
# convert_model_to_external_data threshold); smaller ones always stay inline.
EXTERNAL_THRESHOLD = 1024
# Inline weights beyond this many bytes in all would take the model near protobuf's 2 GiB
# limit: then every weight above the threshold goes to the external data file.
INLINE_LIMIT = 1 << 30
_ALIGN = 64  # external tensors start at multiples of this, for memory-mapping


def save(graph: Graph, path: str | Path) -> list[str]:
    """Write ``graph`` as an ONNX model at ``path``; returns notes of what it could not keep.

    Raises FormatError naming the node (or tensor) when the graph cannot be ONNX (an op with
    no ONNX operator, a value of no ONNX type, a failed check) or the file cannot be written;
    nothing is written then.
    """
    path = Path(path)
    file = str(path)
    with gc_paused():  # the protos of a large model are as many objects as the model itself
        nest = Nesting(graph, file)
        asm, model = _assemble(graph, nest, file)
        external = _initializers(model, graph, asm.weights, path)
        settled = settle_types(model, asm.value_infos)
        text = pack(graph, asm.held, list(range(len(graph.tensors))), asm.unnamed)
        if text is not None:
            entry = model.metadata_props.add()
            entry.key, entry.value = KEY, text
        try:
            _require_io_shapes(model, file)
        except FormatError as missing:  # a node the checker refuses says why a shape is gone
            _blame_node(model, file, missing)
            raise
        _check(model, file, infer=not settled.checked)
    written = _write(path, model, graph, external)
    return _notes(graph, nest, asm, settled.stale) + written


def _assemble(graph: Graph, nest: Nesting, file: str) -> tuple[Assembler, onnx.ModelProto]:
    """The model without its initializers, and the assembler that made it."""
    operators = [graph.nodes[i] for i, role in enumerate(nest.role) if role in ("leaf", "holder")]
    opsets = model_opsets(graph, operators, file)
    for i, role in enumerate(nest.role):
        if role == "call":
            domain = graph.nodes[i].metadata["function"].get("domain", "")
            opsets.setdefault(opset_domain(domain if isinstance(domain, str) else ""), 1)
    asm = Assembler(nest, opsets, ir_version(graph, opsets, file))
    model = onnx.ModelProto()
    model.ir_version = asm.ir_version
    asm.main_graph(model.graph)
    model.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in opsets.items())
    model.functions.extend(asm.functions)
    model.functions.extend(kept_functions(graph.metadata, asm.functions))  # unexpanded calls
    _model_fields(model, graph, file)
    return asm, model


def _notes(graph: Graph, nest: Nesting, asm: Assembler, stale: list[str]) -> list[str]:
    """What the file could not keep as it was, one sentence each."""
    notes = list(asm.notes)
    if stale:
        shown = ", ".join(repr(s) for s in stale[:5]) + (", ..." if len(stale) > 5 else "")
        notes.append(
            f"{len(stale)} declared shape{'s' * (len(stale) != 1)} no longer held after the "
            f"edits ({shown}): written as ONNX shape inference gives them"
        )
    groups = [
        nd.id
        for i, nd in enumerate(graph.nodes)
        if nest.role[i] == "group" and "derived" not in nd.metadata
    ]
    if groups:
        notes.append(
            f"{len(groups)} group{'s' * (len(groups) != 1)} with no ONNX meaning (the user's, "
            "or the source format's) not kept: ONNX has no groups"
        )
    return notes


def _model_fields(model: onnx.ModelProto, graph: Graph, file: str) -> None:
    """The model's own fields from the graph's metadata (those it has)."""
    md = graph.metadata
    for key in ("producer_name", "producer_version", "domain", "doc_string"):
        if isinstance(md.get(key), str):
            setattr(model, key, md[key])
    version = md.get("model_version")
    if isinstance(version, int):
        if not -(2**63) <= version < 2**63:
            raise FormatError(
                file,
                "graph metadata 'model_version'",
                f"{shorten(str(version), 40)} does not fit ONNX's model_version",
                "a 64-bit integer",
            )
        model.model_version = version
    props = md.get("metadata_props")
    if isinstance(props, dict):
        for key, value in prop_items(props):
            if key != KEY:
                entry = model.metadata_props.add()
                entry.key, entry.value = key, value


# -- weights ---------------------------------------------------------------------------------

_External = list[tuple[int, int, int]]  # (tensor position, offset, length)


def _initializers(
    model: onnx.ModelProto, graph: Graph, weights: list[int], path: Path
) -> _External:
    """Add the weights with values as initializers: inline ones with their data, external
    ones as references into the data file (its name and their bytes come when it is
    written). Returns what goes into the data file, in order."""
    tensors, file = graph.tensors, str(path)
    sizes = {t: _byte_size(graph, t) for t in weights if tensors[t].has_data}
    big = {t for t, n in sizes.items() if n >= EXTERNAL_THRESHOLD}
    outside = {t for t in big if "external_data" in tensors[t].metadata}
    if sum(sizes.values()) - sum(sizes[t] for t in outside) > INLINE_LIMIT:
        outside = big
    external: _External = []
    offset = len(data_header(path.name))
    for t in sizes:
        tensor = tensors[t]
        if t not in outside:
            model.graph.initializer.append(weight_proto(tensor, tensor.id, file))
            continue
        offset = -(-offset // _ALIGN) * _ALIGN
        init = model.graph.initializer.add()
        init.name = tensor.id
        init.dims.extend(int(d) for d in tensor.shape)
        init.data_type = dtype_code(tensor.dtype)
        init.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", ""), ("offset", offset), ("length", sizes[t])):
            entry = init.external_data.add()
            entry.key, entry.value = key, str(value)
        external.append((t, offset, sizes[t]))
        offset += sizes[t]
    return external


def _byte_size(graph: Graph, t: int) -> int:
    """Bytes a weight's raw data takes (0 for strings, which always stay inline)."""
    tensor = graph.tensors[t]
    code = dtype_code(tensor.dtype)
    if code in (0, onnx.TensorProto.STRING):
        return 0
    return needed_bytes(code, math.prod(int(d) for d in tensor.shape))


# -- check and write -------------------------------------------------------------------------

_NODE_NAME = re.compile(r"node name: ([^)]*)\)")
_CHECK_ERRORS = (
    onnx.checker.ValidationError,
    onnx.shape_inference.InferenceError,
    ValueError,  # what pybind11 makes of some checker errors ("Invalid tensor data type")
    RuntimeError,
    TypeError,
)
# What the checker's messages repeat before the problem itself.
_NOISE = re.compile(r"\[ShapeInferenceError\] Inference error\(s\): |\(op_type:[^)]*\): ")


def _require_io_shapes(model: onnx.ModelProto, file: str) -> None:
    """The checker's rule for the main graph, said with the fix: each input and output has a
    type, and a tensor's type a shape (its rank at least)."""
    g = model.graph
    for kind, values in (("input", g.input), ("output", g.output)):
        for vi in values:
            which = vi.type.WhichOneof("value")
            tensor = (
                getattr(vi.type, which) if which in ("tensor_type", "sparse_tensor_type") else None
            )
            if which is None or (tensor is not None and not tensor.HasField("shape")):
                raise FormatError(
                    file,
                    f"tensor '{vi.name}'",
                    f"the graph {kind} has no known {'type' if which is None else 'shape'}",
                    "a shape on every graph input and output, -1 for an unknown size "
                    f"(set it, e.g. xocview edit --shape {vi.name}=-1,-1)",
                )


def _blame_node(model: onnx.ModelProto, file: str, missing: FormatError) -> None:
    """Raise strict inference's refusal of a node in place of ``missing`` (a graph output
    with no shape), when there is one: an edit that broke a node (a 2-D Conv given two pads)
    left the shapes below it unknown, and the node is what the user has to fix. (The checker
    itself would stop at the missing shape first.)"""
    probe = weightless_copy(model)
    try:
        onnx.shape_inference.infer_shapes(probe, check_type=True, strict_mode=True)
    except _CHECK_ERRORS as e:
        refused = _refusal(e, file)
        if refused.place.startswith("node "):
            raise refused from missing


def _check(model: onnx.ModelProto, file: str, infer: bool = True) -> None:
    """onnx's full check (with strict shape inference) of the model, its large weights
    declared rather than carried; FormatError naming the node it blames. ``infer``: False
    when strict inference already passed on these types (``settle_types``)."""
    probe = weightless_copy(model)
    probe.graph.name = model.graph.name
    probe.metadata_props.extend(model.metadata_props)
    try:
        # Full (with strict inference) unless inference would expand calls past any budget.
        onnx.checker.check_model(probe, full_check=infer and plan(probe).infer)
    except _CHECK_ERRORS as e:
        raise _refusal(e, file) from e


def _refusal(e: Exception, file: str) -> FormatError:
    """The checker's message as a FormatError naming the node it blames."""
    message = str(e).strip()
    found = _NODE_NAME.search(message)
    place = f"node '{found.group(1)}'" if found else ""
    first = next((line for line in message.splitlines() if line.strip()), message)
    detail = _NOISE.sub("", first).strip() or first
    return FormatError(file, place, f"onnx's checker refuses the model: {detail}")


def _write(path: Path, model: onnx.ModelProto, graph: Graph, external: _External) -> list[str]:
    """The data file (when there is one) and the model: the new pair, or the old as it was.
    Returns notes of where the data went when its usual name belongs to another file."""
    if model.ByteSize() >= 1 << 31:  # refused before any file is written
        raise FormatError(str(path), "", "the model is too big for one protobuf (over 2 GiB)")

    def model_for(location: str | None) -> bytes:
        for init in model.graph.initializer:
            if init.data_location == onnx.TensorProto.EXTERNAL and location is not None:
                init.external_data[0].value = location  # "location" comes first
        try:
            return model.SerializeToString()
        except ValueError as e:
            raise FormatError(str(path), "", f"the model is too big for one protobuf ({e})") from e

    def write_data(f: BinaryIO) -> None:
        _write_data(f, graph, external, path)

    return write_model_files(path, model_for, write_data if external else None)


def _write_data(f: BinaryIO, graph: Graph, external: _External, path: Path) -> None:
    at = len(data_header(path.name))  # written by model_files
    for t, offset, length in external:
        tensor = graph.tensors[t]
        raw = weight_proto(tensor, tensor.id, str(path)).raw_data
        if len(raw) != length:
            raise FormatError(
                str(path),
                f"tensor '{tensor.id}'",
                f"its values take {len(raw):,} bytes",
                f"{length:,} bytes for shape {list(tensor.shape)} of {tensor.dtype}",
            )
        f.write(b"\0" * (offset - at))
        f.write(raw)
        at = offset + length
