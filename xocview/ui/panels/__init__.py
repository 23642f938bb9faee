"""Dock panels: the inspector of the selection and the graph."""
