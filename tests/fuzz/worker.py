"""A long-lived fuzz worker: reads case specs from stdin, runs each in-process, reports on fd 3.

Started by ``harness.Worker`` as ``python worker.py``; importing xocview and Qt once (about a
second) and then running hundreds of cases is what makes the fuzz fast. The protocol is one
JSON object a line: ``{"target": ..., "path": ..., "out": ...}`` in, a verdict out. C-level
writes to stdout go to /dev/null so that nothing but verdicts reaches the protocol pipe; the
parent enforces the time limit and the memory cap and kills this process when one is passed.
This file imports nothing from tests/, only the standard library, xocview and its sibling
``attack_targets.py`` (the attack families' commands and the terminal and secret checks).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import attack_targets  # type: ignore[import-not-found]  # beside this script, stdlib + xocview

# Python exception names quoted in a message that passed as a located error: a sign that the
# message wraps a bug of ours (the verdict is "leaked", which is not a failure by itself).
_LEAK = re.compile(
    r"\b(AttributeError|TypeError|KeyError|IndexError|NameError|UnboundLocalError|"
    r"RecursionError|ZeroDivisionError|AssertionError|NotImplementedError|"
    r"UnicodeDecodeError|UnicodeEncodeError|OverflowError|SystemError)\b"
)
MAX_LINE = 4000  # longer one-line messages are still unreadable: a failure
# The executor's memory budget for ``run`` (its default, half the free memory, may be far over
# the fuzz's 2 GB cap on a big machine); left out where the executor has no budget yet.
RUN_BUDGET, RUN_BUDGET_TEXT = 2**30, "1G"
CLI_TARGETS = ("info", "check", "render", "run")


def _peak_reset() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) so that each case reports its own peak."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_mb() -> float:
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _tail(tb: str, lines: int = 6) -> str:
    return "\n".join(tb.rstrip().splitlines()[-lines:])


def _where(exc: BaseException) -> str:
    """The innermost frame in xocview (else the innermost frame): the cause of a bug."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/xocview/" in f.filename] or frames
    if not ours:
        return "?"
    f = ours[-1]
    rel = f.filename.split("/xocview/", 1)[-1]
    return (
        f"xocview/{rel}:{f.lineno} {f.name}" if "/xocview/" in f.filename else f"{rel}:{f.lineno}"
    )


def _verdict(outcome: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {"outcome": outcome, "reason": reason, **extra}


def _message_problem(msg: str, path: str | None) -> str | None:
    """Why ``msg`` is not a located one-line message, or None when it is one."""
    if not msg.strip():
        return "empty message"
    lines = msg.rstrip("\n").split("\n")
    if len(lines) != 1:
        return f"{len(lines)}-line message: {lines[0][:200]!r} ..."
    if len(msg) > MAX_LINE:
        return f"overlong message ({len(msg):,} characters): {msg[:200]!r}"
    if path is not None and os.path.basename(path) not in msg:
        return f"message does not name the file: {msg[:300]!r}"
    return None


def _on_error_message(msg: str, path: str | None) -> dict[str, Any]:
    msg = msg.removesuffix("\n")
    problem = _message_problem(msg, path)
    if problem:
        return _verdict("message", problem)
    leak = _LEAK.search(msg)
    if leak:
        return _verdict("leaked", f"{leak.group(1)} quoted: {msg[:300]}")
    return _verdict("error", msg[:300])


def _on_exception(e: BaseException) -> dict[str, Any]:
    tb = "".join(traceback.format_exception(e))
    kind = "memory" if isinstance(e, MemoryError) else "internal"
    return _verdict(
        kind, f"{type(e).__name__}: {str(e)[:300]}", where=_where(e), traceback=_tail(tb)
    )


def _capture(fn: Callable[[], Any]) -> tuple[Any, str, str, BaseException | None]:
    """Call ``fn`` with stdout and stderr captured as the real streams would encode them."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    result, exc = None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result = fn()
        except BaseException as e:  # every escape is a verdict
            exc = e
        with contextlib.suppress(Exception):
            out.flush()
        with contextlib.suppress(Exception):
            err.flush()
    texts = [s.buffer.getvalue().decode("utf-8", "backslashreplace") for s in (out, err)]
    return result, texts[0], texts[1], exc


def run_cli(target: str, path: str, out_dir: str) -> dict[str, Any]:
    """``xocview TARGET path`` through ``xocview.cli.main``; a verdict from its exit and stderr."""
    return cli_verdict(target, _argv(target, path, out_dir), path)[0]


def cli_verdict(target: str, argv: list[str], path: str | None) -> tuple[dict[str, Any], str, str]:
    """Run ``argv``; the verdict (``path`` is the file a one-line error must name, if any),
    stdout and stderr."""
    from xocview.cli import main

    rc, stdout, stderr, exc = _capture(lambda: main(argv))
    if exc is not None:
        if isinstance(exc, SystemExit):
            v = _verdict("internal", f"SystemExit({exc.code}) escaped main: {stderr[-300:]}")
            return v, stdout, stderr
        return _on_exception(exc), stdout, stderr
    if rc == 0 or (rc == 1 and target == "diff" and not stderr):
        return _verdict("ok", f"exit {rc}"), stdout, stderr
    if rc == 1 and target == "check" and not stderr:
        return _check_report(stdout, argv[-1]), stdout, stderr
    if rc == 1 or (rc == 2 and target == "diff"):
        return _on_error_message(stderr, None if target == "run" else path), stdout, stderr
    lines = stderr.strip().splitlines()
    msg = next((ln for ln in lines if ln.startswith("xocview:")), lines[-1] if lines else "")
    if rc == 3 and "MemoryError" in msg:
        return _verdict("memory", msg[:300]), stdout, stderr
    verdict = _verdict("internal", f"exit {rc}: {msg[:300]}")
    if rc == 3:  # the one-line message hides the traceback: run again with --debug for it
        _, _, debug_err, _ = _capture(lambda: main([*argv, "--debug"]))
        verdict["traceback"] = _tail(debug_err.rsplit("xocview: internal error", 1)[0], 8)
        verdict["where"] = _where_from_text(verdict["traceback"])
    return verdict, stdout, stderr


def _has_budget() -> bool:
    import inspect

    from xocview.executor import run

    return "max_memory" in inspect.signature(run).parameters


def _budget_options() -> list[str]:
    return ["--max-memory", RUN_BUDGET_TEXT] if _has_budget() else []


def _where_from_text(tb: str) -> str:
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', tb)
    ours = [f for f in frames if "/xocview/" in f[0]] or frames
    if not ours:
        return "?"
    name, line, func = ours[-1]
    return f"xocview/{name.split('/xocview/', 1)[-1]}:{line} {func}"


def _check_report(stdout: str, path: str) -> dict[str, Any]:
    """``check`` exit 1 with findings: every line must be one finding that names the file."""
    lines = stdout.rstrip("\n").split("\n")
    bad = [ln for ln in lines if not ln.startswith(f"{path}: ")]
    if bad:
        return _verdict("message", f"check printed a line that is not a finding: {bad[0][:200]!r}")
    longest = max(lines, key=len)
    if len(longest) > MAX_LINE:
        return _verdict("message", f"overlong finding ({len(longest):,} characters)")
    return _verdict("ok", "exit 1 with findings")


def run_api(target: str, path: str) -> dict[str, Any]:
    """``registry.load``, ``registry.check``, ``executor.run``: errors must be one located line."""
    from xocview.errors import XocviewError
    from xocview.executor import run
    from xocview.formats import registry

    stage: list[str] = []  # "run" once the file is loaded: a run error names a node, not the file

    def call() -> Any:
        if target == "api-check":
            return registry.check(path)
        graph = registry.load(path)
        if target == "api-run":
            stage.append("run")
            budget: dict[str, Any] = {"max_memory": RUN_BUDGET} if _has_budget() else {}
            return run(graph, repeat=1, **budget)
        return graph

    result, _, _, exc = _capture(call)
    if exc is None:
        if target == "api-check":
            for finding in result[1]:
                problem = _message_problem(str(finding), None)
                if problem:
                    return _verdict("message", f"finding: {problem}")
            if path.endswith(".onnx") and not any(f.severity == "error" for f in result[1]):
                if any("shape inference not run" in str(f) for f in result[1]):
                    # onnx's full check would expand every call without bound (a function
                    # bomb holds it for minutes): there is no anchor to ask
                    return _verdict("ok", "returned; too big for onnx.checker's full check")
                return _onnx_checker_agrees(path)
        return _verdict("ok", "returned")
    if isinstance(exc, XocviewError):
        return _on_error_message(str(exc), None if stage else path)
    return _on_exception(exc)


def _onnx_checker_agrees(path: str) -> dict[str, Any]:
    """``check`` found no error: the verdict is "missed" if ``onnx.checker`` finds one.

    The issue asks ``check`` to find at least what ``check_model(full_check=True)`` finds; a
    miss is reported, not counted as a failure (the checker is stricter in places by design).
    """
    import onnx

    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as e:  # the checker's errors are of several types
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return _verdict("missed", f"check: 0 errors; onnx.checker: {first[:300]}")
    return _verdict("ok", "returned; onnx.checker agrees")


def _selftest(what: str) -> dict[str, Any]:
    """Misbehave on purpose, so that a test can see the parent catch each kind of failure."""
    from xocview.errors import XocviewError

    if what == "hang":
        time.sleep(3600)
    elif what == "spin":
        while True:
            pass
    elif what == "memory":
        hog = b"x" * (600 * 2**20)  # written, so resident
        time.sleep(5)
        del hog
    elif what == "crash":
        os.kill(os.getpid(), 11)
    elif what == "message":
        broken = XocviewError("f.json: a")
        broken.args = ("f.json: a\nb",)  # past the escaping that XocviewError does itself
        return run_api_call(lambda: (_ for _ in ()).throw(broken), "f.json")
    return run_api_call(lambda: int("not a number"), "f.json")


def run_api_call(call: Callable[[], Any], path: str) -> dict[str, Any]:
    from xocview.errors import XocviewError

    _, _, _, exc = _capture(call)
    if isinstance(exc, XocviewError):
        return _on_error_message(str(exc), path)
    return _on_exception(exc) if exc is not None else _verdict("ok", "returned")


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    target, path, out_dir = spec["target"], spec["path"], spec["out"]
    if target.startswith("selftest:"):
        return _selftest(target.split(":", 1)[1])
    if target in attack_targets.TARGETS:
        return attack_targets.run(spec, cli_verdict, _budget_options())
    if target in CLI_TARGETS:
        verdict, stdout, stderr = cli_verdict(target, _argv(target, path, out_dir), path)
        if not spec.get("screen"):  # the attack cases' terminal and secret checks
            return verdict
        return attack_targets.screen(verdict, stdout, stderr, spec.get("secret"))
    return run_api(target, path)


def _argv(target: str, path: str, out_dir: str) -> list[str]:
    return {
        "info": ["info", path],
        "check": ["check", path],
        "render": ["render", path, os.path.join(out_dir, "out.png")],
        "run": ["run", path, "--repeat", "1", *_budget_options()],
    }[target]


def main() -> None:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # stray C-level prints must not corrupt the protocol
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    if "--lazy" not in sys.argv:  # the imports that make a cold start slow, done once
        import xocview.cli
        import xocview.executor
        import xocview.ui.headless  # noqa: F401

    proto.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        spec = json.loads(line)
        _peak_reset()
        start = time.perf_counter()
        try:
            verdict = run_case(spec)
        except BaseException as e:  # a failure of the worker itself
            verdict = _on_exception(e)
        verdict["seconds"] = round(time.perf_counter() - start, 3)
        verdict["peak_mb"] = round(_peak_mb(), 1)
        proto.write(json.dumps(verdict) + "\n")


if __name__ == "__main__":
    main()
