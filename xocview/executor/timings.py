"""What the passes measured, turned into one time per node of the file.

Each timed step keeps its seconds per pass; a body node (inside an If, Loop or Scan) its
seconds summed over its holder's calls in a pass. The result takes medians over the passes,
leaves a holder's bodies out of its own time, splits a fused step's time back over the nodes
it ran (by their FLOPs) and gives each node its spread (slowest pass over fastest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xocview.executor.result import RunResult

if TYPE_CHECKING:
    from xocview.executor.plan import Step

__all__ = ["Timings"]


class Timings:
    """The seconds of every timed step and body node, pass by pass."""

    def __init__(self, steps: list[Step], holders: list[tuple[int | None, Step]]) -> None:
        self.steps = steps
        self.samples: list[list[float]] = [[] for _ in steps]
        # the first pass's seconds when it is a warm-up: what a run stopped in it can report
        self.untimed: list[float | None] = [None] * len(steps)
        # body nodes: seconds summed over their calls in the current pass, then one per pass
        self.body_pass: dict[str, float] = {}
        self.body_samples: dict[str, list[float]] = {}
        # steps that run bodies, with their index among the timed steps (None inside a body)
        self.holders = holders

    def record_bodies(self) -> None:
        """Keep this pass's body times. A holder's own time becomes its time less its bodies'
        (the slicing, stacking and binding it does itself), so that a holder's subtree sums to
        what it took and the times of all nodes add up to the pass."""
        inclusive = self.body_pass
        own = dict(inclusive)
        for k, step in self.holders:
            inner = sum(inclusive.get(s.node_id, 0.0) for b in step.bodies for s in b.steps)
            if k is not None and self.samples[k]:
                self.samples[k][-1] = max(0.0, self.samples[k][-1] - inner)
            elif step.node_id in own:
                own[step.node_id] = max(0.0, own[step.node_id] - inner)
        for node_id, seconds in own.items():
            self.body_samples.setdefault(node_id, []).append(seconds)

    def fill(self, r: RunResult) -> None:
        """Medians per node, fused steps split, passes and spreads, into ``r``."""
        steps, samples = self.steps, self.samples
        r.node_times = {
            step.node_id: _median(times)
            for step, times in zip(steps, samples, strict=True)
            if times
        }
        if not r.node_times:  # stopped before a timed pass: the warm-up's times, said so
            r.node_times = {
                step.node_id: seconds
                for step, seconds in zip(steps, self.untimed, strict=True)
                if seconds is not None
            }
        # a body node's time: summed over its holder's calls in a pass (a loop's iterations),
        # the median over passes; the holder's own time leaves its bodies out
        r.node_times.update(
            (node_id, _median(times)) for node_id, times in self.body_samples.items()
        )
        self._split_fused(r)
        r.passes = max((len(times) for times in samples), default=0)
        r.spread = {
            step.node_id: _spread(times)
            for step, times in zip(steps, samples, strict=True)
            if len(times) > 1
        }
        r.spread.update(
            (node_id, _spread(times))
            for node_id, times in self.body_samples.items()
            if len(times) > 1
        )
        for step in steps:
            if step.fused_with and step.node_id in r.spread:
                r.spread.update((nid, r.spread[step.node_id]) for nid, _ in step.fused_with)

    def _split_fused(self, r: RunResult) -> None:
        """A fused step's time shared by its nodes in proportion to their FLOPs."""
        for step in self.steps:
            if not step.fused_with or step.node_id not in r.node_times:
                continue
            shares = getattr(step.kernel.fn, "shares", lambda: None)() if step.kernel else None
            if not shares:
                continue
            seconds = r.node_times[step.node_id]
            ids = [step.node_id, *(nid for nid, _ in step.fused_with)]
            r.node_times.update(
                (nid, seconds * share) for nid, share in zip(ids, shares, strict=True)
            )
            r.fused[step.node_id] = ids[1:]


def _median(times: list[float]) -> float:
    """np.median of a few floats without its fixed cost (40 us a call: 6 s on 150k nodes)."""
    if len(times) == 1:
        return float(times[0])
    ordered = sorted(times)
    m = len(ordered) // 2
    return float(ordered[m]) if len(ordered) % 2 else (ordered[m - 1] + ordered[m]) / 2


def _spread(times: list[float]) -> float:
    """Slowest over fastest (a node too fast for the clock to see counts as steady)."""
    low = min(times)
    return max(times) / low if low > 0 else 1.0
