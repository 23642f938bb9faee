"""A tensor attribute whose values are read on first use, as a weight's are.

A tensor in a node attribute (Constant's ``value``) is a JSON value in the shared model:
``{"dtype": ..., "shape": [...], "values": [...]}``. A few values fit in JSON; a Constant that
holds a model's weights (paddle2onnx writes them so) holds millions, which would take seconds
and gigabytes as Python lists. Those keep only dtype and shape as JSON and carry a lazy handle
beside them, like ``Tensor.data``: run and ONNX saves read the values, XOC JSON and the
inspector see the summary. The handle takes no part in equality, as weight values do not.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from xocview.model.graph import LazyData

__all__ = ["AttributeTensor", "lazy_attribute_tensors"]


class AttributeTensor(dict[str, Any]):
    """The JSON summary of a tensor attribute (dtype, shape) with its values read on demand.

    A dict, so that everything that reads attributes (XOC JSON, the inspector, search, edits)
    sees the summary unchanged; only ``has_data`` and ``array()`` know the values.
    """

    __slots__ = ("_data",)

    def __init__(self, summary: dict[str, Any], data: np.ndarray | LazyData) -> None:
        super().__init__(summary)
        self._data = data

    @property
    def has_data(self) -> bool:
        return self._data is not None

    @property
    def is_read(self) -> bool:
        """Whether the values have been read (an array is held, not the reader)."""
        return isinstance(self._data, np.ndarray)

    def array(self) -> np.ndarray:
        """The values, read (once) on first use; raises what the reader raises (FormatError
        naming the place for damaged or missing data)."""
        if not isinstance(self._data, np.ndarray):
            self._data = self._data()
        return self._data

    def copy(self) -> AttributeTensor:
        return AttributeTensor(dict(self), self._data)

    def __copy__(self) -> AttributeTensor:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> AttributeTensor:
        """The summary copied, the values shared (they are never changed in place)."""
        return AttributeTensor(copy.deepcopy(dict(self), memo), self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        return AttributeTensor, (dict(self), self._data)


def lazy_attribute_tensors(value: Any) -> list[AttributeTensor]:
    """The tensors of one attribute value (a tensor or a list of them) whose values are not
    in the JSON summary but behind a handle."""
    if isinstance(value, dict):
        inner = value.get("tensor")
        return [inner] if isinstance(inner, AttributeTensor) and inner.has_data else []
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [t for v in value for t in lazy_attribute_tensors(v)]
    return []
