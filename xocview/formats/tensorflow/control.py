"""TF2 functional control flow: ``While`` as an ONNX Loop, ``If`` as an ONNX If.

A ``While`` calls its ``cond`` function on the loop values and, while it is true, its ``body``
function for the next values; an ONNX Loop has one body that gives the next condition with
the next values. So ``cond`` is built twice: once on the initial values (beside the Loop, in
the While's group) and once on the body's results (inside the Loop's body). A loop value the
body gives back unchanged (a captured tensor or weight) is read from the outer graph, so its
constants stay constants for the mappings. ``If`` builds both branches on the op's inputs as
outer values (captures). Each body is built by the same builder as the rest of the graph and
lowered with it; its nodes are marked with the body they belong to (``subgraph``), so a user
opens the loop as a group. Control flow inside a body, or ``Case``, stays an unmapped node
that names why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from xocview.formats.tensorflow.refs import output_meta
from xocview.model import Node, Tensor

if TYPE_CHECKING:
    from xocview.formats.tensorflow.build import Builder

__all__ = ["CONTROL_OPS", "body_ids", "write_control"]

CONTROL_OPS = frozenset({"While", "StatelessWhile", "If", "StatelessIf", "Case", "StatelessCase"})
_BOOL = 10  # DataType DT_BOOL


class _Refused(Exception):
    """The op is left a TensorFlow node; the message says why."""


def write_control(
    b: Builder, nd: Any, node_id: str, io: tuple[list[int], list[int]], meta: dict[str, Any]
) -> bool:
    """Write ``nd`` as a Loop or If with its bodies (True), or mark why not (False)."""
    try:
        if nd.op.endswith("Case"):
            raise _Refused("Case (a switch over several branches) is not mapped")
        if b.control:
            raise _Refused("control flow inside a loop or branch body is not mapped")
        if "Tcond" in nd.attr and nd.attr["Tcond"].type != _BOOL:
            raise _Refused("a predicate that is not a bool is not mapped")
        names = ("cond", "body") if nd.op.endswith("While") else ("then_branch", "else_branch")
        fs = [_function(b, nd, n) for n in names]
    except _Refused as e:
        meta["not_mapped"] = f"{nd.op}: {e}"
        return False
    group = {k: v for k, v in meta.items() if k != "domain"}
    b.control.append(node_id)
    try:
        if nd.op.endswith("While"):
            _while(b, nd, node_id, io, group, fs)
        else:
            _if(b, nd, node_id, io, group, fs)
    finally:
        b.control.pop()
    return True


def _function(b: Builder, nd: Any, attr: str) -> Any:
    name = nd.attr[attr].func.name if attr in nd.attr else ""
    f = b.functions.get(name)
    if f is None:
        raise _Refused(f"its {attr} {name!r} is no function of the library")
    return f


def _outputs(b: Builder, nd: Any, node_id: str, outputs: list[int], count: int) -> None:
    """Tensors for the op's outputs that no node reads (ONNX's Loop and If give them all)."""
    for k in range(len(outputs), count):
        shape, dtype = output_meta(nd, k)
        b.tensors.append(Tensor(b._tensor_id(f"{node_id}:{k}"), "activation", shape, dtype))
        outputs.append(len(b.tensors) - 1)


def _formal(b: Builder, name: str, like: Tensor | None, dtype: str = "") -> int:
    shape = list(like.shape) if like is not None else []
    kind_dtype = dtype or (like.dtype if like is not None else "undefined")
    b.tensors.append(Tensor(b._tensor_id(name), "activation", shape, kind_dtype))
    return len(b.tensors) - 1


def _built(b: Builder, f: Any, ins: list[int], parent: str, prefix: str, body: str) -> list[int]:
    """``f`` built on ``ins`` under ``parent``, its top nodes marked as of body ``body`` (none:
    the While's first condition, run in the outer graph)."""
    mark = len(b.nodes)
    out = b.call(f, ins, parent, prefix, len(f.signature.output_arg))
    for n in b.nodes[mark:]:
        if not body:
            continue
        b.in_body.add(n.id)
        if n.metadata.get("parent_id") == parent:
            n.metadata["subgraph"] = body
    return out


def _passes(f: Any) -> set[int]:
    """The loop values ``f`` (a While body) gives back as they came."""
    sig = f.signature
    args = [a.name for a in sig.input_arg]
    same = set()
    for k, out_arg in enumerate(sig.output_arg):
        ret = f.ret.get(out_arg.name, "")
        if k < len(args) and ret == args[k]:
            same.add(k)
    return same


def _while(
    b: Builder,
    nd: Any,
    node_id: str,
    io: tuple[list[int], list[int]],
    group: dict[str, Any],
    fs: list[Any],
) -> None:
    cond_f, body_f = fs
    ins, outs = io
    n = len(ins)
    sizes = [len(f.signature.input_arg) for f in fs] + [len(body_f.signature.output_arg)]
    if sizes != [n, n, n] or len(cond_f.signature.output_arg) != 1:
        raise _bad(b, nd, "its cond and body do not take and give its loop values")
    _outputs(b, nd, node_id, outs, n)
    b.nodes.append(Node(node_id, nd.op, [], [], {}, {**group, "derived": "tensorflow"}))
    first = _built(b, cond_f, ins, node_id, f"{node_id}/cond0/", "")
    loop_id = b._node_id(f"{node_id}/Loop")
    loop = Node(loop_id, "Loop", [first[0], *ins], list(outs), {}, {"parent_id": node_id})
    loop.metadata["omitted_inputs"] = [0]
    b.nodes.append(loop)
    b.in_body.add(loop_id)
    same = _passes(body_f)
    formal = [_formal(b, f"{loop_id}/iteration", None, "int64")]
    formal.append(_formal(b, f"{loop_id}/condition", None, "bool"))
    values = [_formal(b, f"{loop_id}/in:{k}", b.tensors[t]) for k, t in enumerate(ins)]
    bound = [ins[k] if k in same else values[k] for k in range(n)]
    made = _built(b, body_f, bound, loop_id, f"{loop_id}/body/", "body")
    nxt = [ins[k] if k in same else made[k] for k in range(n)]
    again = _built(b, cond_f, nxt, loop_id, f"{loop_id}/cond/", "body")
    results = [values[k] if k in same else made[k] for k in range(n)]
    loop.attributes["body"] = {
        "graph": "body",
        "inputs": [*formal, *values],
        "outputs": [again[0], *results],
    }


def _if(
    b: Builder,
    nd: Any,
    node_id: str,
    io: tuple[list[int], list[int]],
    group: dict[str, Any],
    fs: list[Any],
) -> None:
    ins, outs = io
    if not ins:
        raise _bad(b, nd, "it has no condition input")
    counts = {len(f.signature.output_arg) for f in fs}
    if len(counts) != 1 or any(len(f.signature.input_arg) != len(ins) - 1 for f in fs):
        raise _bad(b, nd, "its branches do not take its inputs and give as many results")
    _outputs(b, nd, node_id, outs, counts.pop())
    node = Node(node_id, "If", [ins[0]], list(outs), {}, group)
    b.nodes.append(node)
    for attr, f in zip(("then_branch", "else_branch"), fs, strict=True):
        made = _built(b, f, ins[1:], node_id, f"{node_id}/{attr}/", attr)
        node.attributes[attr] = {"graph": attr, "inputs": [], "outputs": made}


def _bad(b: Builder, nd: Any, problem: str) -> Exception:
    from xocview.errors import FormatError

    return FormatError(b.file, f"node {nd.name!r} ({nd.op})", problem)


def body_ids(nodes: list[Node], tensors: list[Tensor], chase: Callable[[int], int]) -> None:
    """The bodies' inputs and outputs, kept as positions while building, as tensor ids."""
    for n in nodes:
        for value in n.attributes.values():
            if isinstance(value, dict) and "graph" in value:
                for key in ("inputs", "outputs"):
                    value[key] = [tensors[chase(t)].id for t in value[key]]
