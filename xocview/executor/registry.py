"""The kernel table: ONNX op type -> numpy functions, one per operator version.

A kernel is a plain function named after its op. Inputs come positionally (``None`` for an
omitted optional input), ONNX attributes as keyword arguments with the schema's defaults, tensor
attributes as numpy arrays. It returns one array, or a tuple with one array per output. A kernel
that needs to know how many outputs the node asks for (Split, Dropout, LSTM) declares a
keyword-only ``num_outputs`` parameter and the runtime passes it.

The model's opset picks the version: the newest registered ``since`` at or below it, as ONNX's
reference implementation and tinygrad do. Graphs without an opset (NNVM, LightNet, XOC) get the
newest version.
"""

from __future__ import annotations

import bisect
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["KERNELS", "Kernel", "UnsupportedOp", "kernel", "lookup", "supported_ops"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Kernel:
    """One version of one op: the function and what the runtime must know to call it."""

    op_type: str
    since: int
    fn: Callable[..., Any]
    wants_num_outputs: bool


# op type -> versions sorted by ``since``
KERNELS: dict[str, list[Kernel]] = {}


class UnsupportedOp(LookupError):
    """No kernel for this op (or none old enough for the model's opset)."""


def kernel(op_type: str, since: int = 1) -> Callable[[F], F]:
    """Register ``fn`` as the kernel of ``op_type`` from opset ``since`` on."""

    def register(fn: F) -> F:
        params = inspect.signature(fn).parameters
        wants = (
            "num_outputs" in params and params["num_outputs"].kind is inspect.Parameter.KEYWORD_ONLY
        )
        versions = KERNELS.setdefault(op_type, [])
        if any(k.since == since for k in versions):
            raise ValueError(f"kernel {op_type} since {since} registered twice")
        versions.append(Kernel(op_type, since, fn, wants))
        versions.sort(key=lambda k: k.since)
        return fn

    return register


def lookup(op_type: str, opset: int | None = None) -> Kernel:
    """The kernel for ``op_type`` at ``opset`` (None: the newest).

    Raises UnsupportedOp naming the op and, for an unknown op, the nearest supported names.
    """
    _load_ops()
    versions = KERNELS.get(op_type)
    if not versions:
        near = [name for name in sorted(KERNELS) if name.lower() == op_type.lower()]
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise UnsupportedOp(f"no kernel for op {op_type!r}{hint}; {len(KERNELS)} ops are supported")
    if opset is None:
        return versions[-1]
    at = bisect.bisect_right([k.since for k in versions], opset)
    if at == 0:
        raise UnsupportedOp(
            f"op {op_type!r} at opset {opset}: kernels start at opset {versions[0].since}"
        )
    return versions[at - 1]


def supported_ops() -> list[str]:
    """Every op type that has a kernel, sorted."""
    _load_ops()
    return sorted(KERNELS)


_loaded = False


def _load_ops() -> None:
    """Import the op modules once; each registers its kernels on import."""
    global _loaded
    if not _loaded:
        _loaded = True
        import xocview.executor.ops  # noqa: F401  (registers every kernel)
