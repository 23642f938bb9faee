"""The kernel table: ONNX op type -> numpy functions, one per operator version.

A kernel is a plain function named after its op. Inputs come positionally (``None`` for an
omitted optional input), ONNX attributes as keyword arguments with the schema's defaults, tensor
attributes as numpy arrays. It returns one array, or a tuple with one array per output. A kernel
that needs to know how many outputs the node asks for (Split, Dropout, LSTM) declares a
keyword-only ``num_outputs`` parameter and the runtime passes it.

The model's opset picks the version: the newest registered ``since`` at or below it, as ONNX's
reference implementation and tinygrad do. Graphs without an opset (NNVM, LightNet, XOC) get the
newest version.

ONNX's domains (``""``, ``ai.onnx.ml``, the previews) share one table: their op names do not
clash. Other domains' ops (onnxruntime's ``com.microsoft``) may share a name with an ONNX op
of other semantics (its ``Attention``, ``RotaryEmbedding``), so they are kept under
``domain:op_type`` (``op_key``), with the domain's own opset versions.
"""

from __future__ import annotations

import bisect
import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "KERNELS",
    "SHARED_DOMAINS",
    "Kernel",
    "UnsupportedOp",
    "kernel",
    "lookup",
    "lookup_fitting",
    "op_key",
    "supported_ops",
]

# Domains whose ops are kept by their bare names (see the module's docstring).
SHARED_DOMAINS = frozenset(
    {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training"}
)


def op_key(op_type: str, domain: str = "") -> str:
    """The table's key of an op: its name for ONNX's domains, ``domain:op_type`` else."""
    return op_type if domain in SHARED_DOMAINS else f"{domain}:{op_type}"


F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Kernel:
    """One version of one op: the function and what the runtime must know to call it."""

    op_type: str
    since: int
    fn: Callable[..., Any]
    wants_num_outputs: bool
    exact_types: bool = False  # sees bfloat16, float8, int4... as they are (see low_precision)

    @functools.cached_property
    def call(self) -> Callable[..., Any]:
        """What the runtime calls: ``fn``, computing narrow types wide unless ``exact_types``."""
        if self.exact_types:
            return self.fn
        from xocview.executor.low_precision import widened

        return widened(self.fn)

    @functools.cached_property
    def params(self) -> list[inspect.Parameter]:
        """The function's parameters, read once: plans of 100k nodes ask for every node."""
        return list(inspect.signature(self.fn).parameters.values())

    @functools.cached_property
    def optional_inputs(self) -> tuple[bool, ...]:
        """Per positional parameter, whether it has a default (an optional input)."""
        P = inspect.Parameter
        positional = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)
        return tuple(p.default is not P.empty for p in self.params if p.kind in positional)

    @functools.cached_property
    def variadic(self) -> bool:
        """Whether the kernel takes any number of inputs (``*xs``)."""
        return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in self.params)

    @functools.cached_property
    def keywords(self) -> dict[str, bool] | None:
        """Keyword-only parameter -> whether it is required; None when ``**kwargs`` takes any."""
        P = inspect.Parameter
        if any(p.kind is P.VAR_KEYWORD for p in self.params):
            return None
        return {p.name: p.default is P.empty for p in self.params if p.kind is P.KEYWORD_ONLY}

    @functools.cached_property
    def positional_names(self) -> frozenset[str]:
        """Names of the parameters an input may also be passed to by keyword."""
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        return frozenset(p.name for p in self.params if p.kind is kind)

    @functools.cached_property
    def required_attributes(self) -> tuple[str, ...]:
        """Keyword-only parameters without a default, ``num_outputs`` (the runtime's) aside."""
        P = inspect.Parameter
        return tuple(
            p.name
            for p in self.params
            if p.kind is P.KEYWORD_ONLY and p.default is P.empty and p.name != "num_outputs"
        )

    @functools.cached_property
    def max_inputs(self) -> int | None:
        """How many inputs the kernel takes at most (None: any number)."""
        return None if self.variadic else len(self.optional_inputs)

    @functools.cached_property
    def min_inputs(self) -> int:
        """How many inputs the kernel needs at least (those without a default)."""
        return self.optional_inputs.count(False)

    def accepts(self, num_inputs: int, attributes: Iterable[str]) -> bool:
        """Whether a node with this many inputs and these attributes fits the signature:
        inputs bind positionally, attributes only to keyword-only parameters."""
        optional = self.optional_inputs
        if num_inputs > len(optional) and not self.variadic:
            return False
        if not all(optional[num_inputs:]):
            return False
        names = set(attributes)
        keywords = self.keywords
        if keywords is not None and not names <= keywords.keys():
            return False
        return set(self.required_attributes) <= names


# op type -> versions sorted by ``since``
KERNELS: dict[str, list[Kernel]] = {}


class UnsupportedOp(LookupError):
    """No kernel for this op (or none old enough for the model's opset)."""


def kernel(
    op_type: str, since: int = 1, *, exact_types: bool = False, domain: str = ""
) -> Callable[[F], F]:
    """Register ``fn`` as the kernel of ``op_type`` (of ``domain``) from opset ``since`` of its
    domain on; ``exact_types`` for a kernel that must see bfloat16, float8 or int4 arrays as
    they are (Cast, ...)."""
    key = op_key(op_type, domain)

    def register(fn: F) -> F:
        params = inspect.signature(fn).parameters
        wants = (
            "num_outputs" in params and params["num_outputs"].kind is inspect.Parameter.KEYWORD_ONLY
        )
        versions = KERNELS.setdefault(key, [])
        if any(k.since == since for k in versions):
            raise ValueError(f"kernel {key} since {since} registered twice")
        versions.append(Kernel(op_type, since, fn, wants, exact_types))
        _FITTING.clear()
        versions.sort(key=lambda k: k.since)
        return fn

    return register


def lookup(op_type: str, opset: int | None = None, domain: str = "") -> Kernel:
    """The kernel for ``op_type`` of ``domain`` at that domain's ``opset`` (None: the newest).

    Raises UnsupportedOp naming the op and, for an unknown op, the nearest supported names.
    """
    _load_ops()
    if domain not in SHARED_DOMAINS:
        versions = KERNELS.get(op_key(op_type, domain))
        if not versions:
            raise UnsupportedOp(f"no kernel for op {op_type!r} of domain {domain!r}")
        return _version(op_type, versions, opset)
    versions = KERNELS.get(op_type)
    if not versions:
        near = [name for name in sorted(KERNELS) if name.lower() == op_type.lower()]
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise UnsupportedOp(f"no kernel for op {op_type!r}{hint}; {len(KERNELS)} ops are supported")
    return _version(op_type, versions, opset)


def _version(op_type: str, versions: list[Kernel], opset: int | None) -> Kernel:
    if opset is None:
        return versions[-1]
    at = bisect.bisect_right([k.since for k in versions], opset)
    if at == 0:
        raise UnsupportedOp(
            f"op {op_type!r} at opset {opset}: kernels start at opset {versions[0].since}"
        )
    return versions[at - 1]


def lookup_fitting(
    op_type: str, num_inputs: int, attributes: Iterable[str], domain: str = ""
) -> Kernel:
    """For a graph that names no opset: the newest version whose signature fits the node.

    XOC, NNVM and LightNet files carry ONNX op types without an opset; an attribute that later
    versions take as an input (Upsample's ``scales``, ReduceMean's ``axes``) tells the version.
    Raises UnsupportedOp like ``lookup``.
    """
    newest = lookup(op_type, None, domain)
    names = frozenset(attributes)
    table = op_key(op_type, domain)
    key = (table, num_inputs, names)
    found = _FITTING.get(key)
    if found is None or found not in KERNELS[table]:  # the table may change (tests patch it)
        found = next((k for k in reversed(KERNELS[table]) if k.accepts(num_inputs, names)), newest)
        _FITTING[key] = found
    return found


# lookup_fitting's answers: a 100k-node graph asks the same few questions again and again.
_FITTING: dict[tuple[str, int, frozenset[str]], Kernel] = {}


def supported_ops() -> list[str]:
    """Every op that has a kernel, sorted (other domains' as ``domain:op_type``)."""
    _load_ops()
    return sorted(KERNELS)


_loaded = False


def _load_ops() -> None:
    """Import the op modules once; each registers its kernels on import."""
    global _loaded
    if not _loaded:
        _loaded = True
        import xocview.executor.ops  # noqa: F401  (registers every kernel)
