"""Planned bodies (If branches, Loop and Scan bodies) as the callables their kernels call.

Every call of a body is one iteration of its holder: it polls the run's cancel flag (a
cancelled run stops within one iteration, however many the loop has left) and, at most every
``REPORT_SECONDS``, reports how far the holder has come.

A Loop whose trip count cannot finish is refused after its first iteration: when its body's
condition cannot change between iterations (passed through, a constant, an outer tensor) and
came back true, the loop runs exactly its trip count, and ``MAX_BODY_RUNS`` bounds the body
node runs that trip count may ask for. A loop whose condition can end it (a torch export's
INT64_MAX trip count with a condition) is never refused on its count: it shows its progress
and stays cancellable instead, as no bound on time would be right for every machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from xocview.executor.bodies import Body
from xocview.executor.memory import LiveBytes

if TYPE_CHECKING:
    from xocview.executor.plan import Step

__all__ = [
    "MAX_BODY_RUNS",
    "REPORT_SECONDS",
    "BodyHost",
    "BoundBody",
    "Cancelled",
    "Iteration",
    "Iterations",
    "bind_bodies",
]

# on_iteration(node_id, done, total): a Loop or Scan node's iterations so far, and how many it
# will run (None when its condition decides); called at most every REPORT_SECONDS.
Iteration = Callable[[str, int, int | None], None]
REPORT_SECONDS = 0.25
# Body node runs one Loop may declare (trip count x body nodes) when its condition cannot end
# it: about a few minutes of the smallest nodes; 10^15 iterations are refused at once.
MAX_BODY_RUNS = 10**8


class Cancelled(BaseException):
    """The run's cancel flag was seen inside a body; the runtime returns what it measured.

    A BaseException, as KeyboardInterrupt is: no kernel's ``except Exception`` may take it for
    a failure of its own.
    """


class Iterations:
    """The run's cancel flag and iteration reports, as every body call sees them."""

    def __init__(self, cancel: Callable[[], bool] | None, report: Iteration | None) -> None:
        self.cancel, self.report = cancel, report
        self.active = cancel is not None or report is not None  # else a body call skips tick
        self.next_report = time.perf_counter() + REPORT_SECONDS

    def tick(self, body: BoundBody) -> None:
        """One more call of ``body``: stop when cancelled, report when it is time."""
        if self.cancel is not None and self.cancel():
            raise Cancelled
        if self.report is not None and body.counting:
            now = time.perf_counter()
            if now >= self.next_report:
                self.next_report = now + REPORT_SECONDS
                self.report(body.body.holder, body.calls, body.expected)


class BodyHost(Protocol):
    """The session a body runs in: its tensor values, and how it runs one body step."""

    values: list[Any]
    checking: bool  # the first pass: memory is counted
    memory: LiveBytes
    iterations: Iterations

    def body_call(self, step: Step) -> None: ...


class BoundBody:
    """A planned body as its holder's kernel calls it: ``body(*values)`` binds the values to
    the body's inputs, runs its steps in the host session and returns its outputs' values."""

    def __init__(self, host: BodyHost, body: Body) -> None:
        self.host, self.body = host, body
        self.calls = 0  # since the holder's ``begin``
        self.expected: int | None = None  # calls the holder will make (None: unknown)
        self.counting = False  # the holder iterates (Loop, Scan), so calls are worth reporting

    @property
    def num_inputs(self) -> int:
        return len(self.body.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.body.outputs)

    def begin(self, expected: int | None) -> None:
        """The holder starts iterating: ``expected`` calls (None when a condition decides)."""
        self.calls, self.expected, self.counting = 0, expected, True

    def check_before_start(self, trip_count: int | None) -> None:
        """Before a Loop's first iteration, with its condition true: a body that gives its
        condition back unchanged will run exactly ``trip_count`` times, so the check of
        ``check_trip_count`` is made now, before any work (an inner loop of the first
        iteration may itself take long)."""
        if self.body.passes_condition:
            self.check_trip_count(trip_count)

    def check_trip_count(self, trip_count: int | None) -> None:
        """After a Loop's first iteration left its condition true: refuse the loop when the
        condition cannot change and ``trip_count`` iterations (None: no trip count, for ever)
        are more body node runs than ``MAX_BODY_RUNS``."""
        if self.body.first_output_varies:
            return
        if trip_count is None:
            raise ValueError(
                "no trip count, and the body's condition cannot change between iterations: "
                "the loop would never end; expected a trip count or a condition that can "
                "turn false"
            )
        nodes = max(1, len(self.body.steps))
        if trip_count * nodes > MAX_BODY_RUNS:
            raise ValueError(
                f"trip count {trip_count:,} with a body condition that cannot change between "
                f"iterations: {trip_count:,} iterations of {nodes} body node"
                f"{'s' if nodes != 1 else ''} are over the {MAX_BODY_RUNS:,} node runs a "
                f"loop may take; expected a trip count of at most {MAX_BODY_RUNS // nodes:,}, "
                "or a condition that ends the loop"
            )

    def __call__(self, *inputs: Any) -> list[Any]:
        body, host = self.body, self.host
        if len(inputs) != len(body.inputs):
            raise ValueError(
                f"body {body.attribute!r} takes {len(body.inputs)} inputs; {len(inputs)} given"
            )
        self.calls += 1
        if host.iterations.active:
            host.iterations.tick(self)
        values = host.values
        for t, v in zip(body.inputs, inputs, strict=True):
            values[t] = v
        for step in body.steps:
            host.body_call(step)
        out = [values[t] for t in body.outputs]
        for t in body.made:  # the holder stores what it keeps as its own outputs
            if host.checking:
                host.memory.drop(values[t])
            values[t] = None
        return out


def bind_bodies(host: BodyHost, step: Step) -> None:
    """The step's planned bodies (keyword arguments of its kernel) as callables."""
    for name, value in list(step.kwargs.items()):
        if isinstance(value, Body):
            step.kwargs[name] = BoundBody(host, value)
        elif isinstance(value, list) and value and all(isinstance(v, Body) for v in value):
            step.kwargs[name] = [BoundBody(host, v) for v in value]
