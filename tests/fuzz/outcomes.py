"""The fuzz's commands (targets), the verdicts a case can end in, and which are failures."""

from __future__ import annotations

__all__ = [
    "ALL_TARGETS",
    "ATTACK_TARGETS",
    "COMMANDS",
    "FAILURES",
    "MEM_MB",
    "OUTCOMES",
    "SAVE_TARGETS",
    "TARGETS",
    "TIMEOUT",
]

TARGETS = ("info", "check", "render", "run", "api-load", "api-check", "api-run")
# The attack families' commands besides those: convert (to out.json and to out.onnx), diff
# against the file's clean base, import-times, and the two save tests of attack_targets.py.
ATTACK_TARGETS = (*TARGETS, "convert", "diff", "import-times")
SAVE_TARGETS = ("convert-onnx", "convert-kill")
ALL_TARGETS = (*ATTACK_TARGETS, *SAVE_TARGETS)
OUTCOMES = (
    "ok", "error", "leaked", "missed", "message", "internal", "hang", "memory", "crash",
    "control", "escaped", "clobbered", "torn",
)  # fmt: skip
# Every outcome but these is a failure: success, a located error, and the two that are only
# reported (an exception name quoted in a located error, a fault onnx.checker finds and we not).
FAILURES = frozenset(OUTCOMES) - {"ok", "error", "leaked", "missed"}
TIMEOUT, MEM_MB = 20.0, 2048
# Targets that run more than one command in a case (convert: to .json, then to .onnx): the
# limit is TIMEOUT per command, as the "no hang over 20 s" is about a command.
COMMANDS = {"convert": 2}
