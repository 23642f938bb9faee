"""The bundled CPU executor: numpy kernels keyed by ONNX op type, and the timed node loop."""

from xocview.executor.plan import unsupported_ops
from xocview.executor.registry import supported_ops
from xocview.executor.result import RunResult
from xocview.executor.runtime import Iteration, Progress, run

__all__ = ["Iteration", "Progress", "RunResult", "run", "supported_ops", "unsupported_ops"]
