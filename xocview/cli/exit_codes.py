"""The exit statuses every command shares."""

from __future__ import annotations

__all__ = ["EXIT_FINDINGS", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
