"""Rank-0 and zero-size cases for every kernel of ONNX's default domain, and their yardsticks.

Each case is one node built from its onnx.defs schema at the newest version the registry
serves (``case_opset``): a generic "scalar" (every input rank-0) and "empty" (every input
(2, 0, 3), and that against rank-0 others) from the schema's type constraints, or a per-op
list (scalar_empty_custom) where the op needs its own shapes or attributes, with the extras,
attributes and exemptions of scalar_empty_table. onnxruntime is
the yardstick; where it refuses or crashes, onnx's ReferenceEvaluator; where both refuse, the
case is not allowed by either and is skipped.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import defs, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from tests.executor import scalar_empty_table as table
from tests.executor.scalar_empty_custom import CUSTOM
from xocview.executor import run
from xocview.executor.registry import KERNELS, supported_ops
from xocview.formats.registry import load

# Ops before this opset are built at it (onnxruntime's kernels and the newer schemas' input
# forms: Reduce axes and Split sizes as inputs); newer kernels at their own opset.
BASE_OPSET = 21
SCALAR, EMPTY = (), (2, 0, 3)
# The dtype an input takes from its type constraint: the first of these it allows.
DTYPE_ORDER = [
    "float",
    "int64",
    "int32",
    "bool",
    "uint8",
    "int8",
    "uint16",
    "uint32",
    "uint64",
    "string",
]


@dataclass(frozen=True)
class Case:
    """One node: its op, what the case is, its inputs (None: omitted) and attributes."""

    op: str
    name: str
    inputs: tuple[np.ndarray | None, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    outputs: int = 1
    opset: int = BASE_OPSET

    @property
    def id(self) -> str:
        return f"{self.op}-{self.name}"


@dataclass(frozen=True)
class Expected:
    """A yardstick's answer: who gave it ("onnxruntime", "reference" or "" for neither),
    its outputs, and why the others refused."""

    by: str
    outputs: tuple[np.ndarray, ...]
    refusals: tuple[str, ...] = ()


def default_domain_ops() -> list[str]:
    """Every registered op of ONNX's default domain: no other domain's schema claims it
    (ai.onnx.ml, the previews and onnxruntime's ops are other suites')."""
    found = []
    for op in supported_ops():
        if ":" in op:
            continue
        if defs.has(op, "") or not any(defs.has(op, d) for d in _OTHER_DOMAINS):
            found.append(op)
    return found


_OTHER_DOMAINS = ("ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training")


def case_opset(op: str) -> int:
    """The opset a case of ``op`` is built at: BASE_OPSET, or the newest kernel's when that
    is newer; an op deprecated by then (Upsample, Scatter) at its newest kernel's."""
    newest = KERNELS[op][-1].since
    if not defs.has(op, ""):  # onnxruntime's SimplifiedLayerNormalization: no ONNX schema
        return BASE_OPSET
    opset = max(BASE_OPSET, newest)
    schema = defs.get_schema(op, opset, "")
    return newest if schema.deprecated else opset


def _dtype(type_strs: list[str]) -> np.dtype | None:
    """The dtype a generic input takes from what its constraint allows (None: no tensor)."""
    names = {t[len("tensor(") : -1] for t in type_strs if t.startswith("tensor(")}
    for name in DTYPE_ORDER:
        if name in names:
            return np.dtype({"float": "float32", "string": "object"}.get(name, name))
    return None


def values(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    """Seeded values of ``dtype``: floats in (0.1, 0.9), integers 1..3, words for strings."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(1, 4, size=shape).astype(dt)
    if dt.kind == "O":
        return np.array(rng.choice(["ab", "c d", "xy"], size=shape), dtype=object).reshape(shape)
    return rng.uniform(0.1, 0.9, size=shape).astype(dt)


def _formals(op: str, opset: int) -> list[tuple[str, list[str]]] | None:
    """The required inputs' (type parameter, allowed types), a variadic one twice; None when
    the schema needs an attribute the table does not give."""
    schema = defs.get_schema(op, opset, "")
    attrs = table.GENERIC_ATTRS.get(op, {})
    if any(a.required and name not in attrs for name, a in schema.attributes.items()):
        return None
    constraint = {t.type_param_str: list(t.allowed_type_strs) for t in schema.type_constraints}
    Option = defs.OpSchema.FormalParameterOption
    formals = []
    for formal in schema.inputs:
        if formal.option == Option.Optional:
            break
        allowed = constraint.get(formal.type_str, [formal.type_str])
        formals += [(formal.type_str, allowed)] * (2 if formal.option == Option.Variadic else 1)
    return formals


def generic_cases(op: str, opset: int) -> list[Case]:
    """The schema's own cases: every required input rank-0 ("scalar"), every input (2, 0, 3)
    ("empty"), the first (2, 0, 3) against rank-0 others ("empty-bcast"), and the scalar and
    empty cases again in int64 and float16 where the first input's constraint allows them;
    none when an input is no tensor or an attribute is required and the table gives none."""
    formals = _formals(op, opset) if defs.has(op, "") else None
    if not formals:
        return []
    kinds = [_dtype(allowed) for _, allowed in formals]
    if any(k is None for k in kinds):
        return []
    schema = defs.get_schema(op, opset, "")
    single = defs.OpSchema.FormalParameterOption.Single
    outputs = max(1, sum(o.option == single for o in schema.outputs))
    attrs = table.GENERIC_ATTRS.get(op, {})
    rng = np.random.default_rng(zlib.crc32(op.encode()))
    n = len(kinds)
    runs = [("scalar", [SCALAR] * n, kinds), ("empty", [EMPTY] * n, kinds)]
    if n > 1:
        runs.append(("empty-bcast", [EMPTY] + [SCALAR] * (n - 1), kinds))
    first, allowed = formals[0]
    for alt in ("int64", "float16"):
        if kinds[0] == np.float32 and f"tensor({alt})" in allowed:
            other = [
                np.dtype(alt) if t == first else k for (t, _), k in zip(formals, kinds, strict=True)
            ]
            runs += [(f"scalar-{alt}", [SCALAR] * n, other), (f"empty-{alt}", [EMPTY] * n, other)]
    return [
        Case(
            op,
            name,
            tuple(values(s, k, rng) for s, k in zip(shapes, ks, strict=True)),
            attrs,
            outputs,
            opset,
        )
        for name, shapes, ks in runs
    ]


def cases_of(op: str) -> list[Case]:
    """Every case of ``op``: the table's own, else the generic ones and the table's extras."""
    opset = case_opset(op)
    own = CUSTOM.get(op)
    if own is not None:
        specs = own()
    else:
        extra = table.EXTRA.get(op)
        specs = [(c.name, c.inputs, c.attrs, c.outputs) for c in generic_cases(op, opset)]
        specs += extra() if extra else []
    return [
        Case(op, name, tuple(ins), dict(attrs), outs, opset) for name, ins, attrs, outs in specs
    ]


def all_cases() -> list[Case]:
    """Every case of every default-domain op that is not exempt."""
    return [c for op in default_domain_ops() if op not in table.EXEMPT for c in cases_of(op)]


def _attribute(name: str, value: Any) -> onnx.AttributeProto:
    if isinstance(value, np.ndarray):
        return helper.make_attribute(name, numpy_helper.from_array(value))
    if isinstance(value, list) and not value:
        return helper.make_attribute(name, value, attr_type=onnx.AttributeProto.INTS)
    return helper.make_attribute(name, value)


def model_of(case: Case) -> tuple[onnx.ModelProto, dict[str, np.ndarray], list[str]]:
    """The case's one-node model (inputs x0, x1..., untyped outputs y0, y1...) and feeds."""
    names = ["" if x is None else f"x{i}" for i, x in enumerate(case.inputs)]
    while names and names[-1] == "":
        names.pop()
    outs = [f"y{i}" for i in range(case.outputs)]
    node = helper.make_node(case.op, names, outs)
    node.attribute.extend(_attribute(k, v) for k, v in case.attrs.items())
    feeds = {n: x for n, x in zip(names, case.inputs, strict=False) if x is not None}
    graph_inputs = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))
        for n, x in feeds.items()
    ]
    graph_outputs = [onnx.ValueInfoProto(name=n) for n in outs]
    opsets = [helper.make_opsetid("", case.opset)]
    graph = helper.make_graph([node], case.id, graph_inputs, graph_outputs)
    model = helper.make_model(
        graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets)
    )
    return model, feeds, outs


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray], outs: list[str]) -> list[Any]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 4
    session = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    return list(session.run(outs, feeds))


def _reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray], outs: list[str]) -> list[Any]:
    with np.errstate(all="ignore"):  # its numpy warnings on empty inputs are its own
        return list(ReferenceEvaluator(model).run(outs, feeds))


def _short(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"


@functools.cache
def expected(case_id: str) -> Expected:
    """The yardstick's outputs for the case: onnxruntime's, else the reference's (only the
    reference's where onnxruntime aborts the process; the spec's where the table says
    onnxruntime departs from it)."""
    if case_id in table.SPEC_ANSWERS:
        return Expected("the spec", tuple(table.SPEC_ANSWERS[case_id][1]))
    case = CASES[case_id]
    model, feeds, outs = model_of(case)
    engines: list[tuple[str, Callable[..., list[Any]]]] = [
        ("onnxruntime", _ort),
        ("reference", _reference),
    ]
    if case_id in table.ORT_ABORTS:
        engines = engines[1:]
    refusals = []
    for by, engine in engines:
        try:
            got = engine(model, feeds, outs)
        except Exception as e:
            refusals.append(f"{by}: {_short(e)}")
            continue
        return Expected(by, tuple(np.asarray(g) for g in got))
    return Expected("", (), tuple(refusals))


def onnxruntime_outputs(case: Case) -> list[np.ndarray]:
    """onnxruntime's outputs for the case (raises where it refuses)."""
    return [np.asarray(o) for o in _ort(*model_of(case))]


def ours(case: Case, folder: Path) -> list[np.ndarray]:
    """xocview's outputs: the model written, read by its loader and run by its executor."""
    model, feeds, outs = model_of(case)
    path = folder / f"{case.id}.onnx"
    onnx.save(model, path)
    got = run(load(path), feeds).outputs
    return [np.asarray(got[n]) for n in outs]


CASES: dict[str, Case] = {c.id: c for c in all_cases()}
