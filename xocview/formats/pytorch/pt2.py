"""torch.export archives (``.pt2``) read without torch: the format contract.

``torch.export.save`` of torch 2.7 and later writes a zip whose members sit in one folder:
``archive_format`` (``pt2``), ``models/<name>.json`` (the serialized ExportedProgram),
``data/weights/`` and ``data/constants/`` (raw tensor payloads and their JSON configs).
torch 2.5-2.6 wrote ``serialized_exported_program.json`` with the weights in one
``torch.save`` pickle, read with the restricted unpickler (``pt2_pickled``). Only the zip's
directory and the JSON members are read on opening; weights are memory-mapped on first use.
"""

from __future__ import annotations

from xocview.errors import FormatError
from xocview.formats.pytorch.pt2_graph import build_graph
from xocview.formats.pytorch.pt2_pickled import pickled_weights
from xocview.formats.pytorch.pt2_schema import Json
from xocview.formats.pytorch.pt2_weights import Payload, payloads, read_json
from xocview.formats.source import Source
from xocview.formats.zip_members import ZipMembers, is_zip
from xocview.model import Graph

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]

NAME = "PyTorch export (.pt2)"
EXTENSIONS = (".pt2",)

_LEGACY = "serialized_exported_program.json"
_SCHEMA_MAJOR = 8  # the newest major version of torch's export schema this reader knows


def sniff(source: Source) -> str | None:
    """None for a torch.export archive, else why not. A damaged zip named ``.pt2`` is taken,
    so that ``load`` says what is wrong with it."""
    if not is_zip(source.head):
        return "not a zip archive"
    try:
        members = ZipMembers(source.path, source.name)
    except FormatError:
        if source.path.suffix.lower() == ".pt2":
            return None
        return "a damaged zip archive"
    try:
        if _model_members(members) or members.has(members.root + _LEGACY):
            return None
        return "a zip archive without models/*.json (not a torch.export archive)"
    finally:
        members.close()


def load(source: Source) -> Graph:
    """The graph of the archive's model (``model`` when it holds several)."""
    members = ZipMembers(source.path, source.name)
    root = members.root
    models = _model_members(members)
    if not models:
        if members.has(root + _LEGACY):
            return _legacy(members, source)
        raise FormatError(
            source.name, f"{root}models/", "no model JSON in the archive", "models/<name>.json"
        )
    member = next((m for m in models if m.endswith("/model.json")), models[0])
    name = member.rpartition("/")[2].removesuffix(".json")
    doc = read_json(members, member)
    j = Json(source.name, member)
    _check_version(j, doc)
    big = members.has(root + "byteorder") and members.read(root + "byteorder").strip() == b"big"
    found: dict[str, Payload] = {}
    for folder, config in (("weights", "weights_config"), ("constants", "constants_config")):
        base = f"{root}data/{folder}/"
        for p in payloads(members, f"{base}{name}_{config}.json", base, big):
            found.setdefault(p.fqn, p)
    legacy = None
    pickled = [f"{root}data/{f}/{name}.pt" for f in ("weights", "constants")]
    if members.has(pickled[0]):
        legacy = pickled_weights(members, [p for p in pickled if members.has(p)])
    graph = build_graph(j, doc, found, _title(source), legacy)
    if len(models) > 1:
        graph.metadata["torch_export"]["models"] = [
            m.rpartition("/")[2].removesuffix(".json") for m in models
        ]
    return graph


def _legacy(members: ZipMembers, source: Source) -> Graph:
    """torch 2.5-2.6's layout: the program JSON beside pickled state dict and constants."""
    member = members.root + _LEGACY
    doc = read_json(members, member)
    j = Json(source.name, member)
    _check_version(j, doc)
    pickled = [members.root + f"serialized_{p}.pt" for p in ("state_dict", "constants")]
    legacy = pickled_weights(members, [p for p in pickled if members.has(p)])
    return build_graph(j, doc, {}, _title(source), legacy)


def _model_members(members: ZipMembers) -> list[str]:
    prefix = members.root + "models/"
    return sorted(
        n
        for n in members.names
        if n.startswith(prefix) and n.endswith(".json") and "/" not in n[len(prefix) :]
    )


def _check_version(j: Json, doc: object) -> None:
    """Refuse a schema whose major version is newer than this reader knows."""
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if not isinstance(version, dict):
        return
    major = version.get("major")
    if isinstance(major, int) and major > _SCHEMA_MAJOR:
        raise j.error(
            "schema_version",
            f"export schema {major}.{version.get('minor')} is newer than this reader",
            f"schema major version {_SCHEMA_MAJOR} or earlier",
        )


def _title(source: Source) -> str:
    return source.path.stem or source.path.name
