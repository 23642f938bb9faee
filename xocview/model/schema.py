"""Which attribute names the ONNX schema of an operator defines (any version, any domain)."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["is_known_op", "schema_attributes"]


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
