"""The bundled CPU executor: numpy kernels keyed by ONNX op type, and the timed node loop.

Importing it also lets re-inference after an edit ask its kernels about ops ONNX cannot type
(``shape_probe``), so the GUI, the CLI and scripts that import the executor all have that.
"""

from xocview.executor import shape_probe
from xocview.executor.plan import unsupported_ops
from xocview.executor.registry import supported_ops
from xocview.executor.result import RunResult
from xocview.executor.runtime import Iteration, Progress, run

shape_probe.register()

__all__ = ["Iteration", "Progress", "RunResult", "run", "supported_ops", "unsupported_ops"]
