"""``xocview edit``: apply command-line edits to a graph in order and save it (XOC JSON, ONNX)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from xocview.cli.arguments import parse_dims
from xocview.cli.exit_codes import EXIT_OK, EXIT_USAGE
from xocview.cli.outputs import OUTPUT_METAVAR, refused, save_with_notes
from xocview.cli.terminal import say
from xocview.errors import EditError, shorten
from xocview.formats import json_text, registry
from xocview.model import edits
from xocview.model.graph import Graph

__all__ = ["MAX_VALUE_DEPTH", "add_edit_parser", "cmd_edit"]

# Lists and objects nested in an edit's VALUE; an attribute or metadata value needs a few.
MAX_VALUE_DEPTH = 100

# option -> (metavar, help); each appends (option, text) to one list, so edits keep their order
_EDIT_OPTIONS = {
    "--set": ("NODE.ATTR=VALUE", "set (or add) an attribute; VALUE is JSON: 3, [1,1], '\"same\"'"),
    "--del-attr": ("NODE.ATTR", "remove an attribute"),
    "--set-meta": ("ID.KEY=VALUE", "set metadata of a node, tensor or the graph (dotted KEY)"),
    "--rename": ("OLD=NEW", "rename a node (or, when no node has OLD, a tensor)"),
    "--shape": ("TENSOR=D,D,...", "set a tensor's shape (-1 for an unknown size)"),
    "--dtype": ("TENSOR=DTYPE", "set a tensor's element type (float16, int64, ...)"),
    "--delete": ("NODE", "delete a node"),
    "--bypass": ("NODE", "remove a node with one data input and one output, keeping the flow"),
    "--output": ("TENSOR", "mark a tensor as a graph output"),
}

_EDIT_EPILOG = """Edits apply in the order given. An id may contain dots: NODE.ATTR and ID.KEY
split at the last dot whose left part is an existing id (for --set-meta a node id, else a tensor
id, else the graph's id). Any refused edit exits 1 with the reason and writes nothing."""


def add_edit_parser(sp: argparse.ArgumentParser) -> None:
    sp.epilog = _EDIT_EPILOG
    sp.add_argument("input", metavar="IN")
    sp.add_argument(
        "-o", "--out", required=True, metavar=OUTPUT_METAVAR, help="where to write (the format)"
    )
    for opt, (metavar, help) in _EDIT_OPTIONS.items():
        sp.add_argument(
            opt,
            dest="edits",
            action="append",
            default=[],
            metavar=metavar,
            help=help,
            type=_tagged(opt),
        )


def _tagged(opt: str) -> Callable[[str], tuple[str, str]]:
    """An argparse type that keeps the option with its text, so all edits share one list."""

    def tag(text: str) -> tuple[str, str]:
        return opt, text

    return tag


def cmd_edit(ns: argparse.Namespace) -> int:
    out = Path(ns.out)
    if refused(out):
        return EXIT_USAGE
    graph = registry.load(ns.input)
    for opt, text in ns.edits:
        try:
            _apply_option(graph, opt, text)
        except EditError as e:
            raise EditError(f"{opt} {shorten(text)}: {e}; nothing was written") from e
    save_with_notes(graph, out)
    n = len(ns.edits)
    say(
        f"wrote {out} ({n} edit{'s' * (n != 1)}; "
        f"{len(graph.nodes)} nodes, {len(graph.tensors)} tensors)"
    )
    return EXIT_OK


def _apply_option(graph: Graph, opt: str, text: str) -> None:
    """Apply one command-line edit to ``graph``; EditError when it is refused."""
    if opt in ("--delete", "--bypass", "--output"):
        {"--delete": edits.delete_node, "--bypass": edits.bypass_node}.get(opt, edits.mark_output)(
            graph, text
        )
    elif opt == "--set":
        target, value = _split_value(text)
        node, attr = _split_id(graph, target, ("node",))
        edits.set_attribute(graph, node, attr, value)
    elif opt == "--del-attr":
        node, attr = _split_id(graph, text, ("node",))
        edits.remove_attribute(graph, node, attr)
    elif opt == "--set-meta":
        target, value = _split_value(text)
        owner, key = _split_id(graph, target, ("node", "tensor", "graph"))
        kind = _kind_of(graph, owner, ("node", "tensor", "graph"))
        if kind == "node":
            edits.set_metadata(graph, key, value, node=owner)
        elif kind == "tensor":
            edits.set_metadata(graph, key, value, tensor=owner)
        else:
            edits.set_metadata(graph, key, value)
    elif opt == "--rename":
        old, sep, new = text.partition("=")
        if not sep:
            raise EditError("expected OLD=NEW")
        if graph.index.has_node(old):
            edits.rename_node(graph, old, new)
        else:
            edits.rename_tensor(graph, old, new)
    else:
        tensor, sep, rest = text.rpartition("=")
        if not sep:
            raise EditError(f"expected TENSOR={'D,D,...' if opt == '--shape' else 'DTYPE'}")
        if opt == "--shape":
            edits.set_shape(graph, tensor, _dims(rest))
        else:
            edits.set_dtype(graph, tensor, rest)


def _split_value(text: str) -> tuple[str, object]:
    """``TARGET=VALUE`` with VALUE parsed as JSON (split at the first '=')."""
    target, sep, raw = text.partition("=")
    if not sep:
        raise EditError("expected TARGET=VALUE")
    try:  # measured on the text first: the edit and the save would recurse as deep
        value = json_text.loads(raw, limit=MAX_VALUE_DEPTH)
    except json_text.JsonTooDeep:
        raise EditError(_too_deep()) from None
    except ValueError as e:
        raise EditError(
            f"VALUE {raw!r} is not JSON ({e}); write numbers and lists as is and strings "
            "in double quotes, e.g. '\"same\"'"
        ) from e
    return target, value


def _too_deep() -> str:
    return f"VALUE is nested deeper than {MAX_VALUE_DEPTH} levels; give a flatter value"


def _kind_of(graph: Graph, ident: str, kinds: tuple[str, ...]) -> str | None:
    for kind in kinds:
        if kind == "node" and graph.index.has_node(ident):
            return kind
        if kind == "tensor" and any(t.id == ident for t in graph.tensors):
            return kind
        if kind == "graph" and ident == graph.id:
            return kind
    return None


def _split_id(graph: Graph, text: str, kinds: tuple[str, ...]) -> tuple[str, str]:
    """``ID.NAME`` split at the last dot whose left part is an id of one of ``kinds``."""
    at = text.rfind(".")
    while at > 0:
        if _kind_of(graph, text[:at], kinds) is not None:
            return text[:at], text[at + 1 :]
        at = text.rfind(".", 0, at)
    raise EditError(f"no {' or '.join(kinds)} id before a dot in '{text}'; write ID.NAME")


def _dims(text: str) -> list[int]:
    try:
        return parse_dims(text)
    except ValueError as e:
        raise EditError(str(e)) from e
