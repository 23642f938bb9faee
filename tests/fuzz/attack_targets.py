"""The attack families' commands, run inside the fuzz worker, and the checks on what they print.

Imported by ``worker.py`` as a sibling module: it imports only the standard library, numpy,
onnx (onnxruntime where installed) and xocview, never tests/. Targets:

- ``convert``: ``xocview convert FILE out.json`` then ``... out.onnx`` (a read outside the
  folder shows up in what they write: ``markers.escape_problem`` searches those files);
- ``diff``: ``xocview diff FILE base.<ext>`` (the clean file the attack started from);
- ``import-times``: ``xocview import-times FILE profile.json -o times.json``;
- ``convert-onnx``: ``xocview convert FILE out.onnx`` into a folder whose other models own data
  files; afterwards each must load with its own weights and out.onnx with FILE's, else the
  verdict is ``clobbered``;
- ``convert-kill``: the same convert over an old out.onnx pair, in a child killed (SIGKILL) just
  before its ``kill_at``-th file-system step; the pair left must be the old one or the new one,
  with no second hard link, and the next save must leave the new pair and no temporary files,
  else ``torn``.

Every CLI command's stdout and stderr are screened: a raw control character (other than LF and
TAB), an 8-bit C1 character or a bidi override is ``control``, and so is a line that starts with
the text an attack file forges after a raw line feed; the run's secret (``markers.py``) in them is
``escaped``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["FORGED", "TARGETS", "control_problem", "profile_events", "run", "screen"]

TARGETS = ("convert", "diff", "import-times", "convert-onnx", "convert-kill")
FORGED = "XOCFORGED"  # what attack names put after a line feed, to forge an output line
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_FAILED = ("message", "internal", "hang", "memory", "crash")
Cli = Callable[[str, list[str], "str | None"], tuple[dict[str, Any], str, str]]


def control_problem(text: str, stream: str) -> str | None:
    """Why ``text`` would take over a terminal, or None."""
    found = _CONTROL.search(text)
    if found:
        at = found.start()
        return f"raw {found.group()!r} on {stream}: {text[max(0, at - 40) : at + 40]!r}"
    for line in text.split("\n"):
        if line.startswith(FORGED):
            return f"forged line on {stream}: {line[:80]!r}"
    return None


def screen(verdict: dict[str, Any], stdout: str, stderr: str, secret: str | None) -> dict:
    """``verdict`` turned ``escaped`` or ``control`` by what the command printed."""
    if secret and (secret in stdout or secret in stderr):
        where = "stdout" if secret in stdout else "stderr"
        return {**verdict, "outcome": "escaped", "reason": f"the marker's secret on {where}"}
    if verdict.get("outcome") in _FAILED:
        return verdict
    problem = control_problem(stdout, "stdout") or control_problem(stderr, "stderr")
    if problem:
        return {**verdict, "outcome": "control", "reason": problem}
    return verdict


def run(spec: dict[str, Any], cli: Cli, budget: list[str]) -> dict[str, Any]:
    """The verdict of one attack target (``spec`` as ``worker.run_case`` gets it)."""
    target, path, out = spec["target"], spec["path"], Path(spec["out"])
    secret = spec.get("secret")
    if target == "convert-onnx":
        return _convert_onnx(path, out, cli, secret)
    if target == "convert-kill":
        return _convert_kill(path, out, int(spec.get("kill_at", 1)), cli, secret)
    if target == "convert":
        verdict: dict[str, Any] = {}
        for name in ("out.json", "out.onnx"):
            v, stdout, stderr = cli("convert", ["convert", path, str(out / name)], None)
            verdict = screen(v, stdout, stderr, secret)
            if verdict["outcome"] != "ok":
                return verdict
        return verdict
    if target == "diff":
        base = next((str(p) for p in sorted(out.glob("base.*"))), path)
        v, stdout, stderr = cli("diff", ["diff", path, base], None)
        return screen(v, stdout, stderr, secret)
    profile = out / "profile.json"
    if not profile.is_file():
        profile.write_text(json.dumps(profile_events(["relu0", "no_such_node"])))
    argv = ["import-times", path, str(profile), "-o", str(out / "times.json")]
    v, stdout, stderr = cli("import-times", argv, None)
    return screen(v, stdout, stderr, secret)


def profile_events(names: list[str]) -> dict[str, Any]:
    """onnxruntime's profile JSON with a kernel event for each name."""
    events = [{"cat": "Session", "name": "model_run", "ts": 0, "dur": 1000}]
    for i, name in enumerate(names):
        events.append(
            {
                "cat": "Node",
                "name": f"{name}_kernel_time",
                "ts": 10 + i,
                "dur": 5,
                "args": {"op_name": "Relu", "provider": "CPUExecutionProvider"},
            }
        )
    return {"traceEvents": events}


# -- the pair of a model and its data ------------------------------------------------------


def weights_digest(path: Path) -> str:
    """A digest of a model's initializers, external data read as onnx reads it (which refuses
    a data file with a second hard link)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=True)
    h = hashlib.sha256()
    for init in sorted(model.graph.initializer, key=lambda t: t.name):
        h.update(init.name.encode() + b"\0")
        h.update(numpy_helper.to_array(init).tobytes())
    return h.hexdigest()[:16]


def _digest(path: Path) -> str:
    try:
        return weights_digest(path)
    except Exception as e:  # onnx raises many kinds; the message is the finding
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return f"unloadable ({first[:120]})"


def _data_files(model: Path) -> list[Path]:
    """The external data files ``model`` names."""
    import onnx

    proto = onnx.load(str(model), load_external_data=False)
    names = {
        e.value
        for t in proto.graph.initializer
        for e in t.external_data
        if e.key == "location" and t.data_location == onnx.TensorProto.EXTERNAL
    }
    return [model.parent / n for n in sorted(names)]


def pair_problem(model: Path, want: set[str]) -> str | None:
    """Why ``model`` and its data are not one of the ``want`` digests, or None."""
    if not model.is_file():
        return f"{model.name} is missing"
    got = _digest(model)
    if got not in want:
        return f"{model.name} loads as {got}, expected one of {sorted(want)}"
    for data in _data_files(model):
        if data.is_file() and os.stat(data).st_nlink != 1:
            return f"{data.name} has {os.stat(data).st_nlink} hard links"
    return _ort_problem(model)


def _ort_problem(model: Path) -> str | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    try:
        ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    except Exception as e:  # only the hard-link refusal is about the pair
        if "hardlink" in str(e).lower():
            return f"onnxruntime refuses {model.name}: {str(e)[:160]}"
    return None


def _others(folder: Path, path: str) -> dict[Path, str]:
    """Every other model in ``folder`` (not FILE, not out.onnx) and its weights' digest."""
    skip = {Path(path).name, "out.onnx"}
    return {p: _digest(p) for p in sorted(folder.glob("*.onnx")) if p.name not in skip}


def _convert_onnx(path: str, out: Path, cli: Cli, secret: str | None) -> dict[str, Any]:
    others, new = _others(out, path), _digest(Path(path))
    v, stdout, stderr = cli("convert", ["convert", path, str(out / "out.onnx")], None)
    verdict = screen(v, stdout, stderr, secret)
    for model, digest in others.items():
        problem = pair_problem(model, {digest})
        if problem:
            return {**verdict, "outcome": "clobbered", "reason": f"after the save: {problem}"}
    if verdict["outcome"] == "ok" and not new.startswith("unloadable"):
        problem = pair_problem(out / "out.onnx", {new})
        if problem:
            return {**verdict, "outcome": "clobbered", "reason": f"the new pair: {problem}"}
    return verdict


_STEPS = ("replace", "rename", "link", "unlink", "remove", "fsync", "ftruncate", "open", "write")


def _killed_save(argv: list[str], kill_at: int) -> str:
    """Run ``xocview argv`` in a forked child killed before its ``kill_at``-th step."""
    pid = os.fork()
    if pid == 0:  # the child: count the file-system steps, die at the chosen one
        try:
            count = [0]

            def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
                def step(*args: Any, **kwargs: Any) -> Any:
                    count[0] += 1
                    if count[0] >= kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return real(*args, **kwargs)

                return step

            for name in _STEPS:
                setattr(os, name, counted(name, getattr(os, name)))
            from xocview.cli import main

            with contextlib.redirect_stderr(open(os.devnull, "w")):
                rc = main(argv)
            os._exit(100 + int(rc))
        except BaseException:
            os._exit(99)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"killed at step {kill_at}"
    return f"not killed (exit {os.WEXITSTATUS(status) - 100}, fewer than {kill_at} steps)"


def _convert_kill(
    path: str, out: Path, kill_at: int, cli: Cli, secret: str | None
) -> dict[str, Any]:
    target = out / "out.onnx"
    old, new = _digest(target), _digest(Path(path))
    argv = ["convert", path, str(target)]
    how = _killed_save(argv, kill_at)
    problem = pair_problem(target, {old, new})
    if problem:
        return {"outcome": "torn", "reason": f"{how}: {problem}"}
    v, stdout, stderr = cli("convert", argv, None)
    verdict = screen(v, stdout, stderr, secret)
    if verdict["outcome"] != "ok":
        return {**verdict, "reason": f"{how}; the next save: {verdict['reason']}"}
    problem = pair_problem(target, {new})
    left = sorted(p.name for p in out.glob(".*.tmp"))
    if problem or left:
        why = problem or f"temporary files left: {left[:3]}"
        return {"outcome": "torn", "reason": f"{how}, then saved again: {why}"}
    return {**verdict, "reason": f"{how}; the pair is whole and saved again"}
