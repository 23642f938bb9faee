"""LightNet IR's ops array type-checked into ``Op`` records, before any graph is built.

The first structural fault raises one FormatError naming its JSON path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from xocview.errors import FormatError
from xocview.formats.json_types import json_type

__all__ = ["TYPED_OPS", "Checker", "Op", "describe"]

TYPED_OPS = ("create", "zeros")  # ops whose dims and dtype params declare their output
_TYPED = {
    "dims": "an array of positive integers",
    "dtype": "a LightNet dtype name such as 'TL_FLOAT'",
}
_OP_KEYS = frozenset({"name", "optype", "tensors_in", "tensors_out", "params"})
_SCALAR = (str, int, float, bool)
_VALUE = "a string, number, boolean, null or an array of strings, numbers or booleans"


@dataclass
class Op:
    """One checked op; ``where`` maps each param's arg_name to its index in ``params``."""

    index: int
    name: str
    optype: str
    ins: list[tuple[str, str]]
    outs: list[tuple[str, str]]
    params: dict[str, Any]
    where: dict[str, int]
    extra: dict[str, Any]

    @property
    def place(self) -> str:
        return f"ops[{self.index}]"


class Checker:
    """Checks the types of every field the model needs; the first fault raises."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, place: str, problem: str, expected: str | None = None) -> FormatError:
        return FormatError(self.file, place, problem, expected)

    def document(self, root: Any) -> tuple[list[Op], dict[str, Any]]:
        if not isinstance(root, dict):
            raise self.fail("root", f"is {json_type(root)}", "a JSON object with an 'ops' array")
        raw = self.array(root, "ops", "ops", "an array of op objects")
        if not raw:
            raise self.fail("ops", "the graph is empty (no ops)", "at least one op")
        ops = [self.op(op, i) for i, op in enumerate(raw)]
        return ops, {k: v for k, v in root.items() if k != "ops"}

    def array(self, obj: dict[str, Any], key: str, place: str, expected: str) -> list[Any]:
        value = obj.get(key)
        if type(value) is list:
            return value
        raise self.fail(place, "missing" if key not in obj else f"is {json_type(value)}", expected)

    def string(self, obj: dict[str, Any], key: str, place: str, expected: str) -> str:
        value = obj.get(key)
        if type(value) is str and value:
            return value
        problem = "missing" if key not in obj else "is empty" if value == "" else ""
        raise self.fail(f"{place}.{key}", problem or f"is {json_type(value)}", expected)

    def op(self, raw: Any, i: int) -> Op:
        place = f"ops[{i}]"
        if not isinstance(raw, dict):
            raise self.fail(place, f"is {json_type(raw)}", "an op object with 'name' and 'optype'")
        name = self.string(raw, "name", place, "a non-empty op name")
        optype = self.string(raw, "optype", place, "an operator type such as 'conv2d'")
        args: dict[str, str] = {}
        ins = self.tensors(raw, "tensors_in", place, args)
        outs = self.tensors(raw, "tensors_out", place, args)
        extra = {k: v for k, v in raw.items() if k not in _OP_KEYS}
        op = Op(i, name, optype, ins, outs, {}, {}, extra)
        for k, prm in enumerate(self.array(raw, "params", f"{place}.params", "an array")):
            p = f"{place}.params[{k}]"
            if not isinstance(prm, dict):
                raise self.fail(p, f"is {json_type(prm)}", "an object with 'arg_name' and 'value'")
            arg = self.arg_name(prm, p, args)
            value = prm.get("value")
            if "value" not in prm or not _is_value(value):
                raise self.fail(
                    f"{p}.value", f"is {json_type(value)}" if "value" in prm else "missing", _VALUE
                )
            op.params[arg], op.where[arg] = value, k
        if optype in TYPED_OPS:
            self.typed(op)
        return op

    def tensors(
        self, raw: dict[str, Any], key: str, place: str, args: dict[str, str]
    ) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for k, t in enumerate(self.array(raw, key, f"{place}.{key}", "an array")):
            p = f"{place}.{key}[{k}]"
            if not isinstance(t, dict):
                raise self.fail(p, f"is {json_type(t)}", "an object with 'arg_name' and 'name'")
            arg = self.arg_name(t, p, args)
            name = t.get("name")
            if type(name) is not str:
                problem = "missing" if "name" not in t else f"is {json_type(name)}"
                raise self.fail(f"{p}.name", problem, "a tensor name (a string)")
            out.append((arg, name))
        return out

    def arg_name(self, obj: dict[str, Any], place: str, args: dict[str, str]) -> str:
        """The spec makes an arg_name unique among an op's tensors and params together."""
        arg = self.string(obj, "arg_name", place, "an argument name (a non-empty string)")
        if arg in args:
            raise self.fail(
                f"{place}.arg_name",
                f"arg_name '{arg}' is already used at {args[arg]}",
                "each arg_name once per op",
            )
        args[arg] = place
        return arg

    def typed(self, op: Op) -> None:
        """``create`` and ``zeros`` must declare their output; ``create`` makes one tensor."""
        named = [name for _, name in op.outs if name]
        if op.optype == "create" and (op.ins or len(op.outs) != 1 or not named):
            raise self.fail(
                op.place,
                f"create op '{op.name}' has {len(op.ins)} tensors_in and "
                f"{len(named)} named tensors_out",
                "0 and 1: create makes one tensor from its params",
            )
        dims, dtype = op.params.get("dims"), op.params.get("dtype")
        for key, ok in (
            ("dims", type(dims) is list and all(type(d) is int and d > 0 for d in dims)),
            ("dtype", type(dtype) is str),
        ):
            if key not in op.params:
                raise self.fail(
                    f"{op.place}.params", f"no '{key}' in this {op.optype} op", _TYPED[key]
                )
            if not ok:
                place = f"{op.place}.params[{op.where[key]}].value"
                raise self.fail(place, f"is {describe(op.params[key])}", _TYPED[key])


def _is_value(value: Any) -> bool:
    if value is None or isinstance(value, _SCALAR):
        return True
    return type(value) is list and all(isinstance(v, _SCALAR) for v in value)


def describe(value: Any) -> str:
    """A value for a message: short ones shown, long ones by type."""
    text = json.dumps(value)
    return text if len(text) <= 40 else json_type(value)
