"""TensorFlow GraphDef files and SavedModel folders, read without TensorFlow."""
