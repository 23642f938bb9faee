"""The public Python API: ``xocview.load``, ``render``, ``show``, ``profile``, ``diff`` and
``overlay`` for scripts and notebooks.

Each call is a thin layer over the code the command line runs (the format registry, ``xocview
render``'s drawing, ``xocview diff``'s report, ``import-times``' Model Explorer reader), so a
file gives the same graph, picture and report either way, and failures are the same one-line
``XocviewError``s. Qt is imported only inside the calls that draw or open a window; torch only
when the caller hands over a torch object (it is never a dependency).

A source is anything ``load`` takes: a path (a file or a model folder), the bytes of a file,
an ``onnx.ModelProto``, a ``Graph``, and where torch is installed an ``nn.Module`` with
``args=``, a ``torch.export.ExportedProgram`` or a ``torch.onnx.ONNXProgram``.
"""

from __future__ import annotations

import json
import numbers
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from xocview.errors import ApiError, XocviewError, shorten
from xocview.formats.profiles import model_explorer, read_profile
from xocview.formats.profiles.result import ImportedProfile, source_name
from xocview.formats.source import Source
from xocview.model import Graph, edits
from xocview.model.analyses.diff import GraphDiff, diff_graphs
from xocview.model.analyses.metrics import metric_key, metric_names
from xocview.sources import is_model_proto, load_source, type_name

if TYPE_CHECKING:
    from xocview.cli.profiling import ProfileResult
    from xocview.ui.canvas.drawing import Drawing
    from xocview.ui.canvas.heat import HeatLevels

__all__ = [
    "Diff",
    "Rendered",
    "diff",
    "load",
    "overlay",
    "profile",
    "render",
    "show",
    "write_node_data",
]

_THEMES = ("light", "dark")
_LISTED = 5  # unmatched overlay keys a warning names


# -- load ------------------------------------------------------------------------------------


def load(source: object, *, args: object = None, name: str | None = None) -> Graph:
    """The graph of ``source`` (see the module docstring for what it may be).

    ``args`` are the example inputs ``torch.export.export`` traces an ``nn.Module`` with (a
    tuple, or one tensor); ``name``, when given, becomes the graph's name (a ``Graph`` passed
    in is returned as it is). Raises the reader's FormatError, or ApiError for a type no
    reader takes.
    """
    return load_source(source, args=args, name=name)


# -- render ----------------------------------------------------------------------------------


@dataclass(eq=False)
class Rendered:
    """A graph drawn as ``xocview render`` draws it, shown inline by Jupyter (PNG and SVG made
    on first use, offline) and written to a file by ``save``."""

    graph: Graph
    theme: str
    drawing: Drawing = field(repr=False)
    heat: HeatLevels | None = field(repr=False)
    _made: dict[str, bytes] = field(default_factory=dict, repr=False)

    def image(self, suffix: str) -> bytes:
        """The picture as ``.png`` or ``.svg`` bytes (made once each)."""
        suffix = suffix.lower()
        if suffix not in self._made:
            from xocview.ui.headless import ensure_gui_application
            from xocview.ui.render import render_bytes

            ensure_gui_application()
            data, _ = render_bytes(self.drawing, suffix, self.theme, 1.0, self.heat, "<render>")
            self._made[suffix] = data
        return self._made[suffix]

    def _repr_png_(self) -> bytes:
        return self.image(".png")

    def _repr_svg_(self) -> str:
        return self.image(".svg").decode("utf-8")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the picture to ``path`` (``.png`` or ``.svg``, chosen by the extension)."""
        from xocview.ui.headless import ensure_gui_application
        from xocview.ui.render import render_to_file

        out = Path(path)
        ensure_gui_application()
        render_to_file(self.drawing, out, self.theme, 1.0, self.heat)
        return out

    def __repr__(self) -> str:
        return f"<Rendered graph '{self.graph.name}': {len(self.graph.nodes)} nodes>"


@overload
def render(
    source: object,
    path: None = None,
    *,
    level: int | None = None,
    expand_all: bool = False,
    theme: str = "light",
    colour_by: str | None = None,
) -> Rendered: ...


@overload
def render(
    source: object,
    path: str | os.PathLike[str],
    *,
    level: int | None = None,
    expand_all: bool = False,
    theme: str = "light",
    colour_by: str | None = None,
) -> Path: ...


def render(
    source: object,
    path: str | os.PathLike[str] | None = None,
    *,
    level: int | None = None,
    expand_all: bool = False,
    theme: str = "light",
    colour_by: str | None = None,
) -> Rendered | Path:
    """Draw ``source`` as ``xocview render`` does (the window's first view, groups above
    depth ``level`` open, or all of them with ``expand_all``): into ``path`` (.png or .svg,
    returned), or, without one, as a ``Rendered`` a notebook shows inline.

    Nodes are heat-coloured by a metric stored with ``overlay``: ``colour_by`` names it
    (``"category"``: the categories' colours); by default the graph's one metric, if it has
    exactly one.
    """
    if level is not None and expand_all:
        raise ApiError("render takes level= or expand_all=True, not both")
    if theme not in _THEMES:
        raise ApiError(f"theme {theme!r} is not one of {', '.join(_THEMES)}")
    graph = load(source)
    metric = _colour_metric(graph, colour_by)
    from xocview.ui.headless import ensure_gui_application, graph_drawing, metric_heat

    ensure_gui_application()
    drawing = graph_drawing(graph, level=level, expand_all=expand_all)
    heat = metric_heat(graph, drawing, metric) if metric is not None else None
    picture = Rendered(graph, theme, drawing, heat)
    return picture if path is None else picture.save(path)


def _colour_metric(graph: Graph, colour_by: str | None) -> str | None:
    """The metric to heat-colour by, or None for the categories' colours."""
    if colour_by == "category":
        return None
    names = metric_names(graph)
    if colour_by is None:
        if len(names) > 1:
            warnings.warn(
                f"graph '{graph.name}' stores {len(names)} metrics ({', '.join(names)}); "
                "coloured by category: name one with colour_by=",
                stacklevel=3,
            )
        return names[0] if len(names) == 1 else None
    if colour_by not in names:
        stored = ", ".join(names) if names else "none"
        raise ApiError(
            f"colour_by={colour_by!r}: graph '{graph.name}' stores no such metric "
            f"(stored: {stored}); give one of them or 'category'"
        )
    return colour_by


# -- diff ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Diff:
    """What changed between two graphs, as ``xocview diff`` reports it."""

    result: GraphDiff
    old_file: str | None = None  # the path given, when the side came from one
    new_file: str | None = None

    @property
    def equal(self) -> bool:
        return self.result.equal

    def to_json(self) -> str:
        """What ``xocview diff --json`` prints (without print's final newline); a side not
        read from a path has ``"file": null``."""
        from xocview.cli.diff import json_report

        return json_report(self.result, self.old_file, self.new_file)

    def report(self, limit: int = 50) -> str:
        """The text ``xocview diff`` prints, at most ``limit`` findings of each kind (0: all)."""
        from xocview.cli.diff import report_lines

        old = self.old_file or f"<graph '{self.result.old.name}'>"
        new = self.new_file or f"<graph '{self.result.new.name}'>"
        return "\n".join(report_lines(self.result, old, new, limit))

    def show(self) -> None:
        """The two graphs side by side in the desktop window."""
        from xocview.ui.show_client import show_compare

        show_compare(self.result.old, self.result.new, name=None)

    def __repr__(self) -> str:
        if self.equal:
            return f"<Diff: equal ({self.result.matched_nodes()} nodes matched)>"
        counts = ", ".join(f"{n} {kind}" for kind, n in self.result.counts().items() if n)
        n = len(self.result.findings)
        return f"<Diff: {n} difference{'s' * (n != 1)} ({counts})>"


def diff(a: object, b: object) -> Diff:
    """Compare ``a`` (old) with ``b`` (new), each anything ``load`` takes."""
    old, new = load(a), load(b)
    return Diff(diff_graphs(old, new), _path_text(a), _path_text(b))


def _path_text(source: object) -> str | None:
    return os.fspath(source) if isinstance(source, (str, os.PathLike)) else None


# -- overlay ---------------------------------------------------------------------------------


def overlay(source: object, values: object, *, name: str) -> Graph:
    """The graph of ``source`` with ``values`` stored as the metric ``performance.<name>``,
    as an imported Model Explorer metric is (the window and ``render`` colour by it).

    ``values`` maps node ids, node names or output tensor names to numbers, or is Model
    Explorer node data: a dict, or the path of its JSON file (any profile ``xocview
    import-times`` reads). A ``Graph`` passed in is changed in place. Keys that match no node
    are named in a ``UserWarning`` (up to five); none matching raises XocviewError.
    """
    graph = load(source)
    label, result = _read_values(graph, values, name)
    if not result.values:
        raise XocviewError(result.nothing_matched(label, f"graph '{graph.name}'"))
    if result.unmatched:
        names = [u.name for u in result.unmatched]
        more = f" and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
        warnings.warn(
            f"overlay '{result.source}': {len(names)} key{'s' * (len(names) != 1)} matched no "
            f"node of graph '{graph.name}': {', '.join(names[:_LISTED])}{more}",
            stacklevel=2,
        )
    edits.import_values(graph, result.key, result.values, result.description)
    return graph


def _read_values(graph: Graph, values: object, name: str) -> tuple[str, ImportedProfile]:
    """What ``values`` gives the graph's nodes, read by the profile readers."""
    if isinstance(values, (str, os.PathLike)):
        return os.fspath(values), read_profile(Path(values), graph, name)
    if not isinstance(values, Mapping):
        raise ApiError(
            f"overlay values: got {type_name(values)}; expected a mapping of node or tensor "
            "names to numbers, Model Explorer node data (a dict) or the path of its JSON file"
        )
    if source_name(name) == "time":
        raise ApiError("overlay name 'time' is taken (performance.time holds times by source)")
    label = "<values>"
    doc = values if _is_node_data(values) else {"results": _results(values)}
    try:
        text = json.dumps(doc, allow_nan=True)
    except (TypeError, ValueError) as e:
        raise ApiError(f"overlay values: not JSON data ({e})") from e
    source = Source.in_memory(text.encode("utf-8"), "values.json", label)
    return label, model_explorer.read(source, graph, source_name(name))


def _is_node_data(values: Mapping[Any, Any]) -> bool:
    """True for Model Explorer node data: ``{"results": {...}}`` or such by graph id."""
    if isinstance(values.get("results"), Mapping):
        return True
    return bool(values) and all(
        isinstance(v, Mapping) and isinstance(v.get("results"), Mapping) for v in values.values()
    )


def _results(values: Mapping[Any, Any]) -> dict[str, dict[str, object]]:
    """Key -> number as node data results; ApiError for a key or value of another type."""
    out: dict[str, dict[str, object]] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise ApiError(f"overlay values: key {key!r} is {type_name(key)}; expected a name")
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            out[key] = {"value": float(value)}
        else:
            raise ApiError(
                f"overlay values: '{shorten(key)}' is {type_name(value)}; expected a number"
            )
    return out


def write_node_data(graph: Graph, name: str, path: str | os.PathLike[str]) -> Path:
    """Write the metric ``performance.<name>`` of ``graph``'s nodes as Model Explorer node
    data JSON (``{graph id: {"results": {node id: {"value": v}}}}``), which Model Explorer
    and ``overlay`` read back. ApiError when no node stores the metric."""
    out = Path(path)
    if not model_explorer.write(graph, name, out):
        raise ApiError(f"graph '{graph.name}': no node stores {metric_key(name)}")
    return out


# -- show and profile ------------------------------------------------------------------------


def show(source: object, *, name: str | None = None, watch: bool = False) -> None:
    """Open ``source`` in the desktop window (the running xocview's, else a new one) without
    blocking; a second call with the same ``name`` replaces that tab. ``watch`` reloads it
    when its file changes (a path only)."""
    graph = load(source)
    path = Path(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else None
    if watch and path is None:
        raise ApiError(f"watch=True needs a path to watch; got {type_name(source)}")
    from xocview.ui.show_client import show_graph

    show_graph(graph, name=name, path=path, watch=watch, onnx_bytes=_onnx_bytes(source))


def _onnx_bytes(source: object) -> bytes | None:
    """The serialized model of a ModelProto or a torch.onnx program, which the window reads
    with its weights' values (the XOC JSON of the graph keeps none); None for other sources
    and for models over protobuf's 2 GB."""
    model: Any = getattr(source, "model_proto", source)
    if not is_model_proto(model):
        return None
    try:
        return bytes(model.SerializeToString())
    except ValueError:  # over 2 GB: the graph goes as XOC JSON
        return None


def profile(
    source: object,
    inputs: Mapping[str, Any] | Sequence[Any] | None = None,
    *,
    repeat: int = 5,
    warmup: int = 1,
    threads: int = 1,
    engine: str = "xocview",
) -> ProfileResult:
    """Run ``source`` ``repeat`` times after ``warmup`` runs and time every node, as ``xocview
    run`` does; returns the ProfileResult of ``xocview.cli.profiling.profile_graph``."""
    graph = load(source)
    from xocview.cli.profiling import profile_graph

    return profile_graph(
        graph, inputs, repeat=repeat, warmup=warmup, threads=threads, engine=engine
    )
