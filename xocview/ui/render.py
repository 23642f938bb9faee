"""Drawing a graph without a window: PNG or SVG, for export and `xocview render`."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, QSize
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator

from xocview.errors import FormatError
from xocview.formats.atomic import write_atomic
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.painter import paint_drawing
from xocview.ui.canvas.style import theme

__all__ = ["MAX_AREA", "MAX_PIXELS", "render_to_file"]

MARGIN = 24.0
MAX_PIXELS = 16384  # longest side of a PNG; larger drawings are scaled down to fit
# ... and its area: 64 Mpx is 256 MB of pixels. An expanded 20k-node graph at full size would
# be a 42k x 45k image (7.5 GB); scaled to fit it still shows every box and edge.
MAX_AREA = 64_000_000


_PNG_QUALITY = 80  # Qt maps it to zlib level 1 (100: none, -1: the default, 6)


def render_to_file(
    d: Drawing, path: Path, theme_name: str = "light", scale: float = 1.0
) -> tuple[int, int]:
    """Write the whole drawing to ``path`` (.png or .svg); returns the image size in pixels.

    Raises FormatError for another extension or a file that cannot be written.
    """
    style = theme(theme_name)
    suffix = path.suffix.lower()
    width, height = d.width + 2 * MARGIN, d.height + 2 * MARGIN
    if suffix == ".png":
        scale = min(scale, MAX_PIXELS / max(width, height, 1.0))
        scale = min(scale, (MAX_AREA / max(width * height, 1.0)) ** 0.5)
        size = QSize(max(1, round(width * scale)), max(1, round(height * scale)))
        if size.width() * size.height() > MAX_AREA:  # rounded up past the budget: round down
            size = QSize(max(1, int(width * scale)), max(1, int(height * scale)))
        image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        if image.isNull():
            pixels = f"{size.width()}x{size.height()}"
            raise FormatError(str(path), "", f"no memory for a {pixels} image")
        image.fill(style.background)
        _paint(image, d, style, scale)
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        # the background is opaque: three bytes a pixel compress faster than four, and a
        # lighter zlib level halves the time for a 64-megapixel picture (files ~10% larger)
        opaque = image.convertToFormat(QImage.Format.Format_RGB888)
        if not opaque.save(buffer, "PNG", _PNG_QUALITY):  # type: ignore[call-overload]
            raise FormatError(str(path), "", "cannot encode the PNG image")
        buffer.close()
        write_atomic(path, lambda f: f.write(data.data()))
        return size.width(), size.height()
    if suffix == ".svg":
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        gen = QSvgGenerator()
        gen.setOutputDevice(buffer)
        size = QSize(max(1, round(width)), max(1, round(height)))
        gen.setSize(size)
        gen.setViewBox(QRectF(0, 0, width, height))
        gen.setTitle("xocview graph")
        _paint(gen, d, style, 1.0, background=style.background)
        buffer.close()
        write_atomic(path, lambda f: f.write(data.data()))
        return size.width(), size.height()
    raise FormatError(
        str(path), "", f"cannot render to '{suffix or 'no extension'}'", "a .png or .svg path"
    )


def _paint(
    device: QImage | QSvgGenerator,
    d: Drawing,
    style: object,
    scale: float,
    background: QColor | None = None,
) -> None:
    painter = QPainter(device)
    try:
        if background is not None:
            painter.fillRect(QRectF(0, 0, d.width + 2 * MARGIN, d.height + 2 * MARGIN), background)
        painter.scale(scale, scale)
        painter.translate(MARGIN, MARGIN)
        rect = QRectF(-MARGIN, -MARGIN, d.width + 2 * MARGIN, d.height + 2 * MARGIN)
        # Exported images show everything a reader needs: titles at least, full detail when the
        # image is drawn at a scale where it can be read.
        paint_drawing(painter, d, style, rect, max(scale, 0.31))  # type: ignore[arg-type]
    finally:
        painter.end()
