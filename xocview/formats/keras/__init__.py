"""Keras model files (``.keras`` zips and legacy ``.h5``) read without TensorFlow or Keras."""
