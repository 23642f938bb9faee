"""Drawing a graph without a window: PNG or SVG, for export and `xocview render`."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, QSize
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator

from xocview.errors import FormatError
from xocview.formats.atomic import write_atomic
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.heat import HeatLevels
from xocview.ui.canvas.painter import paint_drawing
from xocview.ui.canvas.style import theme

__all__ = ["MAX_AREA", "MAX_PIXELS", "render_bytes", "render_to_file"]

MARGIN = 24.0
MAX_PIXELS = 16384  # longest side of a PNG; larger drawings are scaled down to fit
# ... and its area: 64 Mpx is 256 MB of pixels. An expanded 20k-node graph at full size would
# be a 42k x 45k image (7.5 GB); scaled to fit it still shows every box and edge.
MAX_AREA = 64_000_000


_PNG_QUALITY = 80  # Qt maps it to zlib level 1 (100: none, -1: the default, 6)


def render_to_file(
    d: Drawing,
    path: Path,
    theme_name: str = "light",
    scale: float = 1.0,
    heat: HeatLevels | None = None,
) -> tuple[int, int]:
    """Write the whole drawing to ``path`` (.png or .svg); returns the image size in pixels.

    Raises FormatError for another extension or a file that cannot be written.
    """
    data, size = render_bytes(d, path.suffix, theme_name, scale, heat, str(path))
    write_atomic(path, lambda f: f.write(data))
    return size


def render_bytes(
    d: Drawing,
    suffix: str,
    theme_name: str = "light",
    scale: float = 1.0,
    heat: HeatLevels | None = None,
    name: str = "",
) -> tuple[bytes, tuple[int, int]]:
    """The whole drawing as PNG or SVG bytes (``suffix`` ``.png`` or ``.svg``) and the image
    size in pixels, with node boxes in ``heat``'s colours when given: what a file or a
    notebook shows. FormatError (naming ``name``) for another suffix or no memory.
    """
    style = theme(theme_name)
    suffix = suffix.lower()
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
            raise FormatError(name, "", f"no memory for a {pixels} image")
        image.fill(style.background)
        _paint(image, d, style, scale, heat=heat)
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        # the background is opaque: three bytes a pixel compress faster than four, and a
        # lighter zlib level halves the time for a 64-megapixel picture (files ~10% larger)
        opaque = image.convertToFormat(QImage.Format.Format_RGB888)
        if not opaque.save(buffer, "PNG", _PNG_QUALITY):  # type: ignore[call-overload]
            raise FormatError(name, "", "cannot encode the PNG image")
        buffer.close()
        return bytes(data.data()), (size.width(), size.height())
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
        _paint(gen, d, style, 1.0, background=style.background, heat=heat)
        buffer.close()
        return bytes(data.data()), (size.width(), size.height())
    raise FormatError(
        name, "", f"cannot render to '{suffix or 'no extension'}'", "a .png or .svg path"
    )


def _paint(
    device: QImage | QSvgGenerator,
    d: Drawing,
    style: object,
    scale: float,
    background: QColor | None = None,
    heat: HeatLevels | None = None,
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
        paint_drawing(painter, d, style, rect, max(scale, 0.31), heat=heat)  # type: ignore[arg-type]
    finally:
        painter.end()
