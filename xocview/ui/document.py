"""One open graph and its view state: expanded groups, direction, the drawing, the selection.

Widgets observe it through signals and never change the model behind its back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

import numpy as np
from PySide6.QtCore import QObject, QThreadPool, Signal
from PySide6.QtGui import QUndoStack

from xocview.errors import shorten
from xocview.executor import RunResult
from xocview.formats import save
from xocview.model import Graph
from xocview.ui.canvas.drawing import Drawing, build_drawing
from xocview.ui.colouring import HeatColouring
from xocview.ui.first_view import FIRST_VIEW_BOXES, initial_expanded
from xocview.ui.graph_facts import FACTS, UNMADE, EditFacts, make_in_thread
from xocview.ui.workers import RelayoutJob

__all__ = ["FIRST_VIEW_BOXES", "Document", "initial_expanded"]

T = TypeVar("T")

# graphs of this many nodes (or drawings of this many boxes) relayout off the GUI thread
ASYNC_FROM_ITEMS = 1000


class Document(HeatColouring, QObject):
    """A graph opened from ``path`` and everything the views show of it."""

    drawing_changed = Signal()
    selection_changed = Signal()
    model_changed = Signal()  # after an edit or its undo: panes re-read the graph
    dirty_changed = Signal(bool)
    file_changed = Signal()  # the document's path and format (Save As)
    heat_changed = Signal()  # colouring mode, scale or values changed
    failed = Signal(str)  # a layout in the background failed: the one-line reason
    busy_changed = Signal(bool)  # a layout in the background started or ended
    facts_changed = Signal()  # the whole-graph facts made in the background arrived
    _facts_made = Signal(object)  # the facts of the loaded graph, from their thread
    progress = Signal(int, int)  # its progress: (done, total)

    def __init__(
        self,
        graph: Graph,
        path: Path | None = None,
        fmt: str = "",
        drawing: Drawing | None = None,
        expanded: set[str] | None = None,
        facts: dict[str, object] | None = None,
    ) -> None:
        super().__init__()
        self.graph = graph
        self.path = path
        self.format = fmt
        self._saved_here = False  # whether ``path`` was written by save_to
        facts = dict(facts or {})
        # what the panels derive from the whole graph, by name, for the current edit count
        self._derived: dict[str, tuple[int, object]] = {k: (0, v) for k, v in facts.items()}
        # Facts of a big graph are made in a thread after the first paint (validating and
        # counting FLOPs of a 130k-node graph take 1.2 s); panels show them when they come.
        self._pending: set[str] = set()
        self._unmade: set[str] = set()  # facts that ran out of memory in their thread
        if len(graph.nodes) >= ASYNC_FROM_ITEMS and set(FACTS) - set(facts):
            self._pending = set(FACTS) - set(facts)
            self._facts_made.connect(self._take_facts)
            name = path.name if path else graph.name
            make_in_thread(graph, sorted(self._pending), self._facts_made.emit, name)
        self.direction = "TB"
        self.show_weights = False  # weights folded into their consumers (View > Weights as Nodes)
        self.expanded: set[str] = (
            expanded if expanded is not None else initial_expanded(graph, self.hierarchy)
        )
        self.selected_node = -1
        self.selected_tensor = -1
        # the selection by id, as it was chosen: an edit moves positions, and a node inside a
        # closed group has no box to read its id from
        self._selected_as: tuple[str, str] | None = None
        self.also_selected: list[int] = []
        self.busy = False
        self._generation = 0
        self._job: RelayoutJob | None = None
        self.drawing: Drawing = drawing if drawing is not None else self._build(None)
        self._shown = self._view_state()  # what self.drawing shows: restored by Cancel
        self.undo_stack = QUndoStack(self)
        self.undo_stack.cleanChanged.connect(self._clean_changed)
        self.last_run: RunResult | None = None  # what the last run measured (Profile pane)
        self.live_ms: np.ndarray | None = None  # times measured so far by a running run
        self._edits = 0  # edits applied or undone (what the stored times may have changed)
        self.start_colouring()

    @property
    def edit_count(self) -> int:
        """Edits applied or undone so far: work begun on the graph at one count is stale at
        another."""
        return self._edits

    def _clean_changed(self, clean: bool) -> None:
        self.dirty_changed.emit(not clean)

    @property
    def dirty(self) -> bool:
        return not self.undo_stack.isClean()

    @property
    def save_path(self) -> Path | None:
        """Where Save writes without asking: a file that already is XOC JSON, or the ONNX
        file this document was saved as."""
        if self.path is None or not (self.format == "XOC JSON" or self._saved_here):
            return None
        return self.path

    def save_to(self, path: Path) -> list[str]:
        """Write the graph in the format the suffix names (``.onnx``: ONNX, else XOC JSON),
        atomically, and make ``path`` the document's file; returns the notes of what the file
        could not keep.

        Raises FormatError when the file cannot be written (the old file stays whole).
        """
        notes = save(self.graph, path)
        fmt = "ONNX" if path.suffix.lower() == ".onnx" else "XOC JSON"
        moved = path != self.path or self.format != fmt
        self.path = path
        self.format = fmt
        self._saved_here = True
        self.undo_stack.setClean()
        if moved:
            self.file_changed.emit()
        return notes

    def after_edit(self) -> None:
        """The graph changed under an undo command: rebuild what derives from it; the selection
        follows its node or tensor by id (positions shift when things are added or removed)."""
        g = self.graph
        before = self._selected_id()
        g.invalidate()
        self._values = None
        self._edits += 1
        self._heat_version += 1
        self.selected_node = self.selected_tensor = -1
        self.also_selected = []
        if before is not None:
            kind, ident = before
            try:
                if kind == "node":
                    self.selected_node = g.index.node_position(ident)
                else:
                    self.selected_tensor = g.index.tensor_position(ident)
            except KeyError:
                pass  # deleted or renamed: nothing selected
        self._remake_facts()
        self.relayout()
        self.model_changed.emit()
        self.selection_changed.emit()

    @property
    def title(self) -> str:
        return self.path.name if self.path else shorten(self.graph.name, 60)

    # -- view state --------------------------------------------------------------------------

    def _build(self, previous: Drawing | None) -> Drawing:
        return build_drawing(
            self.graph,
            set(self.expanded),
            direction=self.direction,
            show_weights=self.show_weights,
            previous=previous,
        )

    def derived(self, name: str, compute: Callable[[], T]) -> T:
        """``compute()``, remembered until the next edit or undo: the panels ask for the same
        whole-graph facts (validation, FLOPs) on every refresh, and a load worker can hand
        them over made (``facts``), so that a 100k-node graph opens without the GUI thread
        spending seconds on them."""
        found = self._derived.get(name)
        if found is not None and found[0] == self._edits:
            return cast(T, found[1])
        value = compute()
        self._derived[name] = (self._edits, value)
        return value

    def fact(self, name: str) -> object | None:
        """The whole-graph fact ``name`` of ``graph_facts.FACTS``, made once per edit count;
        None while a thread still makes it (``facts_changed`` follows), and when it ran out of
        memory or stack there (the window was told)."""
        if (name in self._pending or name in self._unmade) and self._edits == 0:
            return None
        if self._edit_facts is not None and self._edit_facts.waits(name, self._edits):
            return None
        return self.derived(name, lambda: FACTS[name](self.graph))

    # A big graph's facts after an edit are made in a thread too (EditFacts): facts follow
    # edits without the GUI thread spending half a second of a 20k-node graph's on them.
    _edit_facts: EditFacts | None = None

    def _remake_facts(self) -> None:
        if len(self.graph.nodes) >= ASYNC_FROM_ITEMS:
            if self._edit_facts is None:
                self._edit_facts = EditFacts(self)
                self._edit_facts.arrived.connect(self._take_edit_facts)
            self._edit_facts.start(self.graph, self._edits, self.title)

    def _take_edit_facts(self, result: tuple[int, dict[str, object]]) -> None:
        made = self._edit_facts.take(*result) if self._edit_facts is not None else None
        if made is not None:
            self._derived.update({name: (result[0], value) for name, value in made.items()})
            self.facts_changed.emit()

    def _take_facts(self, made: dict[str, object]) -> None:
        if self._edits == 0:  # nothing edited since the load: they describe this graph
            for name, value in made.items():
                if value is UNMADE:
                    self._unmade.add(name)
                else:
                    self._derived[name] = (0, value)
        self._pending.clear()
        self.facts_changed.emit()

    def _view_state(self) -> tuple[set[str], str, bool]:
        return set(self.expanded), self.direction, self.show_weights

    def relayout(self, keep_order: bool = True) -> None:
        """Lay out again after a change of view state.

        Small graphs are laid out at once; big ones in a worker thread, so that the window never
        stalls: the old picture stays until the new one is ready (``busy`` meanwhile, with
        ``progress`` reports), and ``cancel_relayout`` stops the work and the change.
        """
        self._generation += 1
        if self._job is not None:
            self._job.progress.cancel()  # superseded: stop it rather than let it finish
            self._job = None
        previous = self.drawing if keep_order else None
        if len(self.graph.nodes) < ASYNC_FROM_ITEMS and self.drawing.count < ASYNC_FROM_ITEMS:
            self.drawing = self._build(previous)
            self._shown = self._view_state()
            self._set_busy(False)
            self.drawing_changed.emit()
            return
        job = RelayoutJob(
            self._generation,
            self.graph,
            set(self.expanded),
            self.direction,
            self.show_weights,
            None,
            previous,
        )
        job.signals.done.connect(self._relaid)
        job.signals.failed.connect(self._relayout_failed)
        job.signals.progress.connect(self._relayout_progress)
        self._job = job
        self._set_busy(True)
        QThreadPool.globalInstance().start(job)

    def cancel_relayout(self) -> None:
        """Stop the layout in the background and go back to the view state the drawing shows."""
        if self._job is None:
            return
        self._job.progress.cancel()
        self._job = None
        self._generation += 1
        self.expanded, self.direction, self.show_weights = self._view_state_copy(self._shown)
        self._set_busy(False)

    @staticmethod
    def _view_state_copy(state: tuple[set[str], str, bool]) -> tuple[set[str], str, bool]:
        return set(state[0]), state[1], state[2]

    def _set_busy(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            self.busy_changed.emit(busy)

    def _relayout_progress(self, generation: int, done: int, total: int) -> None:
        if generation == self._generation:
            self.progress.emit(done, total)

    def _relaid(self, generation: int, drawing: Drawing, state: object) -> None:
        if generation != self._generation:
            return  # a newer change superseded this layout
        self._job = None
        self.drawing = drawing
        self._shown = self._view_state_copy(state)  # type: ignore[arg-type]
        self._set_busy(False)
        self.drawing_changed.emit()

    def _relayout_failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self._job = None
            self._set_busy(False)
            self.failed.emit(f"{self.title}: {message}")

    def toggle(self, group: int) -> None:
        """Expand a collapsed group or collapse an expanded one (by node position)."""
        gid = self.graph.nodes[group].id
        if gid in self.expanded:
            self.expanded.discard(gid)  # inner groups keep their state for the next expand
        else:
            self.expanded.add(gid)
        self.relayout()

    def set_level(self, level: int | None) -> None:
        """Expand every group above ``level`` (None: all groups)."""
        h = self.hierarchy
        self.expanded = {
            self.graph.nodes[i].id
            for i in range(len(self.graph.nodes))
            if h.is_group[i] and (level is None or h.depth[i] < level)
        }
        self.relayout(keep_order=False)

    def set_direction(self, direction: str) -> None:
        self.direction = direction
        self.relayout(keep_order=False)

    def set_show_weights(self, show: bool) -> None:
        self.show_weights = show
        self.relayout()

    def reveal(self, node: int) -> None:
        """Expand the collapsed groups around ``node`` so that it gets a box of its own."""
        closed = [
            a for a in self.hierarchy.ancestors(node) if self.graph.nodes[a].id not in self.expanded
        ]
        if closed:
            self.expanded.update(self.graph.nodes[a].id for a in closed)
            self.relayout()

    # -- selection ---------------------------------------------------------------------------

    def _selected_id(self) -> tuple[str, str] | None:
        """The selection by id as it was before an edit: as it was chosen, else read from the
        drawing's keys (the graph has already changed when an edit reports)."""
        if self._selected_as is not None:
            return self._selected_as
        item = self.selected_item()
        if item >= 0 and item < len(self.drawing.keys):
            kind = "node" if self.drawing.item_node[item] >= 0 else "tensor"
            return kind, self.drawing.keys[item]
        return None

    def select_node(self, node: int) -> None:
        self.selected_node, self.selected_tensor = node, -1
        self._selected_as = ("node", self.graph.nodes[node].id) if node >= 0 else None
        self.also_selected = []
        self.selection_changed.emit()

    def toggle_in_selection(self, node: int) -> None:
        """Ctrl+click: add a node to the selection (for grouping) or take it out."""
        if self.selected_node < 0:
            self.select_node(node)
            return
        if node == self.selected_node:
            return
        if node in self.also_selected:
            self.also_selected.remove(node)
        else:
            self.also_selected.append(node)
        self.selection_changed.emit()

    def selected_node_ids(self) -> list[str]:
        """Ids of the selected nodes: the main one first, then those added with Ctrl+click."""
        nodes = [self.selected_node, *self.also_selected] if self.selected_node >= 0 else []
        return [self.graph.nodes[i].id for i in nodes if 0 <= i < len(self.graph.nodes)]

    def select_tensor(self, tensor: int) -> None:
        self.selected_node, self.selected_tensor = -1, tensor
        self._selected_as = ("tensor", self.graph.tensors[tensor].id) if tensor >= 0 else None
        self.also_selected = []
        self.selection_changed.emit()

    def clear_selection(self) -> None:
        self.selected_node = self.selected_tensor = -1
        self._selected_as = None
        self.also_selected = []
        self.selection_changed.emit()

    def selected_key(self) -> str | None:
        """The id of the selected node or tensor, or None."""
        if 0 <= self.selected_node < len(self.graph.nodes):
            return self.graph.nodes[self.selected_node].id
        if 0 <= self.selected_tensor < len(self.graph.tensors):
            return self.graph.tensors[self.selected_tensor].id
        return None

    def selected_item(self) -> int:
        """The drawing item of the selection, or -1 when it has none (hidden, or nothing)."""
        d = self.drawing
        if self.selected_node >= 0:
            hits = (d.item_node == self.selected_node).nonzero()[0]
        elif self.selected_tensor >= 0:
            hits = (d.item_tensor == self.selected_tensor).nonzero()[0]
        else:
            return -1
        return int(hits[0]) if len(hits) else -1
