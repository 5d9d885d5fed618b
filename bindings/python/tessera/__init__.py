"""Tessera from Python: clients, devices, sharded arrays, the transfer guard and DLPack.

    import numpy as np
    import tessera

    client = tessera.Client(cpu_devices=4, vulkan="off")
    a = client.put(np.arange(16.0).reshape(4, 4), "mesh{x=4} P(x,None)")
    b = a.reshard(tessera.NamedSharding(tessera.Mesh(x=4), tessera.P(None, "x")))
    assert (np.asarray(b) == np.arange(16.0).reshape(4, 4)).all()

See docs/python.md.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Optional, Sequence, Union

from ._tessera import (
    Array,
    Client,
    Device,
    Executable,
    Shard,
    TransferGuardError,
    from_dlpack,
)
from . import _tessera

__all__ = [
    "Array",
    "Client",
    "Device",
    "Executable",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "Shard",
    "TransferGuardError",
    "from_dlpack",
    "transfer_guard",
    "transfer_guard_device_to_device",
    "transfer_guard_device_to_host",
    "transfer_guard_host_to_device",
]


class Mesh:
    """A named grid of device slots, as jax.sharding.Mesh: ``Mesh(x=2, y=2)`` or
    ``Mesh({"x": 2, "y": 2})``; slots are numbered row-major (the last axis fastest).

    ``devices`` (optional): the devices (or device ids) of the slots, in that order; by default
    the client's first devices.
    """

    def __init__(self, axes: Optional[dict] = None, *, devices: Optional[Sequence] = None,
                 **axis_sizes: int) -> None:
        self.axes = dict(axes or {}, **axis_sizes)
        if not self.axes:
            raise ValueError("a Mesh needs at least one axis, e.g. Mesh(x=4)")
        self.devices = list(devices) if devices is not None else None

    def __str__(self) -> str:
        return "mesh{" + ",".join(f"{k}={v}" for k, v in self.axes.items()) + "}"

    def __repr__(self) -> str:
        return f"Mesh({self.axes!r})"


class P:
    """JAX's PartitionSpec: per dimension, None (not split), a mesh axis name, or a tuple of
    names (split over several axes, major first). ``P("x", None)``, ``P(("x", "y"))``."""

    def __init__(self, *dims: Union[None, str, Sequence[str]]) -> None:
        self.dims = dims

    def __str__(self) -> str:
        def dim(d):
            if d is None:
                return "None"
            if isinstance(d, str):
                return d
            return "(" + ",".join(d) + ")"
        return "P(" + ",".join(dim(d) for d in self.dims) + ")"

    def __repr__(self) -> str:
        return str(self)


PartitionSpec = P


class NamedSharding:
    """A Mesh and a PartitionSpec, as jax.sharding.NamedSharding; accepted wherever a sharding
    is (Client.put, Array.reshard, Client.reshard). ``memory_kind``: None for each device's
    default memory."""

    def __init__(self, mesh: Mesh, spec: P, memory_kind: Optional[str] = None) -> None:
        self.mesh = mesh
        self.spec = spec
        self.memory_kind = memory_kind

    def _tessera_sharding(self):
        ids = None
        if self.mesh.devices is not None:
            ids = [d.id if isinstance(d, Device) else int(d) for d in self.mesh.devices]
        return (f"{self.mesh} {self.spec}", ids, self.memory_kind)

    def __str__(self) -> str:
        return f"{self.mesh} {self.spec}"

    def __repr__(self) -> str:
        return f"NamedSharding({self.mesh!r}, {self.spec!r})"


_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


@contextlib.contextmanager
def _scope(level: str, direction: Optional[str]) -> Iterator[None]:
    if level not in _LEVELS:
        raise ValueError(f"transfer guard level must be one of {', '.join(_LEVELS)}, "
                         f"not {level!r}")
    _tessera._push_transfer_guard(level, direction)
    try:
        yield
    finally:
        _tessera._pop_transfer_guard()


def transfer_guard(level: str):
    """``with tessera.transfer_guard("disallow"):`` — as jax.transfer_guard: every direction
    on this thread, for every client, until the block ends. Levels: allow, log, disallow
    (implicit transfers only), log_explicit, disallow_explicit (all transfers)."""
    return _scope(level, None)


def transfer_guard_host_to_device(level: str):
    """As transfer_guard, for host-to-device transfers only."""
    return _scope(level, "h2d")


def transfer_guard_device_to_device(level: str):
    """As transfer_guard, for device-to-device transfers only."""
    return _scope(level, "d2d")


def transfer_guard_device_to_host(level: str):
    """As transfer_guard, for device-to-host transfers only."""
    return _scope(level, "d2h")
