"""The API's drawing calls make a QGuiApplication when none exists; in a test session the
widget tests need a QApplication, which can only be made first, so these tests share
pytest-qt's."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _application(qapp: Any) -> Any:
    return qapp
