"""Write what TensorFlow computes for the SavedModels beside this script, for the run tests.

Run with TensorFlow installed (not a dependency of xocview):
``python tests/data/tensorflow/make_runs.py``. For each folder it writes ``<name>_run.npz``
holding ``in:<signature input>`` (seeded values, batch 2) and ``out:<signature output>``
(what the ``serving_default`` signature returns for them).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

HERE = Path(__file__).resolve().parent
NAMES = ("keras_cnn", "module_vars")


def write(name: str, rng: np.random.Generator) -> None:
    fn = tf.saved_model.load(str(HERE / name)).signatures["serving_default"]
    _, specs = fn.structured_input_signature
    feeds = {}
    for key, spec in sorted(specs.items()):
        shape = [2 if d is None else d for d in spec.shape.as_list()]
        feeds[key] = rng.standard_normal(shape).astype(spec.dtype.as_numpy_dtype)
    outs = fn(**{k: tf.constant(v) for k, v in feeds.items()})
    arrays = {f"in:{k}": v for k, v in feeds.items()}
    arrays.update({f"out:{k}": v.numpy() for k, v in sorted(outs.items())})
    np.savez(HERE / f"{name}_run.npz", **arrays)


def main() -> None:
    rng = np.random.default_rng(32)
    for name in NAMES:
        write(name, rng)


if __name__ == "__main__":
    main()
