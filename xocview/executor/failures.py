"""A kernel's failure as words for the user: what went wrong, never a Python exception's name.

Kernels check what a damaged file can get wrong and raise ValueError with a sentence; what
slips through (a numpy IndexError, a ZeroDivisionError) still reaches the user as one line
that names the node (the runtime adds it) and says the kernel failed on these inputs. The
exception stays chained (``raise ... from e``), so ``--debug`` still shows the traceback.
"""

from __future__ import annotations

import builtins
import re

__all__ = ["exception_free", "kernel_problem"]

# Exception and warning class names that must not reach a message: Python's own, and numpy's
# that print their class (AxisError, LinAlgError, ...).
_NAMES = sorted(
    {
        name
        for name in dir(builtins)
        if isinstance(getattr(builtins, name), type)
        and issubclass(getattr(builtins, name), BaseException | Warning)
    }
    | {"AxisError", "LinAlgError", "UFuncTypeError", "DTypePromotionError", "ComplexWarning"}
    | {"_UFuncNoLoopError", "_UFuncBinaryResolutionError", "_ArrayMemoryError"},
    key=len,
    reverse=True,
)
_CLASS = re.compile(r"\b(?:numpy\.(?:\w+\.)*)?(?:" + "|".join(map(re.escape, _NAMES)) + r")\b:?\s*")
# A message a kernel wrote on purpose starts with the op's name: "Gather: index 7 is ..."
_OWN = re.compile(r"^[A-Z][A-Za-z0-9]*: ")


def exception_free(text: str) -> str:
    """``text`` without the names of exception classes it quotes (``ValueError: ...``)."""
    return _CLASS.sub("", text).strip()


def kernel_problem(e: BaseException, op_type: str = "") -> str:
    """What the user reads after ``node 'x' (Op): `` when a kernel raised ``e``.

    A kernel's own sentence (a ValueError, or any message starting with an op name) stands as
    it is, less a repeated ``Op: ``; memory and number-range failures say so; anything else
    is a failure of the kernel on these inputs, with Python's words after it.
    """
    text = exception_free(str(e))
    if isinstance(e, KeyError) and e.args:
        text = f"no entry {exception_free(repr(e.args[0]))}"
    if op_type and text.startswith(f"{op_type}: "):
        text = text[len(op_type) + 2 :]
    if isinstance(e, MemoryError):
        return f"not enough memory ({text or 'the allocation failed'})"
    if isinstance(e, RecursionError):
        return "its inputs nest deeper than the kernel can follow"
    if isinstance(e, ValueError) or (_OWN.match(str(e)) and text):
        return text or "the kernel refused these inputs"
    if isinstance(e, OverflowError):
        return f"a value is out of the range the kernel can compute with ({text})"
    return f"the kernel failed on these inputs ({text or 'no reason given'})"
