"""The loaders' collector pause: off inside, on after, the new model in the oldest generation."""

from __future__ import annotations

import gc
import weakref

from xocview.model.gc_pause import gc_paused


def _generation_of(obj: object) -> int | None:
    for generation in range(3):
        if any(o is obj for o in gc.get_objects(generation)):
            return generation
    return None


def test_collection_is_off_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves it to the outer one
    assert gc.isenabled()


def test_objects_made_inside_join_the_oldest_generation() -> None:
    with gc_paused():
        made = [[] for _ in range(1000)]
        assert _generation_of(made) == 0
    assert _generation_of(made) == 2
    assert gc.get_count()[0] < 100  # no pending collection of everything just built
    assert gc.get_freeze_count() == 0


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            made: list[object] = []
        assert not gc.isenabled()
        assert _generation_of(made) == 0
    finally:
        gc.enable()


def test_what_the_application_froze_stays_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_cycles_made_inside_are_still_collected() -> None:
    class Box:
        other: object

    with gc_paused():
        a, b = Box(), Box()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
    assert gone() is not None  # a cycle: reference counting alone cannot free it
    gc.collect()
    assert gone() is None
