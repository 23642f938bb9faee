"""ATen operators written as ONNX operators, one module per family of ops; ``emit`` is what a
lowering writes with, and ``xocview.formats.pytorch.aten_onnx`` the one table that names the
lowering of each ATen op."""
