"""A weight's values in the inspector: statistics rows and saving them as ``.npy``."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from xocview.errors import FormatError
from xocview.formats.atomic import write_atomic
from xocview.model.analyses.tensor_stats import TensorStats

__all__ = ["npy_name", "stat_rows", "write_npy"]


def stat_rows(s: TensorStats, dtype: np.dtype) -> list[tuple[str, str]]:
    """Name/value rows for the statistics; NaN and Inf counts only when there are some."""
    whole = dtype.kind in "biu"
    rows = [
        ("Min", _number(s.min, whole)),
        ("Max", _number(s.max, whole)),
        ("Mean", _number(s.mean)),
        ("Std", _number(s.std)),
        ("Sparsity", _sparsity(s)),
    ]
    if s.nan_count:
        rows.append(("NaN", f"{s.nan_count:,}"))
    if s.inf_count:
        rows.append(("Inf", f"{s.inf_count:,}"))
    return rows


def _sparsity(s: TensorStats) -> str:
    if not s.sample_count:
        return "n/a (no values)"
    return f"{s.sparsity:.2%} ({s.zero_count:,} zero{'' if s.zero_count == 1 else 's'})"


def _number(value: float, whole: bool = False) -> str:
    if math.isnan(value):
        return "n/a (no finite values)"
    if whole:
        return str(int(value))
    return f"{value:.7g}"


def npy_name(tensor_id: str) -> str:
    """A file name for a tensor's values: characters unsafe in file names become ``_``."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", tensor_id).strip("._")
    return (stem or "tensor") + ".npy"


def write_npy(array: np.ndarray, path: Path) -> None:
    """``np.save`` to ``path`` atomically (see formats.atomic).

    Raises FormatError naming the path when the folder is missing or not writable, or when the
    values are Python objects (saving them would need pickle, which np.load refuses by default).
    """
    try:
        write_atomic(path, lambda f: np.save(f, array, allow_pickle=False))
    except ValueError as e:  # object arrays
        raise FormatError(str(path), "", f"cannot save: {e}") from e
