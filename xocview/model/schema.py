"""Which attribute names the ONNX schema of an operator defines (any version, any domain)."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["attribute_types", "is_known_op", "schema_attributes"]


@lru_cache(maxsize=1)
def _table() -> dict[str, frozenset[str]]:
    import onnx.defs

    table: dict[str, set[str]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        table.setdefault(schema.name, set()).update(schema.attributes)
    return {name: frozenset(attrs) for name, attrs in table.items()}


def is_known_op(op_type: str) -> bool:
    """True when some ONNX domain defines an operator of this name."""
    return op_type in _table()


def schema_attributes(op_type: str) -> frozenset[str] | None:
    """Attribute names of ``op_type`` over all its versions; None for a non-ONNX operator."""
    return _table().get(op_type)


@lru_cache(maxsize=1)
def _types() -> dict[str, dict[str, frozenset[str]]]:
    import onnx.defs

    table: dict[str, dict[str, set[str]]] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        attrs = table.setdefault(schema.name, {})
        for name, attr in schema.attributes.items():
            attrs.setdefault(name, set()).add(str(attr.type).rsplit(".", 1)[-1])  # "INTS"
    return {
        op: {name: frozenset(kinds) for name, kinds in attrs.items()} for op, attrs in table.items()
    }


def attribute_types(op_type: str) -> dict[str, frozenset[str]] | None:
    """Each attribute of ``op_type`` with its ONNX types (``INT``, ``FLOATS``, ``TENSOR``...)
    over all versions and domains; None for a non-ONNX operator."""
    return _types().get(op_type)
