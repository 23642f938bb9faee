"""PyTorch checkpoints and state dicts (``torch.save``: .pt, .pth, .bin, .ckpt) as a module
tree of their weights, read without torch and without unpickling freely.

Told from the head: a zip whose members sit in one folder with ``data.pkl`` (and neither
TorchScript's ``code/`` nor torch.export's ``models/``), or the legacy layout's magic number.
The pickle goes through the restricted unpickler; values stay in the file until first used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xocview.errors import FormatError
from xocview.formats.pytorch.state_tree import flatten
from xocview.formats.pytorch.torch_save import read_legacy, read_zip
from xocview.formats.source import Source
from xocview.formats.weight_tree import weight_graph
from xocview.formats.zip_members import ZipMembers, is_zip
from xocview.model import Graph

__all__ = ["EXPANDS_DOTTED_KEYS", "EXTENSIONS", "NAME", "load", "sniff"]

NAME = "PyTorch checkpoint"
EXTENSIONS = (".pt", ".pth", ".bin", ".ckpt")
# Metadata keys come from the checkpoint's dict keys, split at their dots by flatten.
EXPANDS_DOTTED_KEYS = True

# The legacy layout's first pickle, the number 0x1950A86A20F9469CFC6C, as any protocol
# writes its payload (LONG1 of 10 bytes).
_MAGIC_PAYLOAD = b"\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
# Members that make a torch zip another format: TorchScript, torch.export.
_OTHER_FORMATS = ("code/", "models/", "constants.pkl", "archive_format")


def _is_legacy(head: bytes) -> bool:
    return head[:1] == b"\x80" and _MAGIC_PAYLOAD in head[:32]


def sniff(source: Source) -> str | None:
    """None for a torch.save checkpoint, else why not. A damaged zip with a checkpoint's
    extension is taken, so that ``load`` says what is wrong with it."""
    head = source.head
    if _is_legacy(head):
        return None
    if not is_zip(head):
        return "neither a zip archive nor a legacy torch.save file"
    try:
        members = ZipMembers(source.path, source.name)
    except FormatError:
        return None if source.path.suffix.lower() in EXTENSIONS else "a damaged zip archive"
    try:
        return _not_checkpoint(members)
    finally:
        members.close()


def _not_checkpoint(members: ZipMembers) -> str | None:
    root = members.root
    if not root or not members.has(root + "data.pkl"):
        return "a zip archive without <folder>/data.pkl (not a torch.save checkpoint)"
    for other in _OTHER_FORMATS:
        if any(n.startswith(root + other) for n in members.names):
            return f"a zip archive with {root}{other} (TorchScript or torch.export, not torch.save)"
    return None


def load(source: Source) -> Graph:
    """The module tree of the checkpoint's tensors; its other values in metadata."""
    head = source.head
    if _is_legacy(head):
        obj, info = read_legacy(source.path, source.name)
    else:
        members = ZipMembers(source.path, source.name)
        why = _not_checkpoint(members)
        if why is not None:
            raise FormatError(source.name, "zip directory", why, "a torch.save checkpoint")
        obj, info = read_zip(members)
    weights, values, model_key = flatten(obj, source.name)
    if model_key is not None:
        info["state_dict_key"] = model_key
    metadata: dict[str, Any] = {"pytorch": info}
    if values:
        metadata["checkpoint"] = values
    stem = _stem(source.path)
    return weight_graph(stem, stem, weights, metadata)


def _stem(path: Path) -> str:
    return path.stem or path.name
