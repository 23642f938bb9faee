"""The one table of formats, and load/save that pick a format by a file's content."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import ModuleType

from xocview.errors import FormatError, UnknownFormatError
from xocview.formats import gguf, lightnet, nnvm, onnx, safetensors, tensorflow, tflite, xoc
from xocview.formats.keras import keras_file
from xocview.formats.llm import hf_model
from xocview.formats.pytorch import checkpoint, pt2, torchscript
from xocview.formats.signatures import recognise
from xocview.formats.source import Source
from xocview.model import Finding, Graph, Node, Tensor, validate
from xocview.model.clusters import add_cluster_groups
from xocview.model.dotted import expand_dotted_if_possible
from xocview.model.gc_pause import gc_paused
from xocview.model.sections import add_section_groups, without_sections

__all__ = ["FORMATS", "check", "detect", "file_filter", "load", "load_source", "save"]

# Each format package exposes NAME, EXTENSIONS, sniff(source) -> None | reason,
# load(source) -> Graph, and save(graph, path) where the format can be written. Adding a format
# adds one row. A format that sets EXPANDS_DOTTED_KEYS = True promises metadata without dotted
# keys, which spares a scan of every node's metadata after loading.
FORMATS: tuple[ModuleType, ...] = (
    xoc,
    nnvm,
    lightnet,
    hf_model,
    safetensors,
    gguf,
    pt2,
    torchscript,
    checkpoint,
    tflite,
    keras_file,
    tensorflow,
    onnx,
)


def detect(source: Source) -> ModuleType:
    """The format whose sniffer accepts the file.

    Formats claiming the file's extension are asked first, then the rest, since three formats
    share ``.json`` and files are often misnamed. Raises UnknownFormatError listing every
    format tried and why it refused.
    """
    _ = source.head  # a missing or unreadable file fails here, once, with its own message
    suffix = source.path.suffix.lower()
    ordered = sorted(FORMATS, key=lambda f: suffix not in f.EXTENSIONS)
    reasons: dict[str, str] = {}
    for fmt in ordered:
        try:
            why = fmt.sniff(source)
        except FormatError as e:
            if e is source.json_error:
                recognised = recognise(source.path, source.head)
                if recognised is not None:  # "[net]" opens a Darknet .cfg, not JSON
                    raise UnknownFormatError(source.name, reasons, recognised, _names()) from e
                raise  # a broken JSON file: the parse error is the useful message
            why = e.problem
        if why is None:
            return fmt
        reasons[fmt.NAME] = why
    raise UnknownFormatError(source.name, reasons, recognise(source.path, source.head), _names())


def file_filter() -> str:
    """A file dialog's filter: all readable files, then one entry per format (its
    extensions, from its row), then all files. Formats told by content share ``.json``."""
    entries = []
    every: list[str] = []
    for fmt in sorted(FORMATS, key=lambda f: f is not onnx):  # ONNX, the common one, first
        globs = [f"*{e}" for e in fmt.EXTENSIONS]
        every += [g for g in globs if g not in every]
        name = fmt.NAME.split(" (")[0]  # "PyTorch export (.pt2)": the globs say the rest
        entries.append(f"{name} ({' '.join(globs)})")
    return ";;".join([f"Models and graphs ({' '.join(every)})", *entries, "All files (*)"])


def _names() -> list[str]:
    """What a refusal offers: every format's name, in the table's order."""
    return [f.NAME for f in FORMATS]


def load(path: str | Path) -> Graph:
    """The graph in ``path``, whatever its format; FormatError says what is wrong and where."""
    return load_source(Source(path))[0]


def load_source(source: Source) -> tuple[Graph, ModuleType]:
    """The graph in ``source`` and the format that read it; the file is read once, whoever
    asked for its bytes first (the GUI wants the format's name too). Raises as ``load``.

    Levels too big to draw at once (a flat CNN export) get derived section groups, and runs of
    loose operators beside scope groups derived cluster groups, whatever the format; ``check``
    reads the file as it is, without them."""
    with gc_paused():  # parsing and building allocate ~1M containers; see gc_pause.py
        fmt = detect(source)
        graph = fmt.load(source)
        if not getattr(fmt, "EXPANDS_DOTTED_KEYS", False):
            _expand_metadata(graph)
        add_cluster_groups(graph)
        add_section_groups(graph)
    return graph, fmt


def _expand_metadata(graph: Graph) -> None:
    """Give every loader's metadata the form XOC JSON reads back: dotted keys expanded.

    Source formats have keys such as ONNX metadata_props "onnx.quant" or custom attribute
    names with dots; expanding them here makes a converted file load back equal. A key that
    conflicts with another ("a" and "a.b") is left as it is.
    """
    holders: list[Graph | Tensor | Node] = [graph, *graph.tensors, *graph.nodes]
    for item in holders:
        item.metadata = expand_dotted_if_possible(item.metadata)


def check(path: str | Path) -> tuple[Graph, list[Finding]]:
    """Every finding for a file, each fault once: its format-level faults and the model's
    validation, placed where the file holds the graph.

    A format may say where its graph sits in the file (``validation_place``: XOC JSON wrapped
    in ``{"graph": ...}`` gives ``graph.``), so that both kinds of finding name the same place;
    a validation finding at a place the reader already reported, or of a fault (``fault``) it
    already reported elsewhere, is the same fault and dropped.
    """
    source = Source(path)
    fmt = detect(source)
    reader = getattr(fmt, "read_findings", None)
    if reader is not None:
        graph, found = reader(source)
    else:
        graph, found = fmt.load(source), []
    where = getattr(fmt, "validation_place", None)
    prefix = where(source) if where is not None else ""
    reported = {f.place for f in found}
    faults = {f.fault for f in found if f.fault is not None}
    for f in validate(graph):
        if prefix:
            f = replace(f, place=prefix + f.place)
        if f.place not in reported and (f.fault is None or f.fault not in faults):
            found.append(f)
    return graph, found


def save(graph: Graph, path: str | Path) -> list[str]:
    """Write ``graph`` in the format its extension names: ``.json`` as XOC JSON, ``.onnx`` as
    ONNX. Returns notes on what the file could not keep (ONNX: weights without values, groups),
    empty when it kept everything; raises FormatError when nothing could be written.

    Derived section groups are left out: the next load makes them again."""
    path = Path(path)
    graph = without_sections(graph)
    for fmt in FORMATS:
        if path.suffix.lower() in fmt.EXTENSIONS and hasattr(fmt, "save"):
            notes = fmt.save(graph, path)
            return list(notes) if notes else []
    raise FormatError(
        str(path),
        "",
        f"cannot save as '{path.suffix or 'no extension'}'",
        "a .json path (XOC JSON) or an .onnx path (ONNX)",
    )
