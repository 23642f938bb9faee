"""The pickles of a TorchScript archive, read as data: the module tree, its constants and the
example inputs a trace was made with.

``data.pkl`` holds the top module as objects of the archive's own classes
(``__torch__.torch.nn.modules.conv.Conv2d``) whose state is their attributes: parameters,
buffers, submodules, flags such as ``training``. Those classes are granted to the restricted
unpickler only as inert records (``ObjectRecord``: the class name and the state BUILD gave,
nothing imported, no method run). Tensors are lazy records of ``data/<key>``;
``constants.pkl`` (``CONSTANTS.c0`` ...) reads ``constants/<key>`` and ``traced_inputs.pkl``
``traced_inputs/<key>``. ``torch.jit._pickle``'s list builders and type tags are read as
the values they wrap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xocview.errors import FormatError, shorten
from xocview.formats.pytorch.stand_ins import BadValue
from xocview.formats.pytorch.unpickle import (
    MAX_PICKLE,
    LazyStorage,
    ObjectRecord,
    RefusedClass,
    TensorRecord,
    load_pickle,
    record_class,
)
from xocview.formats.zip_members import ZipMembers

__all__ = ["ObjectRecord", "Pickles", "TensorRecord", "read_pickles"]


@dataclass
class Pickles:
    """What the archive's pickles hold: the top module, the constants and the traced inputs
    (None when the archive has none)."""

    module: ObjectRecord
    constants: tuple[Any, ...]
    traced_inputs: list[Any] | None
    info: dict[str, Any] = field(default_factory=dict)


def _tagged(value: Any, type_text: Any = None) -> Any:
    """``restore_type_tag(value, 'List[int]')``: the value; its TorchScript type is dropped."""
    return value


def _as_list(items: Any = ()) -> list[Any]:
    if not isinstance(items, (list, tuple)):
        raise BadValue("a TorchScript list built from something that is not a list")
    return list(items)


_JIT = {
    "restore_type_tag": _tagged,
    "build_intlist": _as_list,
    "build_floatlist": _as_list,
    "build_doublelist": _as_list,
    "build_boollist": _as_list,
    "build_tensorlist": _as_list,
}


class _Allow:
    """The allow hook: each ``__torch__.*`` class as a record class of its own (one per
    name, so a module's class is told from its record), ``torch.jit._pickle`` helpers as
    plain functions; anything else stays refused."""

    def __init__(self) -> None:
        self.made: dict[str, type[ObjectRecord]] = {}

    def __call__(self, module: str, name: str) -> Any:
        if module == "__torch__" or module.startswith("__torch__."):
            key = f"{module}.{name}"
            if key not in self.made:
                self.made[key] = record_class(module, name)
            return self.made[key]
        if module == "torch.jit._pickle":
            return _JIT.get(name)
        return None


def read_pickles(members: ZipMembers) -> Pickles:
    """The archive's pickles; FormatError naming the member for a missing or refused one."""
    root, file = members.root, members.file
    allow = _Allow()
    data = root + "data.pkl"
    if not members.has(data):
        raise FormatError(
            file, data, "missing: the archive has no module object", "a torch.jit.save archive"
        )
    module = _load(members, data, "data", allow)
    if not isinstance(module, ObjectRecord) or not isinstance(module.state, dict):
        raise FormatError(
            file, data, f"holds {shorten(type(module).__name__)}", "a TorchScript module object"
        )
    constants: tuple[Any, ...] = ()
    if members.has(root + "constants.pkl"):
        got = _load(members, root + "constants.pkl", "constants", allow)
        if not isinstance(got, tuple):
            raise FormatError(file, root + "constants.pkl", "is not a tuple", "CONSTANTS.c0, ...")
        constants = got
    traced = None
    if members.has(root + "traced_inputs.pkl"):
        found = _load(members, root + "traced_inputs.pkl", "traced_inputs", allow)
        forward = found.get("forward") if isinstance(found, dict) else None
        traced = forward if isinstance(forward, list) else None
    info: dict[str, Any] = {}
    if members.has(root + "version"):
        info["version"] = members.read(root + "version", 64).decode("latin1").strip()
    return Pickles(module, constants, traced, info)


def _load(members: ZipMembers, member: str, folder: str, allow: _Allow) -> Any:
    root, file = members.root, members.file
    big = members.has(root + "byteorder") and members.read(root + "byteorder", 64).strip() == b"big"

    def storage(key: str, dtype: str, numel: int) -> LazyStorage:
        name = f"{root}{folder}/{key}"
        if not members.has(name):
            raise FormatError(file, shorten(name), f"a storage {member} names is missing")
        made = LazyStorage(key, dtype, numel, lambda: members.array(name), file, name, big)
        # traced inputs are saved as shapes and dtypes only: their storages are empty
        if folder != "traced_inputs" and members.size(name) < made.nbytes:
            raise FormatError(
                file,
                name,
                f"holds {members.size(name):,} bytes, fewer than the {made.nbytes:,} "
                f"of its {numel:,} {dtype} values",
                "a storage as long as the pickle says",
            )
        return made

    data = members.read(member, MAX_PICKLE)
    try:
        return load_pickle(data, file, storage, member, allow)
    except RefusedClass as e:
        raise _refused(e) from None


def _refused(e: RefusedClass) -> RefusedClass:
    """The same refusal, saying what a TorchScript pickle may hold."""
    made = RefusedClass.__new__(RefusedClass)
    FormatError.__init__(
        made, e.file, e.place, e.problem, "the archive's own __torch__ classes, tensors and values"
    )
    made.qualname = e.qualname
    return made
