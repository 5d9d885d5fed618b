"""DLPack: zero-copy export of single-device CPU arrays, zero-copy (or copying) import."""
import gc

import numpy as np
import pytest

import tessera
from conftest import aligned, misaligned


def test_numpy_in_and_out_without_a_copy(client):
    x = aligned(1024)
    x[:] = np.arange(1024)
    before = client.transfer_stats()["host_to_device"]
    a = tessera.from_dlpack(x, client.devices[1])
    assert client.transfer_stats()["host_to_device"] == before  # no byte moved
    y = np.from_dlpack(a)
    assert y.ctypes.data == x.ctypes.data                    # the same memory, both ways
    assert not y.flags.writeable                              # arrays are immutable
    assert a.__dlpack_device__() == (1, 0)
    assert np.array_equal(np.asarray(a), np.arange(1024))


def test_export_shares_the_buffer_and_keeps_it_alive(client):
    x = np.arange(4096, dtype=np.int64).reshape(64, 64)
    a = client.put(x, client.devices[0])
    y1, y2 = np.from_dlpack(a), np.from_dlpack(a)
    assert y1.ctypes.data == y2.ctypes.data
    assert y1.shape == (64, 64) and y1.dtype == np.int64
    a.delete()
    del a
    gc.collect()
    assert np.array_equal(y1, x)  # the capsule's reference holds the buffer


def test_legacy_capsule(client):
    a = client.put(np.arange(8, dtype=np.float32), client.devices[0])
    capsule = a.__dlpack__()
    assert "dltensor" in repr(capsule)
    versioned = a.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)


def test_shards_export_but_sharded_arrays_do_not(client):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    a = client.put(x, "mesh{x=4} P(x,None)")
    with pytest.raises(BufferError, match="only a single-device array on a CPU device"):
        a.__dlpack__()
    shard = a.addressable_shards[2]
    assert np.array_equal(np.from_dlpack(shard.data), x[shard.index])


def test_import_copies_when_memory_cannot_be_used_in_place(client):
    x = misaligned(256)
    x[:] = np.arange(256)
    before = client.transfer_guard_counters("h2d")
    a = tessera.from_dlpack(x, client.devices[0]).block_until_ready()
    after = client.transfer_guard_counters("h2d")
    assert after["allowed_events"] == before["allowed_events"] + 1
    assert after["allowed_bytes"] == before["allowed_bytes"] + 1024
    assert client.transfer_stats()["host_to_device"]["bytes"] == 1024  # a real copy
    assert np.from_dlpack(a).ctypes.data != x.ctypes.data
    x[:] = -1  # the import took its own copy
    assert np.array_equal(np.asarray(a), np.arange(256))


def test_import_copies_negative_strides(client):
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    for view in (x[::-1], x[:, ::-2], x[::-1, ::-1]):
        before = client.transfer_stats()["host_to_device"]["bytes"]
        a = tessera.from_dlpack(view, client.devices[1]).block_until_ready()
        assert np.array_equal(np.asarray(a), view)
        assert client.transfer_stats()["host_to_device"]["bytes"] == before + view.nbytes
    x[:] = -1  # the imports took their own copies
    assert np.asarray(a)[0, 0] == 23
    with tessera.transfer_guard_host_to_device("disallow_explicit"):
        with pytest.raises(tessera.TransferGuardError, match="Disallowed host-to-device"):
            tessera.from_dlpack(np.arange(8)[::-1], client.devices[0])


def test_guard_sees_imports(client):
    with tessera.transfer_guard_host_to_device("disallow_explicit"):
        with pytest.raises(tessera.TransferGuardError, match="Disallowed host-to-device"):
            tessera.from_dlpack(misaligned(16), client.devices[0])
    assert client.transfer_guard_counters("h2d")["refused_events"] == 1


def test_import_errors(client):
    with pytest.raises(TypeError, match="no __dlpack__"):
        tessera.from_dlpack([1, 2, 3], client.devices[0])
    x = aligned(8, np.complex64)
    with pytest.raises(TypeError, match="unsupported DLPack dtype"):
        tessera.from_dlpack(x, client.devices[0])


def test_jax_cpu_arrays():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    client = tessera.Client(cpu_devices=2, vulkan="off")
    j = jnp.arange(256, dtype=jnp.float32).reshape(16, 16)
    a = tessera.from_dlpack(j, client.devices[0])
    assert np.array_equal(np.asarray(a), np.asarray(j))
    back = jax.dlpack.from_dlpack(a)
    assert np.array_equal(np.asarray(back), np.asarray(j))


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    client = tessera.Client(cpu_devices=2, vulkan="off")
    t = torch.arange(64, dtype=torch.float32)
    a = tessera.from_dlpack(t, client.devices[0])
    assert np.array_equal(np.asarray(a), t.numpy())
    assert torch.equal(torch.from_dlpack(a), t)
