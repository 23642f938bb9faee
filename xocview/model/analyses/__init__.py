"""Read-only analyses of a graph: operator facts and FLOPs, tensor statistics, search,
summaries, measured profiles and the comparison of two graphs (``diff``). They read the model
and never change it."""
