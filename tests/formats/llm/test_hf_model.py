"""A Hugging Face model folder opened the way a user opens it (the folder, by the registry):
the architecture when it has a template, the tensor tree with the reason when it has none."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from xocview.errors import UnknownFormatError
from xocview.executor import run
from xocview.formats import load
from xocview.formats.registry import load_source
from xocview.formats.source import Source

TINY = Path(__file__).resolve().parents[2] / "data" / "llm" / "tiny_llama"


def test_the_folder_opens_as_its_forward_pass_and_runs_to_transformers_logits() -> None:
    graph, fmt = load_source(Source(TINY))
    assert fmt.NAME == "Hugging Face model"
    with np.load(TINY / "logits.npz") as z:
        ids, logits = z["input_ids"], z["logits"]
    out = run(graph, {"input_ids": ids}).outputs["logits"]
    np.testing.assert_allclose(np.asarray(out), logits, rtol=1e-3, atol=1e-4)


def test_a_model_type_without_a_template_opens_as_its_tensor_tree(tmp_path: Path) -> None:
    folder = tmp_path / "bert-tiny"
    folder.mkdir()
    shutil.copy(TINY / "model.safetensors", folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 32}))
    graph = load(folder)
    note = graph.metadata["architecture"]
    assert "bert" in note and "tensor tree" in note
    assert graph.name == "bert-tiny"
    assert any(t.kind == "weight" for t in graph.tensors) and not graph.inputs


def test_a_config_json_without_weights_is_named_for_what_it_is(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(UnknownFormatError, match=r"a Hugging Face config\.json"):
        load(tmp_path)
