"""Weights of .pt2 archives that torch before 2.7 wrote as ``torch.save`` pickles.

torch 2.5 and 2.6 stored the state dict (``serialized_state_dict.pt``, later
``data/weights/<model>.pt``) and the constants as a ``torch.save`` zip inside the archive. It
is opened in place (its stored members stay views of the archive's memory map) and read with
the restricted unpickler, which imports and calls nothing; a tensor is then looked up by its
fully qualified name, its values read on first use.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.errors import FormatError
from xocview.formats.pytorch.lazy_tensor import TensorRecord
from xocview.formats.pytorch.pt2_weights import Reader, refused
from xocview.formats.pytorch.torch_save import read_zip
from xocview.formats.zip_members import ZipMembers

__all__ = ["pickled_weights"]


def pickled_weights(members: ZipMembers, pickles: list[str]) -> Callable[[str], Reader]:
    """A reader per FQN from the pickled state dicts ``pickles`` (members of the archive
    that exist); an FQN none of them holds gets a reader that says so. A pickle that cannot
    be read (a refused class, a damaged zip) makes every reader raise its error."""
    found: dict[str, TensorRecord] = {}
    failure: FormatError | None = None
    for member in pickles:
        try:
            obj, _ = read_zip(members.inner(member))
        except FormatError as e:
            failure = failure or e
            continue
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(key, str) and isinstance(value, TensorRecord):
                    found.setdefault(key, value)

    def lookup(fqn: str) -> Reader:
        record = found.get(fqn)
        if record is not None:
            return record.values
        if failure is not None:
            return _raising(failure)
        where = ", ".join(p.rpartition("/")[2] for p in pickles)
        return refused(members.file, where, f"a pickle that holds no tensor {fqn!r}")

    return lookup


def _raising(error: FormatError) -> Reader:
    def read() -> np.ndarray:
        raise error

    return read
