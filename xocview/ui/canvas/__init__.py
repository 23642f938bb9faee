"""The graph canvas: a drawing built from the model and the layout, painted by level of detail."""
