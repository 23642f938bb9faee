"""The top module's ``forward`` walked symbolically, statement by statement, into a graph.

Assignments bind names to tensors or plain values; calls of submodules' ``forward`` are
walked inside a group for the module; helper functions and methods are walked inline. An
``if`` whose condition the walk knows (``self.training`` is False in data.pkl, a Final
constant, ``x is None``, integer arithmetic, a tensor's rank) takes its branch; one it cannot
decide but whose other branch only raises is taken as the path the model runs, the assumption
noted (and a rank learnt from ``torch.dim(x) != 4``); any other is kept as a ``prim::If``
node. Loops over known ranges are unrolled. Walks are bounded in steps, nodes and call depth.
"""

from __future__ import annotations

import ast
from typing import Any

from xocview.formats.pytorch.pt2_schema import Ref
from xocview.formats.pytorch.torchscript_calls import Calls
from xocview.formats.pytorch.torchscript_code import FunctionCode, strip_mangling
from xocview.formats.pytorch.torchscript_exprs import truth
from xocview.formats.pytorch.torchscript_ops import Unknown
from xocview.formats.pytorch.torchscript_values import (
    Flow,
    Frame,
    Method,
    ModuleValue,
    Raised,
    assigned_names,
    raises,
    read_names,
)

__all__ = ["MAX_CALL_DEPTH", "Walker"]

MAX_CALL_DEPTH = 40


class Walker(Calls):
    """Statements and calls of code into functions and module methods."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.assumed: list[str] = []
        self.undecided: list[str] = []

    # -- calls into code ----------------------------------------------------------------------

    def call_code(
        self,
        fn: FunctionCode,
        module: ModuleValue | None,
        args: list[Any],
        kwargs: dict[str, Any],
        frame: Frame,
        node: ast.AST,
        group: str | None,
    ) -> Any:
        """Walk ``fn`` with its parameters bound; ``module`` is ``self`` for a method."""
        if frame.depth >= MAX_CALL_DEPTH:
            raise self.err(
                frame,
                node,
                f"calls nested more than {MAX_CALL_DEPTH} deep (recursion?)",
                "modules and functions that do not call themselves",
            )
        params = [a.arg for a in fn.node.args.args]
        given = ([module] if module is not None else []) + list(args)
        if len(given) > len(params):
            raise self.err(frame, node, f"{len(given)} arguments for {len(params)} parameters")
        env: dict[str, Any] = dict(zip(params, given, strict=False))
        inner = Frame(env, fn, module, group, frame.depth + 1)
        defaults = fn.node.args.defaults
        first_default = len(params) - len(defaults)
        for k, p in enumerate(params):
            if p in env:
                continue
            if p in kwargs:
                env[p] = kwargs[p]
            elif k >= first_default:
                env[p] = self.eval(defaults[k - first_default], inner)
            else:
                raise self.err(frame, node, f"no value for parameter {shorten_name(p)!r}")
        try:
            self.block(fn.node.body, inner)
        except Flow as f:
            if f.kind == "return":
                return f.value
            raise self.err(inner, node, f"{f.kind} outside a loop") from None
        return None

    def call_method(
        self, m: Method, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        module = m.target
        assert isinstance(module, ModuleValue) and module.cls is not None
        fn = module.cls.methods[m.name]
        group = frame.group
        if m.name == "forward" and module is not frame.module:
            group = self.module_group(module, frame)
        return self.call_code(fn, module, args, kwargs, frame, node, group)

    def module_group(self, module: ModuleValue, frame: Frame) -> str:
        parent = frame.group
        parent_path = self.b.groups_path.get(parent, "") if parent else ""
        path = module.path
        name = (
            path[len(parent_path) + 1 :]
            if parent_path and path.startswith(parent_path + ".")
            else path
        )
        gid = self.b.group(name or "self", path, strip_mangling(module.qualname), parent)
        self.b.groups_path[gid] = path
        return gid

    # -- statements ---------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt], frame: Frame) -> None:
        for stmt in stmts:
            self.statement(stmt, frame)

    def statement(self, s: ast.stmt, frame: Frame) -> None:
        self.tick(frame, s)
        if isinstance(s, ast.Assign):
            value = self.eval(s.value, frame)
            for target in s.targets:
                self.assign(target, value, frame)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.eval(s.value, frame), frame)
        elif isinstance(s, ast.AugAssign):
            value = self.eval(ast.BinOp(s.target, s.op, s.value, lineno=s.lineno), frame)
            self.assign(s.target, value, frame)
        elif isinstance(s, ast.Expr):
            self.eval(s.value, frame)
        elif isinstance(s, ast.Return):
            raise Flow("return", self.eval(s.value, frame) if s.value is not None else None)
        elif isinstance(s, ast.If):
            self.branch(s, frame)
        elif isinstance(s, ast.For):
            self.for_loop(s, frame)
        elif isinstance(s, ast.While):
            self.while_loop(s, frame)
        elif isinstance(s, (ast.Break, ast.Continue)):
            raise Flow("break" if isinstance(s, ast.Break) else "continue")
        elif isinstance(s, ast.Raise):
            raise Raised("a raise statement", frame.code.place(s))
        elif isinstance(s, ast.Assert):
            if truth(self.eval(s.test, frame)) is False:
                raise Raised("a failing assert", frame.code.place(s))
        elif isinstance(s, (ast.Pass, ast.Delete)):
            return
        else:
            raise self.err(
                frame,
                s,
                f"a {type(s).__name__} statement, which xocview does not follow",
                "TorchScript as torch.jit.save writes it",
            )

    def assign(self, target: ast.expr, value: Any, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            frame.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            n = len(target.elts)
            if isinstance(value, (list, tuple)) and len(value) == n:
                items = list(value)
            elif isinstance(value, Unknown):
                items = [Unknown(value.text)] * n
            elif isinstance(value, Ref) and (wide := self.b.widen(value, n)) is not None:
                items = list(wide)
            else:
                raise self.err(frame, target, f"{n} names for a value that is not {n} items")
            for t, v in zip(target.elts, items, strict=True):
                self.assign(t, v, frame)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value, frame)
            key = self.eval(target.slice, frame)
            in_list = (
                isinstance(base, list) and isinstance(key, int) and -len(base) <= key < len(base)
            )
            if in_list or (isinstance(base, dict) and isinstance(key, (str, int, float, bool))):
                base[key] = value
            else:
                raise self.err(frame, target, "an item assignment xocview cannot follow")
        elif isinstance(target, ast.Attribute):
            base = self.eval(target.value, frame)
            if not isinstance(base, ModuleValue):
                raise self.err(frame, target, "an attribute assignment to a plain value")
            base.assigned[target.attr] = value
        else:
            raise self.err(frame, target, "an assignment target xocview cannot follow")

    def branch(self, s: ast.If, frame: Frame) -> None:
        cond = self.eval(s.test, frame)
        known = truth(cond)
        if known is not None:
            self.block(s.body if known else s.orelse, frame)
            return
        raise_then, raise_else = raises(s.body), raises(s.orelse)
        place = frame.code.place(s)
        if raise_then and raise_else:
            raise Raised("an if whose branches both raise", place)
        if raise_then or raise_else:
            self.assume(cond, not raise_then, place)
            self.block(s.orelse if raise_then else s.body, frame)
            return
        self.opaque_control("If", cond, s.body + s.orelse, [s.test], frame, s)

    def assume(self, cond: Any, value: bool, place: str) -> None:
        """The model runs only if ``cond`` is ``value`` (the other branch raises): noted, and
        a rank learnt when the condition compares ``torch.dim(x)`` with a number."""
        text = cond.text if isinstance(cond, Unknown) else "a tensor condition"
        self.assumed.append(f"{place}: {text} taken as {value} (the other branch raises)")
        fact = cond.fact if isinstance(cond, Unknown) else None
        if fact and len(fact) == 3 and isinstance(fact[1], tuple) and fact[1][0] == "dim":
            op, (_, ref), k = fact
            if isinstance(k, int) and 0 <= k <= 64 and (op == "eq") == value and op in ("eq", "ne"):
                self.b.set_rank(ref, k)

    def opaque_control(
        self,
        op: str,
        cond: Any,
        body: list[ast.stmt],
        tests: list[ast.expr],
        frame: Frame,
        s: ast.stmt,
    ) -> None:
        """A branch or loop the walk cannot decide, kept as one node: it reads the tensors
        its code reads and gives new values to every name it assigns."""
        place = frame.code.place(s)
        self.undecided.append(f"{place}: {op.lower()} on a value known only when run")
        ins: list[Ref] = [cond] if isinstance(cond, Ref) else []
        for name in read_names(body + tests):  # type: ignore[operator]
            v = frame.env.get(name)
            if isinstance(v, Ref) and v not in ins:
                ins.append(v)
        names = assigned_names(body)
        tensors = [n for n in names if isinstance(frame.env.get(n), Ref) or n not in frame.env]
        dtypes = [
            self.b.tensor(frame.env[n]).dtype if n in frame.env else "float32" for n in tensors
        ]
        meta: dict[str, Any] = {"source": place, "assigns": names}
        refs = self.b.opaque(op, "prim", ins, dtypes, frame.group, meta)
        for n in names:
            frame.env[n] = Unknown(f"{n} after the {op.lower()} at {place}")
        frame.env.update(zip(tensors, refs, strict=True))

    def for_loop(self, s: ast.For, frame: Frame) -> None:
        items = self.eval(s.iter, frame)
        if isinstance(items, (list, tuple, range, dict)):
            for item in items:
                self.assign(s.target, item, frame)
                try:
                    self.block(s.body, frame)
                except Flow as f:
                    if f.kind == "break":
                        break
                    if f.kind != "continue":
                        raise
            else:
                self.block(s.orelse, frame)
            return
        self.opaque_control("Loop", items, s.body, [s.iter], frame, s)

    def while_loop(self, s: ast.While, frame: Frame) -> None:
        while True:
            cond = self.eval(s.test, frame)
            known = truth(cond)
            if known is None:
                self.opaque_control("Loop", cond, s.body, [s.test], frame, s)
                return
            if not known:
                self.block(s.orelse, frame)
                return
            try:
                self.block(s.body, frame)
            except Flow as f:
                if f.kind == "break":
                    return
                if f.kind != "continue":
                    raise


def shorten_name(name: str) -> str:
    return name if len(name) <= 40 else name[:37] + "..."
