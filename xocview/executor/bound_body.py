"""Planned bodies (If branches, Loop and Scan bodies) as the callables their kernels call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from xocview.executor.bodies import Body
from xocview.executor.memory import LiveBytes

if TYPE_CHECKING:
    from xocview.executor.plan import Step

__all__ = ["BodyHost", "BoundBody", "bind_bodies"]


class BodyHost(Protocol):
    """The session a body runs in: its tensor values, and how it runs one body step."""

    values: list[Any]
    checking: bool  # the first pass: memory is counted
    memory: LiveBytes

    def body_call(self, step: Step) -> None: ...


class BoundBody:
    """A planned body as its holder's kernel calls it: ``body(*values)`` binds the values to
    the body's inputs, runs its steps in the host session and returns its outputs' values."""

    def __init__(self, host: BodyHost, body: Body) -> None:
        self.host, self.body = host, body

    @property
    def num_inputs(self) -> int:
        return len(self.body.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.body.outputs)

    def __call__(self, *inputs: Any) -> list[Any]:
        body, host = self.body, self.host
        if len(inputs) != len(body.inputs):
            raise ValueError(
                f"body {body.attribute!r} takes {len(body.inputs)} inputs; {len(inputs)} given"
            )
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
