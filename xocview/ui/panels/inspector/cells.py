"""The inspector's tree cells: name/value rows, nested metadata, links and in-place editors."""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from xocview.errors import shorten

__all__ = [
    "CELL_CHARS",
    "LINK_ROLE",
    "TOOLTIP_CHARS",
    "Cells",
    "cell_text",
    "parse_value",
    "tip",
]

LINK_ROLE = Qt.ItemDataRole.UserRole + 1  # ("node" | "tensor", position)
_FULL_ROLE = Qt.ItemDataRole.UserRole + 2  # the whole text of a cell shown shortened
# A cell shows at most this many characters (a file may hold a megabyte-long name); the whole
# value stays in the tooltip up to TOOLTIP_CHARS, and Copy always copies all of it.
CELL_CHARS = 200
TOOLTIP_CHARS = 2000
_PLAIN_TIP = 80  # a tooltip this short stays plain text (one line)
_WORD = 60  # a run of this many characters without a space gets a break opportunity
_LONG_WORD = re.compile(rf"\S{{{_WORD + 1},}}")
_SHORT_NAME = 16  # property names up to this long fit their column: no tooltip


class Cells:
    """Writes rows into ``tree`` and keeps the editor of each editable row (``editors``)."""

    def __init__(self, tree: QTreeWidget) -> None:
        self.tree = tree
        self.editors: dict[int, Callable[[str], str | None]] = {}

    def row(
        self,
        parent: QTreeWidget | QTreeWidgetItem,
        name: str,
        value: object = "",
        link: tuple[str, int] | None = None,
    ) -> QTreeWidgetItem:
        text = str(value)
        item = QTreeWidgetItem([shorten(name, CELL_CHARS), shorten(text, CELL_CHARS)])
        if len(name) > _SHORT_NAME:  # a tensor's or a node's name, which may be cut
            item.setToolTip(0, tip(name))
        if text:
            item.setToolTip(1, tip(text))
        for column, full in ((0, name), (1, text)):
            if len(full) > CELL_CHARS:
                item.setData(column, _FULL_ROLE, full)
        if link is not None:
            item.setData(0, LINK_ROLE, link)
            font = item.font(1)
            font.setUnderline(True)
            item.setFont(1, font)
        if isinstance(parent, QTreeWidget):
            parent.addTopLevelItem(item)
        else:
            parent.addChild(item)
        return item

    def nested(
        self,
        parent: QTreeWidget | QTreeWidgetItem,
        name: str,
        value: Any,
        edit: Callable[[str, Any], str | None] | None = None,
        key: str | None = None,
    ) -> None:
        """Nested metadata as an expandable tree; with ``edit``, leaves edit in place
        (``edit(dotted_key, value)`` runs the model edit and returns a refusal or None).
        ``key`` is the dotted path of ``parent`` (None: this row is the tree's root)."""
        path = "" if key is None else (f"{key}.{name}" if key else name)
        if isinstance(value, dict):
            node = self.row(parent, name, f"{{{len(value)}}}" if value else "{}")
            for k, v in value.items():
                self.nested(node, str(k), v, edit, path)
        elif isinstance(value, list) and value and any(isinstance(v, (dict, list)) for v in value):
            node = self.row(parent, name, f"[{len(value)}]")
            for k, v in enumerate(value):
                self.nested(node, f"[{k}]", v)
        else:
            item = self.row(
                parent,
                name,
                json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value,
            )
            if edit is not None and path:
                self.editable(item, functools.partial(_edit_leaf, edit, path))

    def editable(self, item: QTreeWidgetItem, on_edit: Callable[[str], str | None]) -> None:
        """Let the value of ``item`` be edited; ``on_edit(text)`` returns a refusal or None."""
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
        self.editors[id(item)] = on_edit


def tip(text: str) -> str:
    """A tooltip that shows ``text`` whole: a long one as rich text, which Qt wraps to the
    screen (a plain tooltip runs off it), with a zero-width break every 60 characters of a
    word, since tensor names and shapes have no spaces to wrap at; line breaks are kept."""
    if len(text) > TOOLTIP_CHARS:
        text = shorten(text, TOOLTIP_CHARS)
    if len(text) <= _PLAIN_TIP and "\n" not in text:
        return text
    broken = _LONG_WORD.sub(
        lambda m: "\u200b".join(m[0][k : k + _WORD] for k in range(0, len(m[0]), _WORD)), text
    )
    return f"<p style='white-space:pre-wrap'>{html.escape(broken, quote=False)}</p>"


def cell_text(item: QTreeWidgetItem, column: int) -> str:
    """The whole text of a cell, also when the tree shows it shortened."""
    full = item.data(column, _FULL_ROLE)
    return full if isinstance(full, str) else item.text(column)


def _edit_leaf(edit: Callable[[str, Any], str | None], path: str, text: str) -> str | None:
    return edit(path, parse_value(text))


def parse_value(text: str) -> Any:
    """A typed value from an edited cell: JSON when it parses (3, 1.5, [1, 1], "x"), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text
