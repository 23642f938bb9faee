"""Pausing the cyclic garbage collector while a loader (or a writer) builds hundreds of
thousands of objects.

Building a model allocates containers far faster than it frees them, so CPython's collector
runs again and again over the whole, still-growing document for nothing (measured: about 40%
of the load time of a 100k-node XOC file). Loaders create no reference cycles worth collecting.

When the pause ends, everything built meanwhile is still in the youngest generation, so the
first allocation after it would start a collection that walks the whole new model once more
(170 ms for a 50k-node ONNX model) only to find it alive and move it up a generation. The model
is long-lived by nature, so the pause ends by moving the tracked objects straight to the oldest
generation instead (``gc.freeze`` then ``gc.unfreeze``: two list splices, no walk). Full
collections still look at them as at any old object; cycles among them are still found then.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable automatic collection inside the block; nested uses are safe.

    On leaving the outermost block, objects made inside it join the oldest generation.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _promote_to_oldest()
            gc.enable()


def _promote_to_oldest() -> None:
    """Move every tracked object to the oldest generation without traversing any.

    ``freeze`` splices all generations into the permanent one and zeroes the young count;
    ``unfreeze`` splices that into the oldest generation. Objects frozen by someone else
    beforehand are left frozen.
    """
    if gc.get_freeze_count():
        return  # unfreeze would also thaw what the application froze on purpose
    gc.freeze()
    gc.unfreeze()
