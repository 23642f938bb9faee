"""TFLite / LiteRT flatbuffers (``.tflite``): read in place from a memory map without
TensorFlow, their builtin operators mapped onto ONNX operators so that float models run."""

from xocview.formats.tflite.reader import EXTENSIONS, NAME, load, sniff

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]
