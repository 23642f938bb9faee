"""PyTorch's files, read without torch: torch.export archives (.pt2), TorchScript archives and
``torch.save`` checkpoints. Each kind is a format module of its own here (one registry row
each); they share the zip reader, the restricted unpickler and the ATen-to-ONNX table."""
