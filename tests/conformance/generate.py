"""Write ONNX's node conformance cases, from the installed onnx, into a cache folder.

ONNX ships its node tests as Python generators, not files; collecting them takes seconds, so
they are written once per onnx version (`.cache/onnx-node/<version>/`, gitignored) and the
tests read the files. Each case gets `<case>/model.onnx` and, per data set, its values:
plain numpy arrays as `.npy`, TensorProtos (the dtypes numpy lacks) as `.pb`, and anything
else (sequences, optionals, ml_dtypes arrays, strings) pickled. `index.json` is written last,
into a temporary folder renamed into place, so a present index means a complete cache.

Usage: python tests/conformance/generate.py [--out FOLDER] [--force]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pickle
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx

REPO = Path(__file__).resolve().parents[2]
INDEX = "index.json"


def default_cache() -> Path:
    """One folder per onnx version: a new onnx brings new cases and new expected values."""
    return REPO / ".cache" / "onnx-node" / onnx.__version__


def collect() -> list[Any]:
    """Every node test case of the installed onnx, with the noise its case modules print
    (RuntimeWarnings of deliberate overflows and NaNs) silenced."""
    from onnx.backend.test.case.node import collect_testcases

    with (
        warnings.catch_warnings(),
        np.errstate(all="ignore"),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        return list(collect_testcases(None))


def _plain(value: np.ndarray) -> bool:
    """True for arrays .npy holds without pickle: numpy's own numeric and bool dtypes."""
    return value.dtype.isbuiltin == 1 and value.dtype.kind in "biufc"


def write_value(folder: Path, stem: str, value: Any) -> str:
    """Write one input or output value; returns its file name (the suffix tells how)."""
    if isinstance(value, onnx.TensorProto):
        name = f"{stem}.pb"
        (folder / name).write_bytes(value.SerializeToString())
    elif isinstance(value, np.generic | np.ndarray) and _plain(np.asarray(value)):
        name = f"{stem}.npy"
        np.save(folder / name, np.asarray(value), allow_pickle=False)
    else:
        name = f"{stem}.pkl"
        (folder / name).write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return name


def read_value(path: Path) -> Any:
    """The value ``write_value`` wrote: TensorProtos come back as numpy arrays, as ONNX's own
    backend runner reads them."""
    if path.suffix == ".pb":
        from onnx import numpy_helper

        return numpy_helper.to_array(onnx.load_tensor_from_string(path.read_bytes()))
    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    return pickle.loads(path.read_bytes())


def _write_case(root: Path, case: Any) -> dict[str, Any]:
    folder = root / case.name
    folder.mkdir()
    (folder / "model.onnx").write_bytes(case.model.SerializeToString())
    data_sets = []
    for k, (inputs, outputs) in enumerate(case.data_sets):
        data_sets.append(
            {
                "inputs": [write_value(folder, f"{k}_input_{i}", v) for i, v in enumerate(inputs)],
                "outputs": [
                    write_value(folder, f"{k}_output_{i}", v) for i, v in enumerate(outputs)
                ],
            }
        )
    return {"rtol": case.rtol, "atol": case.atol, "data_sets": data_sets}


def is_complete(cache: Path) -> bool:
    """True when ``cache`` holds a finished index for this onnx version."""
    try:
        index = json.loads((cache / INDEX).read_text())
    except (OSError, ValueError):
        return False
    return index.get("onnx") == onnx.__version__ and bool(index.get("cases"))


def generate(cache: Path | None = None, force: bool = False) -> Path:
    """Write every case into ``cache`` (default ``default_cache()``) unless it is complete;
    returns the folder. Built in a temporary sibling and renamed, so a crash leaves nothing
    half-written that later runs would trust."""
    cache = cache or default_cache()
    if is_complete(cache) and not force:
        return cache
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{cache.name}-", dir=cache.parent))
    try:
        cases = {case.name: _write_case(tmp, case) for case in collect()}
        index = {"onnx": onnx.__version__, "cases": cases}
        (tmp / INDEX).write_text(json.dumps(index, indent=1, sort_keys=True))
        if cache.exists():
            shutil.rmtree(cache)
        os.replace(tmp, cache)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return cache


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=None, help="cache folder (default: %(default)s)"
    )
    parser.add_argument("--force", action="store_true", help="rewrite even a complete cache")
    args = parser.parse_args(argv)
    cache = generate(args.out, args.force)
    count = len(json.loads((cache / INDEX).read_text())["cases"])
    print(f"{count} onnx {onnx.__version__} node cases in {cache}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
