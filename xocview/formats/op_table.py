"""Operator names of other frameworks mapped to ONNX operator types: the one place for it.

Each source format has a table from its op name to rules; a rule may be selected by attribute
values (MXNet's ``Activation(act_type=relu)`` is ONNX ``Relu``) and renames attributes to their
ONNX names and types (``kernel`` -> ``kernel_shape``, ``pad`` (h, w) -> ``pads`` [h, w, h, w]).
Loaders keep the original op name and attributes in metadata; ops without a rule keep their
own name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Rule", "Translation", "symmetric_pads", "translate"]

Converter = Callable[[Any], Any]


@dataclass(frozen=True)
class Rule:
    """One way a source op becomes an ONNX op.

    ``attrs`` maps a source attribute to its ONNX name, or to (name, converter);
    ``when`` holds source attribute values that must match for the rule to apply (compared
    as lower-case strings); ``fixed`` are ONNX attributes the rule implies.
    """

    onnx_op: str
    attrs: Mapping[str, str | tuple[str, Converter]] = field(default_factory=dict)
    when: Mapping[str, str] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Translation:
    """The ONNX op type, its ONNX attributes, and the source attributes no rule consumed."""

    op_type: str
    attributes: dict[str, Any]
    unmapped: dict[str, Any]


def translate(
    table: Mapping[str, Sequence[Rule]], op: str, attrs: Mapping[str, Any]
) -> Translation | None:
    """The first rule for ``op`` whose ``when`` matches ``attrs``; None when none applies."""
    for rule in table.get(op, ()):
        if all(str(attrs.get(k, "")).lower() == v.lower() for k, v in rule.when.items()):
            out: dict[str, Any] = dict(rule.fixed)
            unmapped: dict[str, Any] = {}
            for name, value in attrs.items():
                target = rule.attrs.get(name)
                if name in rule.when:
                    continue
                if target is None:
                    unmapped[name] = value
                elif isinstance(target, str):
                    out[target] = value
                else:
                    out[target[0]] = target[1](value)
            return Translation(rule.onnx_op, out, unmapped)
    return None


def symmetric_pads(value: Any) -> Any:
    """MXNet/NNVM ``pad`` (begin of each spatial axis) as ONNX ``pads`` (begins, then ends)."""
    if isinstance(value, list):
        return [*value, *value]
    return value
