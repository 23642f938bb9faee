"""Shared paths for the tests: the repository, and ../shared beside it (may be absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# `make test` draws the same property-test examples on every machine and every run, so that a
# random draw cannot turn main red on a fresh clone (set-up that cannot drift). To explore new
# examples, run with HYPOTHESIS_PROFILE=explore; what it finds becomes an @example or a test.
settings.register_profile("repeatable", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def corpus_path(*parts: str) -> Path:
    """A file or folder under ../shared/corpus, or a skip naming what is absent."""
    path = SHARED.joinpath("corpus", *parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (tests read ../shared/corpus beside the repo, never a copy)")
    return path


@pytest.fixture
def corpus() -> Path:
    """../shared/corpus, or a skip when this checkout has no shared folder beside it."""
    return corpus_path()
