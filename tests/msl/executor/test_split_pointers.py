"""A pointer whose threads point into different memories (executor/memory.SplitPtr)."""

import numpy as np
import pytest

from metal_puzzles.msl.executor.memory import Memory, Ptr, merge_pointers
from metal_puzzles.msl.lang.errors import KernelRuntimeError
from metal_puzzles.msl.lang.types import FLOAT, AddressSpace


def test_a_pointer_some_threads_never_assigned_is_named_in_the_message():
    """Threads that assigned a pointer and threads that never did ('device float* p; if (i < 2)
    p = out;'): the message names both sides (it once failed on the unassigned side's name)."""
    out = Memory.of_values("out", AddressSpace.DEVICE, FLOAT, np.zeros(4, dtype=np.float32))
    assigned = np.array([True, True, False, False])
    split = merge_pointers(assigned, Ptr(out, np.int64(0)), Ptr(None, np.int64(0)))
    with pytest.raises(KernelRuntimeError, match=r"different memories \('out' and no memory \(a pointer never assigned\)\)"):
        split.for_threads(None)
    assert "no memory" in repr(split)
