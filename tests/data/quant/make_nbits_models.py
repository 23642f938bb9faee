"""Make the 4-bit MatMulNBits test files: onnxruntime's MatMulNBitsQuantizer on the seeded MLP
of tests/executor/quant_models.py, symmetric and not, block 32.

The quantizer needs ``onnx_ir``, which is not a test dependency, so the files are made once
and kept here. Run from the repository root with onnxruntime and onnx_ir installed:
``python tests/data/quant/make_nbits_models.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.executor import quant_models as qm  # noqa: E402


def main() -> None:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    here = Path(__file__).resolve().parent
    for symmetric in (True, False):
        quantizer = MatMulNBitsQuantizer(qm.mlp(), block_size=32, is_symmetric=symmetric)
        quantizer.process()
        name = f"mlp_nbits4_{'sym' if symmetric else 'asym'}.onnx"
        onnx.save(quantizer.model.model, str(here / name))
        print("wrote", name)


if __name__ == "__main__":
    main()
