"""The value of an ONNX optional that holds nothing.

Values in a run are tensors (numpy arrays), sequences (lists of them) and optionals: an
optional that holds a value is that value, an empty one is ``EMPTY``. None cannot serve: the
runtime uses it for "no value yet" and for omitted inputs.
"""

from __future__ import annotations

__all__ = ["EMPTY", "Empty"]


class Empty:
    """An optional without a value; there is one, ``EMPTY``."""

    _instance: Empty | None = None

    def __new__(cls) -> Empty:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY = Empty()
