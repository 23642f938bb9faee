"""torch's upsampling (``F.interpolate``) as ONNX Resize on the spatial axes.

``upsample_nearest*`` picks ``floor(dst / scale)``: Resize's ``asymmetric`` coordinates with
``floor`` rounding. ``upsample_bilinear2d``/``bicubic2d``/``linear1d``/``trilinear3d`` map
``align_corners`` to Resize's ``align_corners`` and otherwise use ``pytorch_half_pixel``
(a length-1 output reads the first pixel, as torch does). Sizes and scales are given for the
spatial axes only (Resize's ``axes``, opset 18), so a symbolic batch size is no obstacle.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.pytorch.lowering.emit import Emit, NotMapped

__all__ = ["upsample"]

_SCALE_ARGS = ("scales_d", "scales_h", "scales_w")


def upsample(mode: str) -> Callable[[Emit], None]:
    """The lowering of one upsampling family: ``nearest``, ``linear`` or ``cubic``."""

    def lower(e: Emit) -> None:
        x = e.x("input") if e.has("input") else e.x("self")
        n = e.rank(x) - 2
        if n < 1:
            raise NotMapped("upsampling needs an input with spatial axes")
        axes = list(range(2, 2 + n))
        attrs: dict[str, object] = {"mode": mode, "axes": axes}
        if mode == "nearest":
            attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        else:
            corners = bool(e.arg("align_corners", False))
            attrs["coordinate_transformation_mode"] = (
                "align_corners" if corners else "pytorch_half_pixel"
            )
            if mode == "cubic":
                attrs["cubic_coeff_a"] = -0.75  # torch's bicubic kernel
        sizes = e.arg("output_size", None)
        scales = e.arg("scale_factors", None)
        if not scales:
            given = [e.arg(a, None) for a in _SCALE_ARGS[3 - n :]] if n <= 3 else []
            scales = given if given and all(s is not None for s in given) else None
        if sizes:
            if len(sizes) != n:
                raise NotMapped(f"{len(sizes)} output sizes for {n} spatial axes")
            e.emit("Resize", [x, None, None, e.ints(list(sizes), "sizes")], attrs)
        elif scales:
            if len(scales) != n:
                raise NotMapped(f"{len(scales)} scale factors for {n} spatial axes")
            e.emit(
                "Resize", [x, None, e.const([float(s) for s in scales], "float32", "scales")], attrs
            )
        else:
            raise NotMapped("upsampling with neither output_size nor scale factors")

    return lower
