"""Calls in TorchScript code: of ATen ops (``torch.conv2d``, ``ops.aten.add``), of prim ops
(``ops.prim.NumToTensor``), of TorchScript's builtins (``int``, ``len``, ``annotate``,
``isinstance``), of module methods and of the archive's own functions.

An ATen call is bound to its schema, its outputs typed, and written through the lowering
table; sizes, ranks and builtins are answered by ``torchscript_builtins``. Ops with no ATen
schema here become ATen nodes without a mapping; ops of other namespaces
(``ops.torchvision.nms``) nodes of that domain.
"""

from __future__ import annotations

import ast
from typing import Any

from xocview.formats.pytorch.pt2_schema import Ref
from xocview.formats.pytorch.torchscript_builtins import Builtins, isinstance_of, text
from xocview.formats.pytorch.torchscript_exprs import ATEN_STEPS
from xocview.formats.pytorch.torchscript_ops import NO_FOLD, Unknown, bind, fold, out_types
from xocview.formats.pytorch.torchscript_values import (
    Builtin,
    Frame,
    Method,
    ModuleValue,
    Namespace,
)

__all__ = ["Calls"]

_LOWER_AS = {"_convolution": "convolution", "_convolution_deprecated": "convolution"}
_COMPARES = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


class Calls(Builtins):
    def call(self, node: ast.Call, frame: Frame) -> Any:
        f = self.eval(node.func, frame)
        if isinstance(f, Builtin) and f.name in ("annotate", "unchecked_cast"):
            return self.eval(node.args[-1], frame) if node.args else None
        if isinstance(f, Builtin) and f.name == "isinstance" and len(node.args) == 2:
            return isinstance_of(self.eval(node.args[0], frame), node.args[1])
        if isinstance(f, Builtin) and f.name == "uninitialized":
            return Unknown("an uninitialized value")
        args = [self.eval(a, frame) for a in node.args if not isinstance(a, ast.Starred)]
        if len(args) != len(node.args):
            raise self.err(frame, node, "a starred argument, which TorchScript does not write")
        kwargs = {k.arg: self.eval(k.value, frame) for k in node.keywords if k.arg is not None}
        if len(kwargs) != len(node.keywords):
            raise self.err(frame, node, "a ** argument, which TorchScript does not write")
        if isinstance(f, Namespace):
            return self.namespace_call(f.path, args, kwargs, frame, node)
        if isinstance(f, Method):
            if isinstance(f.target, ModuleValue):
                return self.call_method(f, args, kwargs, frame, node)  # type: ignore[attr-defined]
            return self.torch_op(f.name, [f.target, *args], kwargs, frame, node)
        if isinstance(f, Builtin):
            return self.builtin(f.name, args, kwargs, frame, node)
        raise self.err(frame, node, "a call of a value that is not a function")

    def namespace_call(
        self, path: str, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        head, _, name = path.rpartition(".")
        if head in ("torch", "ops.aten", "torch.nn.functional", "math"):
            return self.torch_op(name, args, kwargs, frame, node)
        if head == "ops.prim":
            return self.prim(name, args, kwargs, frame, node)
        if path.startswith("__torch__."):
            fn = self.code.functions.get(path)
            if fn is None:
                raise self.err(frame, node, f"{path[:80]} is not a function of the archive's code")
            return self.call_code(fn, None, args, kwargs, frame, node, frame.group)  # type: ignore[attr-defined]
        if head.startswith("ops.") and head.count(".") == 1:
            ins = [a for a in args if isinstance(a, Ref) and not a.sym]
            dtypes = [self.b.tensor(ins[0]).dtype if ins else "float32"]
            meta = {"source": frame.code.place(node), "target": f"{head[4:]}::{name}"}
            return self.b.opaque(name, head[4:], ins, dtypes, frame.group, meta)[0]
        raise self.err(frame, node, f"a call of {path[:80]}, which xocview does not know")

    # -- torch ops ----------------------------------------------------------------------------

    def torch_op(
        self, name: str, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        special = getattr(self, f"_op_{name}", None)
        if special is not None:
            return special(args, kwargs, frame, node)
        mode = kwargs.get("rounding_mode") if name == "div" and len(kwargs) == 1 else None
        if not kwargs or mode in ("trunc", "floor"):
            got = fold(
                {"trunc": "div_trunc", "floor": "floordiv"}.get(mode or "", name),
                [self.small(a) for a in args],
            )
            if got is not NO_FOLD:
                return got
        if name in _COMPARES and len(args) == 2 and any(isinstance(a, Unknown) for a in args):
            a, b = args
            fact = (name, a.fact, b) if isinstance(a, Unknown) and a.fact else None
            return Unknown(f"{text(a)} {name} {text(b)}", fact)
        if any(isinstance(a, Unknown) for a in [*args, *kwargs.values()]) and not any(
            isinstance(a, Ref) for a in args
        ):
            return Unknown(f"{name} of a value known only when run")
        self.tick(frame, node, ATEN_STEPS)
        inplace = name.endswith("_") and not name.endswith("__")
        base = name[:-1] if inplace else name
        bound = bind(base, args, kwargs)
        meta: dict[str, Any] = {"source": frame.code.place(node)}
        if isinstance(bound, str):
            return self.unmapped(base, bound, args, kwargs, frame, meta)
        schema, named = bound
        meta["target"] = f"aten::{base}" + (f".{schema.overload}" if schema.overload else "")
        plain = {k: _plain(v) for k, v in named.items() if not _has_tensor(v)}
        if plain:
            meta["arguments"] = plain
        count = self.list_count(base, named)
        outs = out_types(schema, named, lambda r: self.b.tensor(r).dtype, self.b.rank, count)
        if schema.returns == ("Tensor[]",) and count is None:
            return self.unmapped(
                base, "a list of outputs of unknown length", args, kwargs, frame, meta
            )
        shapes = self.shapes_before(base, named, len(outs))
        refs = self.b.aten(
            base, _LOWER_AS.get(base, base), schema.overload, named, outs, frame.group, meta, shapes
        )
        if inplace and args and isinstance(args[0], Ref):
            for k, v in list(frame.env.items()):
                if v == args[0]:
                    frame.env[k] = refs[0]
        if schema.returns == ("Tensor[]",):
            return refs
        return refs[0] if len(refs) == 1 else tuple(refs)

    def unmapped(
        self,
        name: str,
        why: str,
        args: list[Any],
        kwargs: dict[str, Any],
        frame: Frame,
        meta: dict[str, Any],
    ) -> Ref:
        ins = [a for a in [*args, *kwargs.values()] if isinstance(a, Ref)]
        tensors = [a for a in ins if not a.sym]
        meta["not_mapped"] = why
        meta["target"] = f"aten::{name}"
        dtype = self.b.tensor(tensors[0]).dtype if tensors else "float32"
        return self.b.opaque(name, "aten", ins, [dtype], frame.group, meta)[0]

    def list_count(self, name: str, args: dict[str, Any]) -> int | None:
        x = args.get("self")
        if name not in ("split", "split_with_sizes", "chunk", "unbind") or not isinstance(x, Ref):
            return None
        if "split_sizes" in args:
            return len(args["split_sizes"])
        size = self.size_of(x, args.get("dim", 0))
        if not isinstance(size, int):
            return None
        if name == "unbind":
            return size
        step = args.get("split_size") if name != "chunk" else -(-size // max(args["chunks"], 1))
        return -(-size // step) if isinstance(step, int) and step > 0 else None

    def shapes_before(self, name: str, args: dict[str, Any], n: int) -> list[list[int]] | None:
        """Output shapes the lowerings of cat, stack, split and index read (torch records
        them in a .pt2; TorchScript does not): ranks, and split's sizes."""
        ranks = {k: self.b.rank(v) for k, v in args.items() if isinstance(v, Ref) and not v.sym}
        if name in ("cat", "concat", "stack"):
            parts = [self.b.rank(t) for t in args.get("tensors", [])]
            if not parts or None in parts:
                return None
            return [[-1] * (max(p for p in parts if p is not None) + (name == "stack"))]
        x, rank = args.get("self"), ranks.get("self")
        if rank is None or not isinstance(x, Ref):
            return None
        if name == "index":
            idx = [self.b.rank(t) for t in args.get("indices", []) if isinstance(t, Ref)]
            if not idx or None in idx:
                return None
            given = sum(1 for t in args["indices"] if t is not None)
            return [[-1] * (max(r for r in idx if r is not None) + rank - given)]
        if name in ("split", "split_with_sizes", "chunk", "unbind"):
            d = args.get("dim", 0)
            shape = list(self.b.tensor(x).shape)
            if not isinstance(d, int) or not -rank <= d < rank or shape[d] < 0:
                return None
            size, d = shape[d], d % rank
            if name == "unbind":
                return [shape[:d] + shape[d + 1 :]] * n
            if "split_sizes" in args:
                sizes = list(args["split_sizes"])
            else:
                step = args.get("split_size") or -(-size // max(args.get("chunks", 1), 1))
                sizes = [min(step, size - k * step) for k in range(n)]
            return [[*shape[:d], s, *shape[d + 1 :]] for s in sizes]
        return None


def _has_tensor(v: Any) -> bool:
    if isinstance(v, Ref):
        return not v.sym
    if isinstance(v, (list, tuple)):
        return any(_has_tensor(x) for x in v)
    return False


def _plain(v: Any) -> Any:
    if isinstance(v, Ref):
        return v.name
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Unknown):
        return v.text
    if isinstance(v, (int, float, bool, str)) or v is None:
        return v
    return str(v)[:80]
