"""Tests of xocview.executor: kernels against onnxruntime, the runtime, the light models."""
