"""Opening TensorFlow-family files: xocview against TensorFlow's own loaders, same run.

A Keras MobileNetV2 (random weights, seeded; ``--width`` scales it) is written once as a
SavedModel (``model.export``), a frozen GraphDef of its serving function and a TFLite file
(the LiteRT converter); then each is opened in alternation by xocview (``formats.load``: the
graph with every op mapped to ONNX, groups, lazy weights) and by TensorFlow (the SavedModel
by ``tf.saved_model.load``, the GraphDef by parsing it and ``tf.graph_util.import_graph_def``,
the TFLite file by ``tf.lite.Interpreter`` with ``allocate_tensors``). Medians of --repeat
runs and the median ratio are printed. Needs TensorFlow, which is no test dependency: run it
with a Python that has tensorflow and xocview's run-time dependencies.

    python tests/perf/tf_open.py [--width 1.0] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import keras
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
from timing import paired_times  # tests/perf/, beside us

from xocview.formats import load


def write(folder: Path, width: float) -> dict[str, Path]:
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(input_shape=(224, 224, 3), alpha=width, weights=None)
    saved = folder / "saved_model"
    model.export(str(saved))
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([1, 224, 224, 3], tf.float32)
    )
    frozen = folder / "frozen.pb"
    frozen.write_bytes(
        convert_variables_to_constants_v2(fn).graph.as_graph_def().SerializeToString()
    )
    lite = folder / "model.tflite"
    lite.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(saved)).convert())
    return {"SavedModel": saved, "frozen GraphDef": frozen, "TFLite": lite}


def _import_graph_def(path: Path) -> object:
    gd = tf.compat.v1.GraphDef.FromString(path.read_bytes())
    with tf.Graph().as_default() as g:
        tf.graph_util.import_graph_def(gd, name="")
    return g


def _interpreter(path: Path) -> object:
    it = tf.lite.Interpreter(model_path=str(path))
    it.allocate_tensors()
    return it


ANCHORS = {
    "SavedModel": (lambda p: tf.saved_model.load(str(p)), "tf.saved_model.load"),
    "frozen GraphDef": (_import_graph_def, "import_graph_def"),
    "TFLite": (_interpreter, "tf.lite.Interpreter"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = write(Path(tmp), args.width)
        print(f"MobileNetV2 alpha {args.width}, median of {args.repeat} runs")
        for kind, path in files.items():
            graph = load(path)
            anchor, name = ANCHORS[kind]
            t_tf, t_ours, ratio = paired_times(
                lambda a=anchor, p=path: a(p), lambda p=path: load(p), args.repeat
            )
            print(
                f"{kind:16} {len(graph.nodes):5} nodes  {name}: {t_tf * 1000:8.1f} ms  "
                f"xocview: {t_ours * 1000:8.1f} ms  ratio {ratio:.3f}"
            )


if __name__ == "__main__":
    main()
