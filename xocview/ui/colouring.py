"""What the canvas colours a graph by (category, measured times of one engine, FLOPs,
parameters, an imported metric), with the values and heat levels made once per graph state.

A part of ``Document``, kept apart: it reads the document's graph, hierarchy, drawing and edit
count, and says ``heat_changed`` when the colours may have changed.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import SignalInstance

from xocview.model import Graph, Hierarchy
from xocview.model.analyses.metrics import METRIC_MODE, node_metric
from xocview.model.analyses.profile import (
    CPU,
    engine_label,
    node_flops,
    node_parameters,
    node_times_ms,
    time_sources,
)
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.heat import HeatLevels, heat_levels

__all__ = ["HeatColouring"]


class HeatColouring:
    """The colouring half of a Document (see the module docstring)."""

    graph: Graph
    drawing: Drawing
    heat_changed: SignalInstance
    live_ms: np.ndarray | None
    _edits: int

    @property
    def hierarchy(self) -> Hierarchy:
        """The graph's hierarchy as it is now (made once per graph state, kept with its index:
        the load worker's, until an edit)."""
        return Hierarchy.of(self.graph)

    def start_colouring(self) -> None:
        """The colouring of a graph just opened: a profiled file opens heat-coloured; most
        files store no time (then no whole-graph sums are made)."""
        self._values: tuple[str, np.ndarray] | None = None
        # the engine whose stored times the heat shows: performance.time.<time_engine>
        self.time_engine = CPU
        self._sources: tuple[int, list[str]] | None = None
        self._times: tuple[tuple[int, str], np.ndarray] | None = None
        self._heat: tuple[tuple[int, str, bool, int], HeatLevels] | None = None
        self._heat_version = 0
        self.heat_log = True
        timed = bool(self.time_sources()) and bool(np.isfinite(self.times_ms()).any())
        self.colour_by = "time" if timed else "category"

    def node_values(self) -> np.ndarray | None:
        """Per node position, the measure the canvas colours by (None: colour by category)."""
        mode = self.colour_by
        if mode == "category":
            return None
        if mode == "time" and self.live_ms is not None:
            return self.live_ms
        if mode == "time":
            return self.times_ms()
        if self._values is None or self._values[0] != mode:
            if mode.startswith(METRIC_MODE):  # a named metric: performance.<name>
                values = node_metric(self.graph, mode[len(METRIC_MODE) :], self.hierarchy)
            else:
                values = {"flops": node_flops, "params": node_parameters}[mode](
                    self.graph, self.hierarchy
                )
            self._values = (mode, values)
        return self._values[1]

    def times_ms(self) -> np.ndarray:
        """Stored ``performance.time.<engine>`` per node position (groups: sums) of the engine
        shown (``shown_time_engine``), computed once per state of the graph and engine."""
        engine = self.shown_time_engine()
        key = (self._heat_version, engine)
        if self._times is None or self._times[0] != key:
            self._times = (key, node_times_ms(self.graph, self.hierarchy, engine))
        return self._times[1]

    def time_sources(self) -> list[str]:
        """The engines whose times the graph stores ("cpu" first), once per state of the graph."""
        if self._sources is None or self._sources[0] != self._edits:
            self._sources = (self._edits, time_sources(self.graph))
        return self._sources[1]

    def shown_time_engine(self) -> str:
        """The engine whose times the heat and the Profile pane show: ``time_engine`` when the
        graph has its times, else the first engine that has some (an undo took the chosen
        engine's times away, or a file stores only onnxruntime's); a redo brings it back."""
        sources = self.time_sources()
        if self.time_engine in sources or not sources:
            return self.time_engine
        return sources[0]

    def time_label(self, engine: str | None = None) -> str:
        """``engine``'s times as the user reads their source ("xocview", "onnxruntime"), or ""
        when it goes without saying: they are the bundled executor's and the graph stores no
        other engine's. Without ``engine``, those the heat shows (a running run's own)."""
        if engine is None:
            engine = CPU if self.live_ms is not None else self.shown_time_engine()
        if engine == CPU and set(self.time_sources()) <= {CPU}:
            return ""
        return engine_label(engine)

    def set_time_engine(self, engine: str) -> None:
        """Show the times stored as ``performance.time.<engine>`` ("cpu": the bundled
        executor's, "onnxruntime", ...)."""
        if not engine or "." in engine:
            raise ValueError(f"not a time engine: {engine!r}")
        self.time_engine = engine
        self._heat_version += 1
        self.heat_changed.emit()

    def heat(self) -> HeatLevels | None:
        """Colour levels of the current drawing's items, or None when colouring by category."""
        values = self.node_values()
        if values is None:
            return None
        key = (id(self.drawing), self.colour_by, self.heat_log, self._heat_version)
        if self._heat is None or self._heat[0] != key:
            label = self.time_label() if self.colour_by == "time" else ""
            self._heat = (key, heat_levels(self.drawing, values, self.heat_log, label))
        return self._heat[1]

    @property
    def heat_key(self) -> tuple[str, bool, int]:
        """Changes whenever the heat colours may have changed (for cached pictures)."""
        return self.colour_by, self.heat_log, self._heat_version

    def set_colour_by(self, mode: str) -> None:
        """ "category", "time", "flops", "params" or "metric:<name>" (``performance.<name>``)."""
        metric = mode.startswith(METRIC_MODE) and len(mode) > len(METRIC_MODE)
        if mode not in ("category", "time", "flops", "params") and not metric:
            raise ValueError(f"unknown colouring {mode!r}")
        self.colour_by = mode
        self.heat_changed.emit()

    def set_heat_log(self, log: bool) -> None:
        self.heat_log = log
        self.heat_changed.emit()

    def set_live_times(self, ms: np.ndarray | None) -> None:
        """Times measured so far by a running run (ms per node position, NaN: not yet), shown
        instead of the stored ones until the run ends (None)."""
        self.live_ms = ms
        self._heat_version += 1
        if ms is not None:
            self.colour_by = "time"
        self.heat_changed.emit()
