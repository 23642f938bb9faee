"""The layered DAG layout (Sugiyama phases), numpy only: arrays in, coordinates out."""

from xocview.layout.pipeline import LayoutResult, layout

__all__ = ["LayoutResult", "layout"]
