"""Running a language model from the window: the Run dialog takes a prompt of token ids for
the model's input_ids, and the run heat-colours the layers by their time."""

from __future__ import annotations

import numpy as np

from tests.conftest import REPO
from tests.ui.test_profiling import run_and_wait
from tests.ui.test_viewer import open_file
from xocview.model.analyses.profile import node_times_ms
from xocview.ui.run_dialog import RunDialog

TINY = REPO / "tests" / "data" / "llm" / "tiny_llama"


def test_a_typed_prompt_runs_the_model_and_times_its_layers(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, TINY)
    doc = view.doc
    dialog = RunDialog(doc, window)
    qtbot.addWidget(dialog)
    edit = dialog.paths["input_ids"]
    assert "token ids" in edit.placeholderText()
    cache = dialog.paths["past_key_values.0.key"].placeholderText()
    assert cache.startswith("empty cache (past 0)"), cache  # a prompt runs with nothing cached
    edit.setText("5, 9, 2,")
    options = dialog.options()
    ids = options.feeds["input_ids"]
    assert ids.dtype == np.int64 and ids.tolist() == [[5, 9, 2]]
    options.repeat, options.warmup = 1, 0
    run_and_wait(qtbot, window, options)
    graph = doc.graph
    times = node_times_ms(graph, doc.hierarchy)
    layer = graph.index.node_position("model.layers.0")
    assert np.isfinite(times[layer]) and times[layer] > 0
    assert doc.colour_by == "time"
