"""What a file is, told from its signature, for the formats xocview does not read (yet).

A refusal that lists why each reader said no ("not a JSON object; does not start like an ONNX
ModelProto") does not tell a user holding a TFLite model or a GGUF file what they have. Most
model formats open with a magic number, a flatbuffer file identifier or a zip of known member
names, so the refusal can name the format; files told only by their extension (protobufs have
no magic) are named as "probably" that format.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

__all__ = ["recognise"]

# Magic numbers at the start of the file.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"lmgg", "a GGML model (llama.cpp's format before GGUF)"),
    (b"fmgg", "a GGMF model (llama.cpp's format before GGUF)"),
    (b"tjgg", "a GGJT model (llama.cpp's format before GGUF)"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file with no Keras model in it (weights alone, or data)"),
    (b"\x93NUMPY", "a NumPy array (.npy)"),
    (b"7767517", "an ncnn model (.param)"),
    (b"\x1f\x8b", "a gzip archive (extract it first)"),
    (b"BZh", "a bzip2 archive (extract it first)"),
    (b"\xfd7zXZ\x00", "an xz archive (extract it first)"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive (extract it first)"),
    (b"ftrt", "a TensorRT engine (built for one GPU; no graph to read)"),
    (b"\x12\x01\x00\x00\x00\x00\x00\x00", "MXNet parameters (.params; open the -symbol.json)"),
)

# Flatbuffer file identifiers, bytes 4..8.
_FLATBUFFER: tuple[tuple[bytes, str], ...] = (
    (b"TFL3", "a TFLite / LiteRT model (.tflite)"),
    (b"ORTM", "an ONNX Runtime model in ORT format (.ort)"),
    (b"ET12", "an ExecuTorch program (.pte)"),
    (b"ET", "an ExecuTorch program (.pte)"),
)

# Zip members that tell a zip's format, checked in order.
_ZIP_MEMBERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(^|/)model\.weights\.(h5|npz)$"), "a Keras 3 model (.keras)"),
    (re.compile(r"(^|/)MAR-INF/MANIFEST\.json$"), "a TorchServe model archive (.mar)"),
    (re.compile(r"(^|/)Manifest\.json$"), "a Core ML package (.mlpackage, zipped)"),
    (re.compile(r"\.npy$"), "a NumPy archive (.npz)"),
    (
        re.compile(r"(^|/)saved_model\.pb$"),
        "a zipped TensorFlow SavedModel (unzip it, open the folder)",
    ),
)

# Told only by the name, for formats without a signature.
_EXTENSIONS: dict[str, str] = {
    ".tflite": "a TFLite / LiteRT model",
    ".lite": "a TFLite / LiteRT model",
    ".keras": "a Keras 3 model",
    ".h5": "a Keras .h5 model",
    ".hdf5": "a Keras .h5 model",
    ".mlmodel": "a Core ML model",
    ".mlpackage": "a Core ML package",
    ".caffemodel": "a Caffe model",
    ".prototxt": "a Caffe network description",
    ".pdmodel": "a PaddlePaddle model",
    ".pdiparams": "PaddlePaddle parameters",
    ".engine": "a TensorRT engine",
    ".plan": "a TensorRT engine",
    ".trt": "a TensorRT engine",
    ".mnn": "an MNN model",
    ".ort": "an ONNX Runtime model in ORT format",
    ".pte": "an ExecuTorch program",
    ".param": "an ncnn network (.param)",
    ".cfg": "a Darknet network (.cfg)",
    ".xml": "an OpenVINO IR network (.xml)",
    ".tfjs": "a TensorFlow.js model",
    ".rknn": "a Rockchip RKNN model",
    ".kmodel": "a Kendryte kmodel",
    ".armnn": "an Arm NN model",
    ".dlc": "a Qualcomm SNPE model (.dlc)",
    ".uff": "a TensorRT UFF model",
    ".npz": "a NumPy archive (.npz)",
    ".npy": "a NumPy array (.npy)",
    ".pkl": "a Python pickle",
    ".pickle": "a Python pickle",
    ".joblib": "a joblib pickle (scikit-learn)",
    ".msgpack": "a Flax msgpack checkpoint",
}

_TEXT_SIGNS: tuple[tuple[re.Pattern[bytes], str], ...] = (
    (re.compile(rb"<net\s[^>]*name="), "an OpenVINO IR network (.xml)"),
    (re.compile(rb"^\s*\[net\]", re.M), "a Darknet network (.cfg)"),
    (re.compile(rb"^\s*layers?\s*\{", re.M), "a Caffe network description (.prototxt)"),
    (re.compile(rb'"modelTopology"\s*:'), "a TensorFlow.js model (model.json)"),
    (re.compile(rb'"weightsManifest"\s*:'), "a TensorFlow.js model (model.json)"),
    (re.compile(rb'"model_type"\s*:'), "a Hugging Face config.json (weights sit beside it)"),
    (re.compile(rb'"class_name"\s*:\s*"(Functional|Sequential|Model)"'), "a Keras model config"),
)


def recognise(path: Path, head: bytes) -> str | None:
    """What the file seems to be, as a phrase ("a TFLite / LiteRT model (.tflite)"), or
    None when its head and name say nothing xocview knows."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    for ident, what in _FLATBUFFER:
        if len(head) >= 8 and head[4 : 4 + len(ident)] == ident:
            return what
    if head[:4] == b"PK\x03\x04":
        return _zip_kind(path) or "a zip archive of no model format xocview knows"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle (not a PyTorch checkpoint)"
    for pattern, what in _TEXT_SIGNS:
        if pattern.search(head):
            return what
    by_name = _EXTENSIONS.get(path.suffix.lower())
    if by_name is not None:
        return f"probably {by_name}, by its name"
    return None


def _zip_kind(path: Path) -> str | None:
    """The format a zip's member names tell, reading only its central directory."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()[:10_000]
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    for pattern, what in _ZIP_MEMBERS:
        if any(pattern.search(n) for n in names):
            return what
    return None
