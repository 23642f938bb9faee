"""TensorList ops (what tf.TensorArray, and so Keras RNN layers, write) as plain tensors.

A list of ``n`` elements is a tensor whose axis 0 is the element index. A reserved list is
zeros of shape ``[n, 1, ..., 1]`` (one 1 per element axis: the element shape is often only
known when the loop runs; a list of unknown element rank is zeros ``[n]``); setting element
``i`` is a Where over axis 0 that broadcasts it to the element's shape, so the list takes
that shape on its first write. Reading element ``i`` is a Gather, stacking the list is the
tensor itself.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.tensorflow.lower import NotMapped, TfEmit

__all__ = ["TENSOR_LISTS"]


def _element_dtype(e: TfEmit) -> str:
    dtype = str(e.attr("element_dtype"))
    if dtype == "undefined":
        raise NotMapped("element_dtype is not a number type")
    e.tensors[e.outs[0]].dtype = dtype
    return dtype


def reserve(e: TfEmit) -> None:
    """(element_shape, num_elements) -> zeros [n, 1 per element axis]; a list of unknown
    element rank (element_shape -1) as zeros [n]: only elements of rank 0 can be set in it."""
    dtype = _element_dtype(e)
    rank = len(e.ints(0)) if e.value(0).ndim == 1 else 0
    n = e.op1("Cast", [e.op1("Reshape", [e.x(1), e.i64([1], "one")])], attrs={"to": 7})
    shape = e.op1("Concat", [n, e.i64([1] * rank, "ones")], attrs={"axis": 0}, dtype="int64")
    zero = e.const([0], dtype, "zero")
    e.last("Expand", [zero, shape])


def set_item(e: TfEmit) -> None:
    """(list, index, item) -> the list with element ``index`` replaced by ``item``."""
    _element_dtype(e)
    lst, item = e.x(0), e.x(2)
    count = e.op1("Gather", [e.op1("Shape", [lst], dtype="int64"), e.i64([0], "axis0")])
    positions = e.op1("Range", [e.i64([0], "start"), count, e.i64([1], "step")], dtype="int64")
    index = e.op1("Cast", [e.x(1)], attrs={"to": 7}, dtype="int64")
    hit = e.op1("Equal", [positions, index], dtype="bool")
    dims = e.op1("Shape", [item], dtype="int64")
    ones = e.op1("Add", [e.op1("Mul", [dims, e.i64([0], "zero")]), e.i64([1], "one")])
    mask_shape = e.op1("Concat", [e.i64([-1], "minus_one"), ones], attrs={"axis": 0})
    mask = e.op1("Reshape", [hit, mask_shape], dtype="bool")
    row = e.op1("Unsqueeze", [item, e.i64([0], "axis")])
    e.last("Where", [mask, row, lst])


def get_item(e: TfEmit) -> None:
    _element_dtype(e)
    e.last("Gather", [e.x(0), e.x(1)], {"axis": 0})


def as_tensor(e: TfEmit) -> None:
    """From a tensor or to one (TensorListFromTensor, TensorListStack): the same values."""
    _element_dtype(e)
    e.last("Identity", [e.x(0)])


TENSOR_LISTS: dict[str, Callable[[TfEmit], None]] = {
    "TensorListReserve": reserve,
    "TensorListSetItem": set_item,
    "TensorListGetItem": get_item,
    "TensorListFromTensor": as_tensor,
    "TensorListStack": as_tensor,
}
