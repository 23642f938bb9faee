"""Keeping the user's place on the canvas when the drawing changes under them.

One rule for every relayout: a box that holds the user's place (the toggled group, else the
selection when it was on screen, else the box nearest the centre) stays where it was on
screen. A box is found in the new drawing by its key; a group that opened is found as its
frame, and a box that a collapse hid as the nearest drawn group around it. A reload brings
back a whole ``ViewPlace`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QPointF

from xocview.ui.canvas.drawing import Drawing

if TYPE_CHECKING:
    from xocview.ui.canvas.view import GraphView

__all__ = ["PlaceKeeper", "ViewPlace"]


@dataclass
class ViewPlace:
    """What a reload keeps of a view (see ``GraphView.place``)."""

    expanded: set[str]
    selected: str | None
    scale: float
    centre: QPointF


class PlaceKeeper:
    """The place-keeping state of one view: the drawing on screen, the group a toggle asked
    to keep, and a reload's centre waiting for its drawing."""

    def __init__(self, view: GraphView) -> None:
        self.view = view
        self.painted: Drawing | None = view.doc.drawing
        self.toggled: str | None = None  # the key of a group being opened or closed
        self.centre: QPointF | None = None  # a reload's centre, for the next drawing

    def after_relayout(self, centre: QPointF, first_view: bool) -> None:
        """The drawing changed; ``centre`` is the scene point that was at the view's centre."""
        new = self.view.doc.drawing
        if first_view:
            self.toggled = None
        elif self.centre is not None:
            self.apply_centre()
        else:
            self._keep(centre)
        self.painted = new

    def snapshot(self) -> ViewPlace:
        view, doc = self.view, self.view.doc
        centre = view.mapToScene(view.viewport().rect().center())
        return ViewPlace(set(doc.expanded), doc.selected_key(), view.scale_factor, centre)

    def restore(self, place: ViewPlace) -> None:
        """The groups ``place`` had open that still exist, its selection, zoom and centre
        (applied with the new drawing when the groups make one)."""
        view, doc = self.view, self.view.doc
        index = doc.graph.index
        if place.selected is not None and index.has_node(place.selected):
            doc.select_node(index.node_position(place.selected))
        elif place.selected is not None and index.has_tensor(place.selected):
            doc.select_tensor(index.tensor_position(place.selected))
        self.centre = place.centre
        view.zoom_to(place.scale)
        groups = {nd.id for i, nd in enumerate(doc.graph.nodes) if doc.hierarchy.is_group[i]}
        expanded = place.expanded & groups
        if expanded != doc.expanded:
            doc.expanded = expanded
            doc.relayout(keep_order=False)
        if not doc.busy:
            self.apply_centre()

    def apply_centre(self) -> None:
        if self.centre is not None:
            self.view.centerOn(self.centre)
            self.centre = None

    def _keep(self, centre: QPointF) -> None:
        old, new = self.painted, self.view.doc.drawing
        key, self.toggled = self.toggled or self._place_key(old, centre), None
        if old is None or old is new or key is None:
            return
        before, after = self.anchor(old, key), self.anchor(new, key)
        if before is not None and after is not None:
            target = centre + (after - before)
            # A relayout may move the box near an edge of the new drawing (a wrap sends it
            # to the top of a column): the scene grows to hold the place the view keeps, or
            # the scroll bars would clamp it there (the next relayout fits it again).
            view = self.view
            seen = view.mapToScene(view.viewport().rect()).boundingRect()
            seen.moveCenter(target)
            scene = view.scene()
            scene.setSceneRect(scene.sceneRect().united(seen))
            view.centerOn(target)

    def _place_key(self, d: Drawing | None, centre: QPointF) -> str | None:
        """The key of the selected box when it was on screen, else of the box nearest the
        centre."""
        if d is None or d.count == 0 or len(d.keys) != d.count:
            return None
        view = self.view
        chosen = view.doc.selected_key()
        if chosen is not None and chosen in d.keys:
            k = d.keys.index(chosen)
            seen = view.mapToScene(view.viewport().rect()).boundingRect()
            if seen.contains(QPointF(d.x[k], d.y[k])):
                return chosen
        return d.keys[int(np.argmin(np.hypot(d.x - centre.x(), d.y - centre.y())))]

    def anchor(self, d: Drawing, key: str) -> QPointF | None:
        """The top centre of ``key``'s box in ``d``, of its frame when it is open, else of the
        nearest group around it that is drawn as a box."""
        where = {k: i for i, k in enumerate(d.keys)}
        if key in where:
            k = where[key]
            return QPointF(d.x[k], d.y[k] - d.h[k] / 2)
        doc = self.view.doc
        index = doc.graph.index
        if not index.has_node(key):
            return None
        node = index.node_position(key)
        for g, outline in d.frames:
            if g == node:
                return QPointF(float(outline[:, 0].mean()), float(outline[:, 1].min()))
        for a in doc.hierarchy.ancestors(node):
            found = where.get(doc.graph.nodes[a].id)
            if found is not None:
                return QPointF(d.x[found], d.y[found] - d.h[found] / 2)
        return None
