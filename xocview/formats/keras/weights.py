"""Layer weights in the HDF5 weights file, found by layer and read on first use.

Keras 3 (``model.weights.h5`` in a ``.keras`` zip) keeps each layer's variables as
``layers/<key>/vars/0..n`` where ``<key>`` is the snake-case class name made unique within
its model in the order the model lists its layers (``dense``, ``dense_1``); a nested model's
layers sit under ``layers/<its key>/layers/``. Legacy ``.h5`` files keep them under
``model_weights/<top-level layer>/``, listed in order by that group's ``weight_names``
attribute (``block/proj/kernel:0``); a weight belongs to the nested layer its name's last
folder names. Only shapes and dtypes are read here; values are read when first used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.model import Tensor
from xocview.model.dtypes import DTYPES

__all__ = ["H5_ERRORS", "LayerKey", "Weights", "snake_case"]

_NP_NAMES = {"float64": "double"}
# What h5py raises for a damaged file (its HDF5 library's errors as Python exceptions).
H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, AttributeError)


def snake_case(name: str) -> str:
    """Keras's ``to_snake_case``: ``DepthwiseConv2D`` -> ``depthwise_conv2d``."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


@dataclass(frozen=True)
class LayerKey:
    """Where one layer's weights are: its Keras 3 group and its legacy top-level layer."""

    h5: str  # "layers/functional/layers/dense_1"
    top: str  # the top-level layer's name (legacy .h5)
    leaf: str  # the layer's own name
    nested: bool  # inside a nested model


class Weights:
    """The weights file (an open ``h5py.File``, or None for a model without one)."""

    def __init__(self, h5: Any, file: str, legacy: bool) -> None:
        self.h5, self.file, self.legacy = h5, file, legacy

    def tensors(self, key: LayerKey, node_id: str) -> list[Tensor]:
        """The layer's weights in Keras's order, as lazy weight tensors."""
        if self.h5 is None:
            return []
        try:
            found = self._legacy(key) if self.legacy else self._keras3(key)
            return [self._tensor(f"{node_id}/{label}", ds, place) for label, ds, place in found]
        except H5_ERRORS as e:  # a damaged file: h5py reports what its HDF5 library found
            place = f"model_weights/{key.top}" if self.legacy else key.h5
            raise FormatError(self.file, place, f"cannot be read ({e})") from e

    def _keras3(self, key: LayerKey) -> list[tuple[str, Any, str]]:
        group = self.h5.get(key.h5)
        return [] if group is None else _vars(group, key.h5, "")

    def _legacy(self, key: LayerKey) -> list[tuple[str, Any, str]]:
        root = self.h5.get("model_weights", self.h5)
        group = root.get(key.top)
        if group is None:
            return []
        listed = [_text(n) for n in group.attrs.get("weight_names", [])]
        found = []
        for name in listed:
            parts = name.split("/")
            if key.nested and (len(parts) < 2 or parts[-2] != key.leaf):
                continue
            ds = group.get(name)
            place = f"model_weights/{key.top}/{name}"
            if ds is None or not hasattr(ds, "shape"):
                raise FormatError(self.file, place, "is listed in weight_names but missing")
            found.append((parts[-1].removesuffix(":0"), ds, place))
        return found

    def _tensor(self, tid: str, ds: Any, place: str) -> Tensor:
        dtype = _NP_NAMES.get(ds.dtype.name, ds.dtype.name)
        if dtype not in DTYPES or ds.dtype.kind not in "fiub":
            raise FormatError(self.file, place, f"holds {ds.dtype}", "numbers")
        shape = [int(n) for n in ds.shape]
        file = self.file

        def read() -> np.ndarray:
            try:
                return np.asarray(ds[()])
            except H5_ERRORS as e:
                raise FormatError(file, place, f"cannot be read ({e})") from e

        return Tensor(tid, "weight", shape, dtype, {"h5": place}, read)


def _text(name: object) -> str:
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)


def _vars(group: Any, place: str, label: str) -> list[tuple[str, Any, str]]:
    """A Keras 3 layer's own ``vars/0..n``, then its sub-layers' (an RNN's ``cell``,
    Bidirectional's ``forward_layer``, MultiHeadAttention's ``query_dense``...) by name."""
    found = []
    own = group.get("vars")
    if own is not None and hasattr(own, "keys"):
        for n in sorted((n for n in own if n.isdigit()), key=int):
            found.append((f"{label}vars/{n}", own[n], f"{place}/vars/{n}"))
    for name in sorted(group):
        sub = group[name]
        if name not in ("vars", "layers") and hasattr(sub, "keys"):
            found.extend(_vars(sub, f"{place}/{name}", f"{label}{name}/"))
    return found
