"""Read-only analyses of a graph: operator facts and FLOPs, tensor statistics, search,
summaries and measured profiles. They read the model and never change it."""
