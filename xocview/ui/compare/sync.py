"""Keeping the two sides of a comparison together: zoom, pan and selection.

The two layouts differ, so a pan is followed through the matched nodes: the other side is
centred on the partner of the matched box nearest this side's centre, at the same offset from
it (a node hidden in a collapsed group stands in through that group's box). A zoom is followed
at the same scale. Selecting a node selects its partner, opening the groups around it.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, QPointF

from xocview.model.analyses.diff import Finding, GraphDiff
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.compare.side import SideView
from xocview.ui.document import Document

__all__ = ["ViewSync", "items_for_nodes"]


def items_for_nodes(d: Drawing, doc: Document, nodes: np.ndarray) -> np.ndarray:
    """The drawing item showing each node: its own box, else the box of the nearest collapsed
    group around it; -1 where there is none (or the node is -1)."""
    item_of = np.full(len(doc.graph.nodes), -1, dtype=np.int64)
    shown = np.flatnonzero(d.item_node >= 0)
    item_of[d.item_node[shown]] = shown
    parent = doc.hierarchy.parent
    at = np.where(nodes >= 0, nodes, -1)
    found = np.where(at >= 0, item_of[np.maximum(at, 0)], -1)
    for _ in range(doc.hierarchy.max_depth):
        missing = (found < 0) & (at >= 0)
        if not missing.any():
            break
        at = np.where(missing, parent[np.maximum(at, 0)], at)
        found = np.where(missing & (at >= 0), item_of[np.maximum(at, 0)], found)
    return found


class ViewSync(QObject):
    """Makes ``left`` (the old graph) and ``right`` (the new) follow each other."""

    def __init__(self, left: SideView, right: SideView, diff: GraphDiff) -> None:
        super().__init__(left)
        self.views = (left, right)
        self.maps = (diff.node_map, diff.node_map_back)
        self._busy = False
        self._focus_pending = [False, False]
        for k, view in enumerate(self.views):
            view.zoomed.connect(lambda k=k: self.follow(k))
            view.horizontalScrollBar().valueChanged.connect(lambda _v, k=k: self.follow(k))
            view.verticalScrollBar().valueChanged.connect(lambda _v, k=k: self.follow(k))
            view.doc.selection_changed.connect(lambda k=k: self._select_partner(k))
            view.doc.drawing_changed.connect(lambda k=k: self._drawn(k))

    def follow(self, k: int) -> None:
        """Side ``1 - k`` takes side k's scale and shows what side k shows."""
        if self._busy:
            return
        src, dst = self.views[k], self.views[1 - k]
        self._busy = True
        try:
            if abs(dst.scale_factor - src.scale_factor) > 1e-6 * src.scale_factor:
                dst.zoom_to(src.scale_factor)
            centre = src.mapToScene(src.viewport().rect().center())
            dst.centerOn(self._partner_point(k, centre))
        finally:
            self._busy = False

    def _partner_point(self, k: int, c: QPointF) -> QPointF:
        src, dst = self.views[k], self.views[1 - k]
        d, e = src.doc.drawing, dst.doc.drawing
        nodes = d.item_node
        partner = np.where(nodes >= 0, self.maps[k][np.maximum(nodes, 0)], -1)
        there = items_for_nodes(e, dst.doc, partner)
        ok = np.flatnonzero(there >= 0)
        if not len(ok):  # nothing matched on screen: the same place in proportion
            return QPointF(
                c.x() / max(d.width, 1.0) * e.width, c.y() / max(d.height, 1.0) * e.height
            )
        near = ok[np.argmin((d.x[ok] - c.x()) ** 2 + (d.y[ok] - c.y()) ** 2)]
        j = there[near]
        return QPointF(e.x[j] + c.x() - d.x[near], e.y[j] + c.y() - d.y[near])

    def _select_partner(self, k: int) -> None:
        if self._busy:
            return
        node = self.views[k].doc.selected_node
        if node < 0:
            return
        partner = int(self.maps[k][node])
        self._busy = True
        try:
            self._show(1 - k, partner)
        finally:
            self._busy = False

    def show_finding(self, finding: Finding) -> None:
        """Select a finding's first node on each side that has one, and bring both in view."""
        self._busy = True
        try:
            for k, ids in enumerate((finding.old_nodes, finding.new_nodes)):
                index = self.views[k].doc.graph.index
                found = [index.node_position(i) for i in ids if index.has_node(i)]
                self._show(k, found[0] if found else -1)
        finally:
            self._busy = False

    def _show(self, k: int, node: int) -> None:
        """Select ``node`` on side k (-1: nothing), opening the groups around it, in view."""
        view = self.views[k]
        if node < 0:
            view.doc.clear_selection()
            return
        view.doc.reveal(node)  # relays out at once, or later in a worker for a big graph
        view.doc.select_node(node)
        if view.doc.selected_item() >= 0:
            view.focus_selection()
        else:
            self._focus_pending[k] = True

    def _drawn(self, k: int) -> None:
        if self._focus_pending[k] and self.views[k].doc.selected_item() >= 0:
            self._focus_pending[k] = False
            self.views[k].focus_selection()
