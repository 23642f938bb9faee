"""Shared paths for the tests: the repository, and ../shared beside it (may be absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


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
