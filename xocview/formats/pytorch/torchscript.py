"""TorchScript archives (``torch.jit.save``: ``.pt``, ``.pth``, ``.jit``, ``.ptl``) read
without torch and without running anything: the format contract.

The archive is a zip whose members sit in one folder: ``code/__torch__/...py`` (the modules'
code as TorchScript prints it), ``data.pkl`` (the module objects with their parameters and
buffers, storages in ``data/``), ``constants.pkl`` (``CONSTANTS.cN``, storages in
``constants/``) and, for traced modules, ``traced_inputs.pkl`` (the example inputs' shapes).
The code is parsed with ``ast`` and the top module's ``forward`` walked symbolically
(``torchscript_walk``) into ATen nodes written as ONNX where the ``aten_onnx`` table maps
them, module calls as groups; weights are memory-mapped on first use.
"""

from __future__ import annotations

import ast
from typing import Any

from xocview.errors import FormatError
from xocview.formats.pytorch.pt2_schema import Ref
from xocview.formats.pytorch.torchscript_code import Code, read_code, strip_mangling
from xocview.formats.pytorch.torchscript_graph import ONNX_OPSET, Builder
from xocview.formats.pytorch.torchscript_ops import Unknown
from xocview.formats.pytorch.torchscript_pickles import Pickles, read_pickles
from xocview.formats.pytorch.torchscript_values import Flow, Frame, ModuleValue, Raised
from xocview.formats.pytorch.torchscript_walk import Walker
from xocview.formats.pytorch.unpickle import TensorRecord
from xocview.formats.source import Source
from xocview.formats.zip_members import ZipMembers, is_zip
from xocview.model import Graph

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]

NAME = "TorchScript"
EXTENSIONS = (".pt", ".pth", ".jit", ".ptl")
_TENSOR_TYPES = ("Tensor", "Optional[Tensor]")


def sniff(source: Source) -> str | None:
    """None for a TorchScript archive (a zip with ``<root>/code/`` and ``<root>/data.pkl``),
    else why not."""
    if not is_zip(source.head):
        return "not a zip archive"
    try:
        members = ZipMembers(source.path, source.name)
    except FormatError:
        return "a damaged zip archive"
    try:
        root = members.root
        has_code = any(n.startswith(root + "code/") for n in members.names)
        if has_code and members.has(root + "data.pkl"):
            return None
        return "a zip archive without code/ and data.pkl (not a TorchScript archive)"
    finally:
        members.close()


def load(source: Source) -> Graph:
    """The graph of the archive's top module's ``forward``."""
    members = ZipMembers(source.path, source.name)
    pickles = read_pickles(members)
    code = read_code(members)
    title = source.path.stem or source.path.name
    return build(source.name, code, pickles, title)


def build(file: str, code: Code, pickles: Pickles, title: str) -> Graph:
    top = pickles.module
    qual = type(top).qualname
    cls = code.classes.get(qual)
    if cls is None or "forward" not in cls.methods:
        raise FormatError(
            file,
            "data.pkl",
            f"the top module's class {strip_mangling(qual) or '?'} has no forward in code/",
            "a module class with a forward method",
        )
    fn = cls.methods["forward"]
    b = Builder(file)
    walker = Walker(b, code, pickles, file)
    inputs, args = _inputs(b, fn.node, pickles.traced_inputs)
    frame = Frame({}, fn, None, None, 0)
    try:
        result = walker.call_code(fn, ModuleValue(top, cls, ""), args, {}, frame, fn.node, None)
    except Raised as e:
        raise FormatError(
            file, e.place, f"the model raises here ({e.message[:120]})", "a path that returns"
        ) from None
    except Flow as e:  # break/continue outside a loop, already located by call_code
        raise FormatError(file, fn.place(), f"{e.kind} outside a loop") from None
    except RecursionError:
        raise FormatError(
            file, fn.place(), "code nested too deeply to walk", "TorchScript as torch writes it"
        ) from None
    outputs: list[Ref] = []
    constant: list[Any] = []
    _flatten(result, outputs, constant)
    graph = b.finish(title, inputs, outputs)
    graph.metadata = _metadata(b, walker, pickles, qual, constant)
    return graph


def _inputs(
    b: Builder, fn: ast.FunctionDef, traced: list[Any] | None
) -> tuple[list[Ref], list[Any]]:
    """Graph inputs for forward's tensor parameters: shapes and dtypes of the trace's
    example inputs when the archive has them, else unknown (float32 assumed). Parameters
    with defaults that the trace did not pass keep their defaults (``mask=None``)."""
    inputs: list[Ref] = []
    args: list[Any] = []
    params = fn.args.args[1:]
    first_default = len(params) - len(fn.args.defaults)
    for k, p in enumerate(params):
        kind = ast.unparse(p.annotation) if p.annotation is not None else "Tensor"
        traced_it = traced is not None and k < len(traced)
        if k >= first_default and not traced_it:  # left to its default (None, a flag)
            args.append(_default(fn.args.defaults[k - first_default], p.arg))
            continue
        if kind not in _TENSOR_TYPES:
            args.append(Unknown(f"the input {p.arg} ({kind[:40]})"))
            continue
        rec = traced[k] if traced is not None and k < len(traced) else None
        if isinstance(rec, TensorRecord):
            ref = b.new(p.arg, "input", list(rec.shape), rec.dtype, {"shape_from": "trace"})
        else:
            note = {"torchscript": "shape and dtype not recorded; float32 assumed"}
            ref = b.new(p.arg, "input", None, "float32", note)
        inputs.append(ref)
        args.append(ref)
    return inputs, args


def _default(node: ast.expr, name: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return Unknown(f"the default of {name}")


def _flatten(value: Any, refs: list[Ref], constant: list[Any]) -> None:
    if isinstance(value, Ref):
        refs.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flatten(v, refs, constant)
    elif isinstance(value, dict):
        for v in value.values():
            _flatten(v, refs, constant)
    else:
        constant.append(value.text if isinstance(value, Unknown) else repr(value)[:80])


def _metadata(
    b: Builder, walker: Walker, pickles: Pickles, qual: str, constant: list[Any]
) -> dict[str, Any]:
    ts: dict[str, Any] = {"module_class": strip_mangling(qual)}
    ts.update(pickles.info)
    ts["shapes"] = "from the trace's example inputs" if pickles.traced_inputs else "not recorded"
    if walker.assumed:
        ts["assumed"] = walker.assumed
    if walker.undecided:
        ts["undecided"] = walker.undecided
    unmapped = sorted(
        {str(n.op_type) for n in b.nodes if n.metadata.get("domain") in ("aten", "prim")}
    )
    if unmapped:
        ts["not_mapped"] = unmapped
    if constant:
        ts["constant_outputs"] = constant
    return {"opset_import": [{"domain": "", "version": ONNX_OPSET}], "torchscript": ts}
