"""TensorFlow GraphDef files and SavedModel folders, read without TensorFlow."""

from xocview.formats.tensorflow.reader import EXTENSIONS, NAME, load, sniff

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]
