"""The ``code/`` folder of a TorchScript archive, parsed (never run) into its classes and
functions.

Each ``code/__torch__/a/b.py`` is TorchScript's Python-like serialization of the module
``__torch__.a.b``: classes (one per scripted or traced module class, methods and ``Final``
constants) and free functions (``__torch__.torch.nn.functional.batch_norm``). Files are read
with ``ast.parse`` only; a file too large, too deeply nested or not parseable is refused at its
line, so that the walk that follows can recurse over the trees without running out of stack.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from xocview.errors import FormatError, shorten
from xocview.formats.zip_members import ZipMembers

__all__ = ["ClassCode", "Code", "FunctionCode", "read_code", "strip_mangling"]

MAX_FILE = 16 << 20  # bytes of one code file
MAX_CODE = 256 << 20  # bytes of all of them
MAX_DEPTH = 120  # nesting of a tree (a statement in a branch in a call ...)


@dataclass
class FunctionCode:
    """One function or method: its tree and the member it is in (for messages)."""

    node: ast.FunctionDef
    file: str  # ``code/__torch__/x.py``, relative to the archive's root

    def place(self, at: ast.AST | None = None) -> str:
        line = getattr(at if at is not None else self.node, "lineno", None)
        return f"{self.file} line {line}" if line else self.file


@dataclass
class ClassCode:
    """A class: its methods, ``Final`` constants (``eps : Final[float] = 1e-05``) and the
    names it declares as parameters and buffers."""

    qualname: str
    file: str
    methods: dict[str, FunctionCode] = field(default_factory=dict)
    finals: dict[str, Any] = field(default_factory=dict)
    parameters: list[str] = field(default_factory=list)
    buffers: list[str] = field(default_factory=list)


@dataclass
class Code:
    classes: dict[str, ClassCode] = field(default_factory=dict)
    functions: dict[str, FunctionCode] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def strip_mangling(qualname: str) -> str:
    """``__torch__.torch.nn.modules.conv.___torch_mangle_4.Conv2d`` ->
    ``torch.nn.modules.conv.Conv2d``: the class as its author named it."""
    parts = [p for p in qualname.split(".") if not p.startswith("___torch_mangle_")]
    if parts and parts[0] == "__torch__":
        parts = parts[1:]
    return ".".join(parts)


def read_code(members: ZipMembers) -> Code:
    """Every ``code/**.py`` member parsed and indexed by qualified name."""
    prefix = members.root + "code/"
    names = sorted(n for n in members.names if n.startswith(prefix) and n.endswith(".py"))
    if not names:
        raise FormatError(
            members.file, prefix, "no code in the archive", "code/__torch__/<module>.py files"
        )
    code, total = Code(), 0
    for name in names:
        short = name[len(members.root) :]
        total += members.size(name)
        if total > MAX_CODE:
            raise FormatError(members.file, short, "the code folder is too large", "< 256 MB")
        text = members.read(name, MAX_FILE)
        tree = _parse(members.file, short, text)
        module = name[len(prefix) : -3].replace("/", ".")
        _index(code, module, short, tree, members.file)
        code.files.append(short)
    return code


def _parse(file: str, short: str, data: bytes) -> ast.Module:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(file, f"{short} byte {e.start}", "not UTF-8 text") from e
    try:
        tree = ast.parse(text, short, type_comments=False)
    except SyntaxError as e:
        raise FormatError(
            file, f"{short} line {e.lineno}", f"not TorchScript code ({shorten(str(e.msg))})"
        ) from e
    except (RecursionError, MemoryError, ValueError) as e:
        raise FormatError(file, short, "code nested too deeply to read") from e
    _check_depth(file, short, tree)
    return tree


def _check_depth(file: str, short: str, tree: ast.AST) -> None:
    """Refuse trees nested deeper than MAX_DEPTH (told without recursion)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            line = getattr(node, "lineno", "?")
            raise FormatError(
                file,
                f"{short} line {line}",
                f"code nested more than {MAX_DEPTH} levels deep",
                "TorchScript as torch.jit.save writes it",
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _index(code: Code, module: str, short: str, tree: ast.Module, file: str) -> None:
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            qual = f"{module}.{stmt.name}"
            code.classes[qual] = _class(qual, short, stmt, file)
        elif isinstance(stmt, ast.FunctionDef):
            code.functions[f"{module}.{stmt.name}"] = FunctionCode(stmt, short)


def _class(qual: str, short: str, node: ast.ClassDef, file: str) -> ClassCode:
    cls = ClassCode(qual, short)
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef):
            cls.methods[stmt.name] = FunctionCode(stmt, short)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if stmt.value is not None and _is_final(stmt.annotation):
                cls.finals[stmt.target.id] = _literal(stmt.value, file, short)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and target.id in ("__parameters__", "__buffers__"):
                names = _literal(stmt.value, file, short)
                if isinstance(names, list) and all(isinstance(n, str) for n in names):
                    kind = cls.parameters if target.id == "__parameters__" else cls.buffers
                    kind.extend(names)
    return cls


def _is_final(annotation: ast.expr) -> bool:
    base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return isinstance(base, ast.Name) and base.id == "Final"


def _literal(node: ast.expr, file: str, short: str) -> Any:
    """A constant written in a class body (numbers, strings, tuples, lists, None)."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _Opaque(ast.unparse(node)[:80] if _small(node) else "an expression")


def _small(node: ast.AST) -> bool:
    return sum(1 for _ in ast.walk(node)) < 200


@dataclass(frozen=True)
class _Opaque:
    """A class constant that is no plain literal (kept as its text, never evaluated)."""

    text: str
