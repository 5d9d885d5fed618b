"""Fixtures of the tessera pytest suite (run by ctest with PYTHONPATH=<build>/python)."""
import numpy as np
import pytest

import tessera


@pytest.fixture
def client():
    """A fresh client of 4 CPU devices and no Vulkan, with the default (allow) guard policy."""
    return tessera.Client(cpu_devices=4, vulkan="off")


def aligned(n, dtype=np.float32, alignment=64):
    """A 1-D array of n elements whose data starts on an `alignment`-byte boundary."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros(n + alignment // itemsize, dtype=dtype)
    skip = (-raw.ctypes.data % alignment) // itemsize
    return raw[skip:skip + n]


def misaligned(n, dtype=np.float32):
    """A 1-D array of n elements whose data is NOT 64-byte aligned (so it cannot be wrapped)."""
    itemsize = np.dtype(dtype).itemsize
    raw = aligned(n + 1, dtype)
    assert itemsize < 64
    return raw[1:]
