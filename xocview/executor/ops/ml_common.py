"""What the ai.onnx.ml kernels share: input checks, and older op versions that are a newer
kernel lacking the attributes added since.

The kernels themselves are in ml_encoders (LabelEncoder, OneHotEncoder and the small feature
ops), ml_tree_ensemble (TreeEnsemble), ml_tree_regressor, ml_tree_classifier, ml_linear
(Linear*), ml_svm (SVM*) and ml_maps (ZipMap and the map ops). Versions are
ai.onnx.ml's own. Where the spec leaves a result open the kernels do what onnxruntime does,
since that is what exported models are checked against; where onnxruntime departs from the
spec they follow the spec (each module says where).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["bind_call", "is_text", "numeric", "register_older_version"]


def is_text(x: np.ndarray) -> bool:
    """Whether x holds strings (object, unicode or bytes dtype)."""
    return x.dtype.kind in "OUS"


def numeric(x: np.ndarray, op: str) -> np.ndarray:
    """x itself when it holds numbers; strings and bools are refused by dtype."""
    if x.dtype.kind not in "iuf":
        raise ValueError(f"{op}: input dtype {x.dtype} is not supported; expected numbers")
    return x


def bind_call(
    signature: inspect.Signature, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> inspect.BoundArguments:
    """``args`` and ``kwargs`` bound to ``signature``, defaults filled in; a call that does
    not fit raises TypeError naming the function ``name``, as Python's own call would."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{name}() {e}") from None
    bound.apply_defaults()
    return bound


def register_older_version(
    newer: Callable[..., Any], op_type: str, since: int, *, lacking: str, name: str
) -> Callable[..., Any]:
    """Register, as version ``since`` of ``op_type``, the kernel ``newer`` without the
    attributes whose names end in ``lacking`` (those a later version added); returns it.

    Its signature is ``newer``'s without them, so the runtime refuses them by name as it does
    any attribute a kernel does not take, and a direct call with one raises TypeError.
    """
    full = inspect.signature(newer)
    kept = [p for p in full.parameters.values() if not p.name.endswith(lacking)]
    signature = full.replace(parameters=kept)

    def older(*args: Any, **kwargs: Any) -> Any:
        bind_call(signature, name, args, kwargs)  # TypeError for an attribute it lacks
        return newer(*args, **kwargs)

    older.__signature__ = signature  # type: ignore[attr-defined]
    older.__name__ = older.__qualname__ = name
    older.__module__ = newer.__module__
    older.__doc__ = f"{op_type} {since}: {newer.__name__} without the ``*{lacking}`` attributes."
    return kernel(op_type, since=since)(older)
