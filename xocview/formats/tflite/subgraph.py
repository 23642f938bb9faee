"""One TFLite subgraph as a Graph: its tensors, and each operator written as the ONNX ops of
its mapping (one node, or a group of them marked ``derived: "tflite"``) or, when it has none,
as a node of domain ``tflite`` under its builtin name, which the executor refuses by name.
"""

from __future__ import annotations

from typing import Any

from xocview.formats.onnx_emit import placed
from xocview.formats.tflite.flat import Flat
from xocview.formats.tflite.lower import Lower, NotMapped
from xocview.formats.tflite.ops import mapping, quant_params
from xocview.formats.tflite.options import builtin_options
from xocview.formats.tflite.tensors import read_tensors
from xocview.model import Graph, Node, Tensor

__all__ = ["build_graph", "subgraph_summary"]

# What a mapping raises when the file's operands do not fit it (a rank it did not expect, a
# constant of another size): the operator stays unmapped rather than failing the load.
_CONTROL = frozenset({"WHILE", "IF"})
_QUANT_OPS = frozenset({"QUANTIZE", "DEQUANTIZE"})
_QUANT_TYPES = frozenset({"int8", "uint8", "int16", "int32"})
_ARGUMENT_ERRORS = (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError)


def build_graph(
    flat: Flat,
    model: Any,
    k: int,
    codes: list[tuple[str, bool]],
    nbuffers: int,
    title: str,
    control: Any = None,
) -> Graph:
    """Subgraph ``k`` as a graph; ``control`` writes WHILE and IF with the subgraphs they call."""
    place = f"subgraphs[{k}]"
    sg = flat.item(place, model.Subgraphs, k)
    if sg is None:
        raise flat.error(place, "the subgraph table is missing")
    tensors, _ = read_tensors(flat, model, sg, place, nbuffers)
    n = len(tensors)
    inputs = _indices(flat, f"{place}.inputs", sg.InputsAsNumpy, sg.InputsLength, n)
    outputs = _indices(flat, f"{place}.outputs", sg.OutputsAsNumpy, sg.OutputsLength, n)
    for t in inputs:
        tensors[t].kind = "input" if not tensors[t].has_data else tensors[t].kind
    for t in outputs:
        tensors[t].kind = "output"
    nodes: list[Node] = []
    ids: set[str] = set()
    for j in range(flat.count(f"{place}.operators", sg.OperatorsLength)):
        _operator(flat, sg, j, f"{place}.operators[{j}]", codes, tensors, nodes, ids, control)
    name = flat.text(f"{place}.name", sg.Name)
    metadata: dict[str, Any] = {"tflite_subgraph": {"index": k, "name": name}} if name else {}
    return Graph(title, title, tensors, nodes, inputs, outputs, metadata)


def subgraph_summary(
    flat: Flat, model: Any, k: int, codes: list[tuple[str, bool]]
) -> dict[str, Any]:
    """A body subgraph as metadata: its name, sizes and operators by name."""
    place = f"subgraphs[{k}]"
    sg = flat.item(place, model.Subgraphs, k)
    ops = []
    for j in range(flat.count(f"{place}.operators", sg.OperatorsLength)):
        op = flat.item(f"{place}.operators[{j}]", sg.Operators, j)
        code = flat.get(f"{place}.operators[{j}].opcode_index", op.OpcodeIndex)
        ops.append(codes[code][0] if 0 <= code < len(codes) else f"opcode {code}")
    ntensors = flat.count(f"{place}.tensors", sg.TensorsLength)
    return {
        "index": k,
        "name": flat.text(f"{place}.name", sg.Name),
        "inputs": flat.ints(f"{place}.inputs", sg.InputsAsNumpy, sg.InputsLength),
        "outputs": flat.ints(f"{place}.outputs", sg.OutputsAsNumpy, sg.OutputsLength),
        "tensors": ntensors,
        "operators": ops,
    }


def _indices(flat: Flat, place: str, read: Any, length: Any, n: int) -> list[int]:
    """Tensor indices, each checked to name a tensor (-1: an omitted optional input)."""
    values = flat.ints(place, read, length)
    for j, v in enumerate(values):
        if v < -1 or v >= n:
            raise flat.error(f"{place}[{j}]", f"tensor {v} does not exist", f"-1 or below {n}")
    return values


def _operator(
    flat: Flat,
    sg: Any,
    j: int,
    place: str,
    codes: list[tuple[str, bool]],
    tensors: list[Tensor],
    nodes: list[Node],
    ids: set[str],
    control: Any = None,
) -> None:
    op = flat.item(place, sg.Operators, j)
    if op is None:
        raise flat.error(place, "the operator table is missing")
    code = flat.get(f"{place}.opcode_index", op.OpcodeIndex)
    if not 0 <= code < len(codes):
        raise flat.error(
            f"{place}.opcode_index", f"{code} names no operator code", f"below {len(codes)}"
        )
    name, custom = codes[code]
    n = len(tensors)
    ins = _indices(flat, f"{place}.inputs", op.InputsAsNumpy, op.InputsLength, n)
    outs = [o for o in _indices(flat, f"{place}.outputs", op.OutputsAsNumpy, op.OutputsLength, n)]
    if -1 in outs:
        raise flat.error(f"{place}.outputs", "an output is -1", "tensor indices")
    options = {} if custom else builtin_options(flat, place, op)
    node_id = _unique(f"{name.lower()}_{j}", ids)
    metadata: dict[str, Any] = {"tflite": {"op": name, "index": j}}
    if options:
        metadata["tflite"]["options"] = options
    if custom:
        metadata["tflite"]["custom"] = True
    present: list[int | None] = [t if t >= 0 else None for t in ins]
    if control is not None and not custom and name in _CONTROL:
        marks = len(tensors), len(nodes)
        try:
            if control(name, node_id, [t for t in ins if t >= 0], outs, metadata, tensors, nodes):
                return
        except NotMapped as e:
            del tensors[marks[0] :], nodes[marks[1] :]
            metadata["not_mapped"] = str(e)
    lower = None if custom else mapping(name)
    if lower is not None:
        try:
            _lowered(lower, tensors, node_id, present, outs, options, metadata, nodes, ids)
            return
        except NotMapped as e:
            metadata["not_mapped"] = str(e)
        except _ARGUMENT_ERRORS:
            metadata["not_mapped"] = "its operands do not fit the mapping"
    metadata["domain"] = "tflite"
    if -1 in ins:
        metadata["omitted_inputs"] = [k for k, t in enumerate(ins) if t < 0]
    nodes.append(Node(node_id, name, [t for t in ins if t >= 0], outs, {}, metadata))


def _lowered(
    lower: Any,
    tensors: list[Tensor],
    node_id: str,
    ins: list[int | None],
    outs: list[int],
    options: dict[str, Any],
    metadata: dict[str, Any],
    nodes: list[Node],
    ids: set[str],
) -> None:
    """Write the mapping's ONNX ops, or leave the graph as it was and raise."""
    mark = len(tensors)
    e = Lower(tensors, node_id, ins, outs, options)
    try:
        quantized = metadata["tflite"]["op"] not in _QUANT_OPS and _float_around(e)
        lower(e)
        if not e.nodes:
            raise NotMapped("the mapping wrote no operator")
        if quantized:
            for o, q in zip(e.outs, outs, strict=True):
                if o != q:
                    scale, zero, axis = quant_params(e, q)
                    e.op("QuantizeLinear", [o, scale, zero], axis, out=[q])
    except BaseException:
        del tensors[mark:]
        raise
    # one TFLite operator: one ONNX node, or a group of them marked derived "tflite"
    nodes.extend(placed(e.nodes, node_id, metadata["tflite"]["op"], metadata, "tflite", ids))


def _float_around(e: Lower) -> bool:
    """Run an operator on quantized tensors as its float kernel: DequantizeLinear on each
    quantized input, QuantizeLinear into each quantized output. False when none is."""

    def quantized(t: int | None) -> bool:
        if t is None:
            return False
        tensor = e.tensors[t]
        return tensor.dtype in _QUANT_TYPES and bool(
            tensor.metadata.get("quantization", {}).get("scale")
        )

    if not any(quantized(t) for t in [*e.ins, *e.outs]):
        return False
    ins: list[int | None] = []
    for t in e.ins:
        if t is not None and quantized(t):
            scale, zero, axis = quant_params(e, t)
            real = _float_like(e, t, "dequantized")
            t = e.op1("DequantizeLinear", [t, scale, zero], attrs=axis, out=[real])
        ins.append(t)
    outs = [_float_like(e, t, "float") if quantized(t) else t for t in e.outs]
    e.ins, e.outs = ins, outs
    return True


def _float_like(e: Lower, t: int, label: str) -> int:
    """A float32 tensor of ``t``'s shape (and shape signature)."""
    like = e.tensors[t]
    made = e.fresh(label, "float32", list(like.shape))
    if "shape_signature" in like.metadata:
        e.tensors[made].metadata["shape_signature"] = like.metadata["shape_signature"]
    return made


def _unique(wanted: str, ids: set[str]) -> str:
    got, k = wanted, 1
    while got in ids:
        k += 1
        got = f"{wanted}_{k}"
    ids.add(got)
    return got
