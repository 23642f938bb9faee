"""Graph files that declare more than a run should allocate, for the budget tests."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["lightnet_file"]


def lightnet_file(tmp_path: Path, dims: list[int]) -> Path:
    """A LightNet file: one created weight of ``dims`` (no values) read by a relu."""
    ops = [
        {
            "name": "create1",
            "optype": "create",
            "tensors_in": [],
            "tensors_out": [{"arg_name": "dst", "name": "big"}],
            "params": [
                {"arg_name": "dtype", "value": "TL_FLOAT"},
                {"arg_name": "dims", "value": dims},
            ],
        },
        {
            "name": "relu1",
            "optype": "relu",
            "tensors_in": [{"arg_name": "src", "name": "big"}],
            "tensors_out": [{"arg_name": "dst", "name": "out"}],
            "params": [],
        },
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"ops": ops}))
    return path
