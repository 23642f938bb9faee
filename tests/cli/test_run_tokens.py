"""``xocview run MODEL --tokens 1,2,3``: a language model runs on a prompt of token ids, and
its logits are transformers' for the same prompt."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.cli.running import run as xocview
from tests.conftest import REPO
from xocview.formats import load
from xocview.model.analyses.profile import node_times_ms

TINY = REPO / "tests" / "data" / "llm" / "tiny_llama"


def test_a_prompt_of_token_ids_runs_the_model(tmp_path: Path) -> None:
    with np.load(TINY / "logits.npz") as z:
        ids, logits = z["input_ids"], z["logits"]
    prompt = ",".join(str(int(i)) for i in ids.reshape(-1))
    done = xocview("run", TINY, "--tokens", prompt, "--repeat", "1", "--save", tmp_path / "g.json")
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("logits"))
    assert f"float32  1x{ids.size}x{logits.shape[-1]}" in line
    words = line.split()
    low, high = float(words[words.index("min") + 1]), float(words[words.index("max") + 1])
    assert abs(low - logits.min()) < 1e-4 and abs(high - logits.max()) < 1e-4
    assert "Attention" in done.stdout and "RMSNormalization" in done.stdout
    saved = load(tmp_path / "g.json")
    assert len(node_times_ms(saved)) > 20  # the heat map's numbers, per node


def test_tokens_that_are_not_ids_or_a_graph_without_a_token_input_say_so() -> None:
    done = xocview("run", TINY, "--tokens", "1,x")
    assert done.returncode != 0 and "--tokens '1,x': expected token ids" in done.stderr
    light = REPO / "tests" / "data" / "tensorflow" / "cnn_frozen.pb"
    done = xocview("run", light, "--tokens", "1,2")
    assert done.returncode != 0
    assert "--tokens: the graph has no single token input (inputs: image (float32))" in done.stderr
    assert "Traceback" not in done.stderr
