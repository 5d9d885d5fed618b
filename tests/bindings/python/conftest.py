"""Fixtures of the tessera pytest suite (run by ctest with PYTHONPATH=<build>/python)."""
import os

# JAX (the tests' reference for programs it lowers) gets 8 host CPU devices, before any test
# module imports it.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tessera  # noqa: E402


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
