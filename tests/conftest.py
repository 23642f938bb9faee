"""Shared paths for the tests: the repository, and ../shared beside it (may be absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def corpus() -> Path:
    """../shared/corpus, or a skip when this checkout has no shared folder beside it."""
    folder = SHARED / "corpus"
    if not folder.is_dir():
        pytest.skip("../shared/corpus is absent (tests read the shared corpus, never a copy)")
    return folder
