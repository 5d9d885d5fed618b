"""JAX on Tessera through the PJRT plugin: unmodified JAX programs on Tessera's devices, each
checked against the same program on JAX's own CPU backend (XLA's CPU compiler), in one process
(conftest.py: JAX_PLATFORMS=tessera,cpu, 8 devices each)."""
import functools
import os
import pathlib
import sys

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from conftest import lavapipe_count, run_python

SEED = 20261203


def mesh_of(devices, shape, names):
    return Mesh(np.array(devices[: int(np.prod(shape))]).reshape(shape), names)


def bits(a):
    """The array's bytes as unsigned integers of its width: bit-exact comparison (NaNs too)."""
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize > 1 else a.view(np.uint8)


def test_jax_lists_tesseras_devices(tessera_devices):
    assert len(tessera_devices) == 8
    assert [d.id for d in tessera_devices] == list(range(8))
    for d in tessera_devices:
        assert d.platform == "tessera"
        assert d.device_kind == "cpu"
        assert d.process_index == 0
        assert "TesseraDevice(id=" in repr(d)
        assert [m.kind for m in d.addressable_memories()] == ["device"]


@pytest.mark.parametrize(
    "dtype",
    [np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32, np.float16,
     ml_dtypes.bfloat16, np.float32, np.int64, np.uint64, np.float64],
    ids=lambda d: np.dtype(d).name,
)
def test_device_put_round_trips_every_dtype_bit_exact(tessera_devices, dtype):
    rng = np.random.default_rng(SEED)
    raw = rng.integers(0, 256, size=(16, 24, np.dtype(dtype).itemsize), dtype=np.uint8)
    host = raw.view(dtype).reshape(16, 24)
    if dtype is np.bool_:
        host = raw[..., 0] % 2 == 1
    wide = np.dtype(dtype).itemsize == 8
    with jax.enable_x64(wide):
        mesh = mesh_of(tessera_devices, (4, 2), ("a", "b"))
        for spec in (P(), P("a", None), P("a", "b"), P(None, "b")):
            on_device = jax.device_put(host, NamedSharding(mesh, spec))
            assert on_device.dtype == host.dtype
            back = np.asarray(on_device)
            np.testing.assert_array_equal(bits(back), bits(host))
        single = jax.device_put(host, tessera_devices[5])
        assert single.devices() == {tessera_devices[5]}
        np.testing.assert_array_equal(bits(np.asarray(single)), bits(host))


def test_device_put_of_views_with_negative_and_odd_strides(tessera_devices):
    # numpy views JAX hands over as they are laid out: reversed (negative strides), every other
    # column, a transposed reversal, a broadcast (stride 0); on one device and sharded.
    host = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    mesh = mesh_of(tessera_devices, (8,), ("x",))
    views = [host[::-1], host[:, ::-2], host.T[::-1, 2:], np.broadcast_to(host[3], (16, 16)),
             host[::-1].astype(np.int8)[:, ::3]]
    for view in views:
        for target in (tessera_devices[2], NamedSharding(mesh, P("x", None))):
            np.testing.assert_array_equal(np.asarray(jax.device_put(view, target)), view)


def test_addressable_shards_hold_the_sharded_blocks(tessera_devices):
    host = np.arange(64 * 6, dtype=np.float32).reshape(64, 6)
    mesh = mesh_of(tessera_devices, (8,), ("x",))
    array = jax.device_put(host, NamedSharding(mesh, P("x", None)))
    shards = array.addressable_shards
    assert [s.device for s in shards] == list(tessera_devices)
    for shard in shards:
        assert shard.data.devices() == {shard.device}
        np.testing.assert_array_equal(np.asarray(shard.data), host[shard.index])


def test_device_put_between_devices_and_platforms(tessera_devices, cpu_devices):
    host = np.arange(32, dtype=np.int32)
    on_0 = jax.device_put(host, tessera_devices[0])
    on_6 = jax.device_put(on_0, tessera_devices[6])
    assert on_6.devices() == {tessera_devices[6]}
    np.testing.assert_array_equal(np.asarray(on_6), host)
    on_cpu = jax.device_put(on_6, cpu_devices[1])  # across backends: through the host
    np.testing.assert_array_equal(np.asarray(on_cpu), host)


def test_jit_of_elementwise_matches_jax_cpu(tessera_devices, cpu_devices):
    x = np.linspace(-3, 3, 8, dtype=np.float32)

    def f(x):
        return jnp.tanh(x) * 2 + jnp.exp(-x * x)

    ours = jax.jit(f)(jax.device_put(x, tessera_devices[0]))
    ref = jax.jit(f)(jax.device_put(x, cpu_devices[0]))
    assert ours.devices() == {tessera_devices[0]}
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize(
    "name,fn,low,high",
    [("asin", jnp.arcsin, -0.99, 0.99), ("acos", jnp.arccos, -0.99, 0.99),
     ("asinh", jnp.arcsinh, -4, 4), ("acosh", jnp.arccosh, 1.01, 9), ("atanh", jnp.arctanh, -0.9, 0.9),
     ("cosh", jnp.cosh, -4, 4), ("sinh", jnp.sinh, -4, 4), ("erf", jax.lax.erf, -3, 3)],
    ids=lambda v: v if isinstance(v, str) else "")
def test_chlo_ops_jax_serializes_as_composites_match_jax_cpu(tessera_devices, cpu_devices, name,
                                                            fn, low, high):
    """JAX's portable artifacts carry CHLO ops as stablehlo.composite; Tessera runs each one's
    decomposition."""
    x = np.linspace(low, high, 64, dtype=np.float32)
    ours = jax.jit(fn)(jax.device_put(x, tessera_devices[0]))
    ref = jax.jit(fn)(jax.device_put(x, cpu_devices[0]))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=2e-6, atol=2e-6)


def test_programs_without_outputs_run(tessera_devices):
    x = jax.device_put(np.float32(0.3), tessera_devices[0])
    assert jax.jit(lambda a: None)(x) is None
    assert jax.jit(lambda a: ())(x) == ()


def mlp(x, w1, w2):
    return jnp.maximum(x @ w1, 0) @ w2


def run_mlp(devices, mesh_shape, specs):
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((64, 32), dtype=np.float32)
    w1 = rng.standard_normal((32, 64), dtype=np.float32)
    w2 = rng.standard_normal((64, 16), dtype=np.float32)
    mesh = mesh_of(devices, mesh_shape, ("dp", "tp")[: len(mesh_shape)])
    shardings = [NamedSharding(mesh, s) for s in specs]
    f = jax.jit(mlp, in_shardings=tuple(shardings[:3]), out_shardings=shardings[3])
    return f(x, w1, w2)


@pytest.mark.parametrize(
    "mesh_shape,specs",
    [
        ((8,), [P("dp", None), P(), P(), P("dp", None)]),  # rows sharded
        ((2, 4), [P("dp", None), P(None, "tp"), P("tp", None), P("dp", None)]),  # Megatron
        ((2, 4), [P(), P(None, "tp"), P("tp", None), P()]),  # tensor parallel only
    ],
    ids=["rows", "megatron", "tensor_parallel"],
)
def test_sharded_jit_matches_jax_cpu(tessera_devices, cpu_devices, mesh_shape, specs):
    ours = run_mlp(tessera_devices, mesh_shape, specs)
    ref = run_mlp(cpu_devices, mesh_shape, specs)
    assert {s.device for s in ours.addressable_shards} == set(tessera_devices)
    assert ours.sharding.spec == ref.sharding.spec
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-5, atol=1e-4)
    for a, b in zip(ours.addressable_shards, ref.addressable_shards):
        assert a.index == b.index


def test_jit_without_shardings_runs_on_sharded_inputs(tessera_devices, cpu_devices):
    """JAX reads the shardings Tessera chose back from PJRT_Executable_OptimizedProgram."""
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) / 64

    def run(devices):
        mesh = mesh_of(devices, (2, 4), ("dp", "tp"))
        xs = jax.device_put(x, NamedSharding(mesh, P("dp", "tp")))
        return jax.jit(lambda a: (jnp.sin(a) * 2, a.sum(axis=1)))(xs)

    ours, ref = run(tessera_devices), run(cpu_devices)
    # The elementwise result keeps its input's sharding, as XLA's partitioner chooses; the
    # reduction's is replicated (XLA keeps its rows: a difference in placement, not in values).
    assert ours[0].sharding.spec == ref[0].sharding.spec == P("dp", "tp")
    for a, b in zip(ours, ref):
        assert {s.device for s in a.addressable_shards} == set(tessera_devices)
        for shard in a.addressable_shards:  # each shard is the block its index names
            np.testing.assert_allclose(np.asarray(shard.data), np.asarray(b)[shard.index],
                                       rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def test_shard_map_collectives_match_jax_cpu(tessera_devices, cpu_devices):
    shard_map = jax.shard_map
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) / 64

    def run(devices):
        mesh = mesh_of(devices, (2, 4), ("dp", "tp"))
        body = lambda a: jax.lax.psum(a * 2, "tp") + jax.lax.axis_index("dp")  # noqa: E731
        f = shard_map(body, mesh=mesh, in_specs=P("dp", "tp"), out_specs=P("dp", None))
        return jax.jit(f)(jax.device_put(x, NamedSharding(mesh, P("dp", "tp"))))

    ours, ref = run(tessera_devices), run(cpu_devices)
    assert ours.sharding.spec == ref.sharding.spec  # the out_specs, not gathered
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)


def ring(n, step=1):
    return [(i, (i + step) % n) for i in range(n)]


@pytest.mark.parametrize("name,body,moved_blocks", [
    # A ring over tp: every device reads its left neighbour's block.
    ("ring", lambda a: jax.lax.ppermute(a, "tp", ring(4)) * 2, 8),
    # A pipeline step over dp without wrap: the first stage receives zeros.
    ("stage", lambda a: jax.lax.ppermute(a + 1, "dp", [(0, 1)]), 4),
    # Backwards by two over tp without wrap, and a scalar backwards around the ring.
    ("back", lambda a: jax.lax.ppermute(a, "tp", [(2, 0), (3, 1)]), 4),
    ("scalar", lambda a: jax.lax.ppermute(a.sum(), "tp", ring(4, -1)) + a, None),
    # Pairwise swaps over tp: one shift per offset (+1 and -1), each moving 6 of the 8 blocks.
    ("swaps", lambda a: jax.lax.ppermute(a, "tp", [(0, 1), (1, 0), (2, 3), (3, 2)]), 12),
    # A ring over both axes: offsets (0, +1) for six pairs, (+1, -3) and (-1, -3) for the pairs
    # that change rows, each composed of shifts along one axis: 6 + (2 + 4) + (2 + 4) blocks.
    ("flat_ring", lambda a: jax.lax.ppermute(a, ("dp", "tp"), ring(8)), 18),
    ("tp_major_ring", lambda a: jax.lax.ppermute(a, ("tp", "dp"), ring(8, 3)), None),
    # A partial map across both axes, one device sending to itself.
    ("scattered", lambda a: jax.lax.ppermute(a, ("dp", "tp"), [(0, 7), (5, 2), (3, 3), (6, 0)]),
     None),
])
def test_ppermute_matches_jax_cpu(tessera_devices, cpu_devices, name, body,
                                             moved_blocks):
    from tessera import jax_plugin

    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) / 16

    def run(devices):
        mesh = mesh_of(devices, (2, 4), ("dp", "tp"))
        f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("dp", "tp"),
                                  out_specs=P("dp", "tp")))
        a = jax.device_put(x, NamedSharding(mesh, P("dp", "tp")))
        f(a).block_until_ready()  # compiled and run once
        before = jax_plugin.transfer_stats()["device_to_device"][0]
        out = np.asarray(f(a))
        return out, jax_plugin.transfer_stats()["device_to_device"][0] - before

    (ours, moved), (ref, _) = run(tessera_devices), run(cpu_devices)
    np.testing.assert_allclose(ours, ref, rtol=1e-6)
    if moved_blocks is not None:  # each device with a source reads one 8x8 f32 block from it
        assert moved == moved_blocks * 8 * 8 * 4


def test_ppermute_gradients_match_jax_cpu(tessera_devices, cpu_devices):
    x = np.linspace(-1, 1, 64, dtype=np.float32)

    def grad(devices):
        mesh = mesh_of(devices, (8,), ("x",))
        f = jax.shard_map(lambda w: jax.lax.ppermute(w * w, "x", ring(8)), mesh=mesh,
                          in_specs=P("x"), out_specs=P("x"))
        loss = lambda w: jnp.sum(f(w) * jnp.arange(64, dtype=jnp.float32))  # noqa: E731
        return np.asarray(jax.jit(jax.grad(loss))(jax.device_put(x, NamedSharding(mesh, P("x")))))

    np.testing.assert_allclose(grad(tessera_devices), grad(cpu_devices), rtol=1e-6)


@pytest.mark.parametrize("order,spec", [
    ("backwards", P("x")), ("backwards", P(None, "x")), ("interleaved", P("x")),
    ("interleaved", P()),
])
def test_device_put_between_meshes_of_the_devices_in_another_order(tessera_devices, order, spec):
    # JAX moves an array onto a mesh of the same devices in another order with a program whose
    # argument's mesh lists its devices out of order (sdy.mesh device_ids).
    from tessera import jax_plugin

    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    a = jax.device_put(x, NamedSharding(Mesh(np.array(tessera_devices), ("x",)), P("x")))
    devices = (tessera_devices[::-1] if order == "backwards"
               else list(np.array(tessera_devices).reshape(2, 4).T.flat))
    target = NamedSharding(Mesh(np.array(devices), ("x",)), spec)
    before = jax_plugin.transfer_stats()["device_to_device"][0]
    b = jax.device_put(a, target)
    assert b.sharding == target
    np.testing.assert_array_equal(bits(b), bits(x))
    for shard in b.addressable_shards:
        np.testing.assert_array_equal(bits(shard.data), bits(x[shard.index]))
    if order == "backwards" and spec == P("x"):  # each row to the device mirroring its own
        assert jax_plugin.transfer_stats()["device_to_device"][0] - before == 8 * 32


def test_jit_of_arrays_on_meshes_of_other_axes_over_the_same_devices(tessera_devices,
                                                                      cpu_devices):
    # u on a 2x4 mesh, v on the flat mesh of the same 8 devices, the result on the flat mesh: the
    # program runs on the 2x4 mesh (z is (x, y) there); rows-sharded both, nothing moves.
    from tessera import jax_plugin

    a = np.arange(64, dtype=np.float32).reshape(8, 8)

    def run(devices):
        m24 = mesh_of(devices, (2, 4), ("x", "y"))
        m8 = mesh_of(devices, (8,), ("z",))
        f = jax.jit(lambda u, v: u * 2 + v, out_shardings=NamedSharding(m8, P("z")))
        u = jax.device_put(a, NamedSharding(m24, P(("x", "y"))))
        v = jax.device_put(a + 1, NamedSharding(m8, P("z")))
        f(u, v).block_until_ready()
        before = jax_plugin.transfer_stats()["device_to_device"][0]
        out = f(u, v)
        return out, jax_plugin.transfer_stats()["device_to_device"][0] - before

    (ours, moved), (ref, _) = run(tessera_devices), run(cpu_devices)
    assert ours.sharding.spec == ref.sharding.spec
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
    assert moved == 0


def test_donate_argnums_is_declined_and_keeps_the_input(tessera_devices):
    x = jax.device_put(np.ones(8, np.float32), tessera_devices[0])
    with pytest.warns(UserWarning, match="Donation is not implemented for"):
        y = jax.jit(lambda a: a * 3, donate_argnums=0)(x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), np.ones(8, np.float32))
    np.testing.assert_array_equal(np.asarray(y), np.full(8, 3, np.float32))


def load_example():
    root = os.environ.get("TESSERA_SOURCE_ROOT", str(pathlib.Path(__file__).parents[3]))
    sys.path.insert(0, os.path.join(root, "examples"))
    try:
        import jax_mlp_train
    finally:
        sys.path.pop(0)
    return jax_mlp_train


def test_fifty_training_steps_follow_jax_cpus_loss_curve(tessera_devices, cpu_devices):
    example = load_example()
    ours = example.train(tessera_devices[:8], (2, 4), steps=50, verbose=False)
    ref = example.train(cpu_devices[:8], (2, 4), steps=50, verbose=False)
    assert ours[-1] < ours[0] * 0.5  # it learns
    np.testing.assert_allclose(ours, ref, rtol=1e-4)


def test_an_unsupported_op_raises_naming_the_op_and_the_python_line(tessera_devices):
    x = jax.device_put(np.arange(8, dtype=np.float32)[::-1].copy(), tessera_devices[0])
    line = sys._getframe().f_lineno + 2
    with pytest.raises(Exception, match="stablehlo.rng_bit_generator") as raised:
        jax.jit(lambda a: a + jax.lax.rng_bit_generator(a.view(jnp.uint32)[:4], (8,))[1].view(
            jnp.float32))(x)
    assert f"test_jax_plugin.py:{line}" in str(raised.value)
    np.testing.assert_array_equal(np.asarray(x), np.arange(8, dtype=np.float32)[::-1])


def test_transfer_stats_count_a_programs_collectives(tessera_devices):
    from tessera import jax_plugin

    mesh = mesh_of(tessera_devices, (8,), ("x",))
    cols, rows = NamedSharding(mesh, P(None, "x")), NamedSharding(mesh, P("x", None))
    x = jax.device_put(np.ones((16, 64), np.float32), cols)
    w = jax.device_put(np.ones((64, 4), np.float32), rows)
    f = jax.jit(lambda x, w: x @ w, in_shardings=(cols, rows), out_shardings=NamedSharding(mesh, P()))
    f(x, w).block_until_ready()  # compiled and run once
    before = jax_plugin.transfer_stats()
    y = f(x, w)
    y.block_until_ready()
    after = jax_plugin.transfer_stats()
    assert after["device_to_device"][0] > before["device_to_device"][0]  # the all-reduce
    assert after["host_to_device"] == before["host_to_device"]
    np.testing.assert_array_equal(np.asarray(y), np.full((16, 4), 64, np.float32))


def test_jaxs_own_transfer_guard_works_above_the_plugin(tessera_devices):
    x = jax.device_put(np.ones(4, np.float32), tessera_devices[0])
    f = jax.jit(lambda a, b: a + b)
    with jax.transfer_guard("disallow"):
        assert f(x, x).shape == (4,)  # no transfer
        with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
            f(x, np.ones(4, np.float32))  # an implicit one, refused by JAX before Tessera


GUARD_SCRIPT = """
    import numpy as np, jax, jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    devices = jax.devices("tessera")
    mesh = Mesh(np.array(devices), ("x",))
    cols, rows = NamedSharding(mesh, P(None, "x")), NamedSharding(mesh, P("x", None))
    x = jax.device_put(np.ones((16, 64), np.float32), cols)
    w = jax.device_put(np.ones((64, 4), np.float32), rows)
    f = jax.jit(lambda x, w: x @ w, in_shardings=(cols, rows), out_shardings=NamedSharding(mesh, P()))
    try:
        f(x, w)
        print("RAN")
    except Exception as e:
        print("REFUSED", type(e).__name__, e)
    print("INTACT", float(np.asarray(x).sum()), float(np.asarray(w).sum()))
    g = jax.jit(lambda a: a + 1, in_shardings=cols, out_shardings=cols)
    print("ELEMENTWISE", float(np.asarray(g(x)).sum()))
"""


def test_the_guard_refuses_a_programs_collective_before_it_runs():
    code, out = run_python(GUARD_SCRIPT, TESSERA_TRANSFER_GUARD="d2d=disallow_explicit",
                           JAX_PLATFORMS="tessera")
    assert code == 0, out
    assert "REFUSED" in out and "RAN" not in out.split("REFUSED")[0], out
    assert "Disallowed device-to-device transfer" in out, out
    assert "Execute of 'jit__lambda' (communication: all_reduce)" in out, out  # program, collective
    assert "INTACT 1024.0 256.0" in out, out
    assert "ELEMENTWISE 2048.0" in out, out  # a program without communication still runs


def test_the_guard_refuses_a_ppermute_naming_it():
    script = """
        import numpy as np, jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices("tessera")), ("x",))
        ring = [(i, (i + 1) % 8) for i in range(8)]
        f = jax.jit(jax.shard_map(lambda a: jax.lax.ppermute(a, "x", ring), mesh=mesh,
                                  in_specs=P("x"), out_specs=P("x")))
        x = jax.device_put(np.arange(16, dtype=np.float32), NamedSharding(mesh, P("x")))
        try:
            f(x).block_until_ready()
            print("RAN")
        except Exception as e:
            print("REFUSED", e)
        print("INTACT", float(np.asarray(x).sum()))
    """
    code, out = run_python(script, TESSERA_TRANSFER_GUARD="d2d=disallow_explicit",
                           JAX_PLATFORMS="tessera")
    assert code == 0, out
    assert "REFUSED" in out and "RAN" not in out, out
    assert "(communication: collective_permute)" in out, out
    assert "INTACT 120.0" in out, out


def test_the_guard_refuses_device_put_when_host_to_device_is_disallowed():
    script = """
        import numpy as np, jax
        try:
            jax.device_put(np.ones(4, np.float32), jax.devices("tessera")[0]).block_until_ready()
            print("PUT")
        except Exception as e:
            print("REFUSED", e)
    """
    code, out = run_python(script, TESSERA_TRANSFER_GUARD="h2d=disallow_explicit",
                           JAX_PLATFORMS="tessera")
    assert code == 0, out
    assert "REFUSED" in out and "host-to-device" in out, out


@pytest.mark.parametrize(
    "env,message",
    [
        ({"TESSERA_CPU_DEVICES": "eight"}, "TESSERA_CPU_DEVICES must be a count"),
        ({"TESSERA_VULKAN": "sometimes"}, "TESSERA_VULKAN must be off, if_available or required"),
        ({"TESSERA_TRANSFER_GUARD": "d2d=never"}, "never"),
    ],
    ids=["cpu_devices", "vulkan", "guard"],
)
def test_bad_options_fail_backend_creation_with_their_name(env, message):
    script = """
        import jax
        try:
            jax.devices("tessera")
            print("CREATED")
        except Exception as e:
            print("FAILED", e)
    """
    code, out = run_python(script, JAX_PLATFORMS="tessera", **env)
    assert code == 0, out
    assert "FAILED" in out and message in out, out


VULKAN_SCRIPT = """
    import numpy as np, jax, jax.numpy as jnp, sys
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    sys.path.insert(0, "{examples}")
    import jax_mlp_train
    devices = jax.devices("tessera")
    print("KINDS", sorted({{d.device_kind for d in devices}}))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 32), dtype=np.float32)
    w = rng.standard_normal((32, 16), dtype=np.float32)
    mesh = Mesh(np.array(devices), ("x",))
    rows, rep = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())
    y = jax.jit(lambda x, w: jnp.maximum(x @ w, 0), in_shardings=(rows, rep), out_shardings=rows)(x, w)
    print("MLP", float(np.abs(np.asarray(y) - np.maximum(x @ w, 0)).max()))
    images = rng.standard_normal((4, 9, 8, 3), dtype=np.float32)
    kernel = rng.standard_normal((3, 3, 3, 5), dtype=np.float32)
    def cnn(a, k):
        h = jax.lax.conv_general_dilated(a, k, (2, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1),
                                             (1, 1, 1, 1), "VALID") ** 2)
    step = jax.jit(jax.value_and_grad(cnn, argnums=(0, 1)))
    batch = NamedSharding(mesh, P("x"))
    got = step(jax.device_put(images, batch), jax.device_put(kernel, rep))
    want = step(jax.device_put(images, jax.devices("cpu")[0]),
                jax.device_put(kernel, jax.devices("cpu")[0]))
    print("CNN", max(float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())
                     for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want))))
    ours = jax_mlp_train.train(devices, ({dp}, {tp}), steps=10, verbose=False)
    ref = jax_mlp_train.train(jax.devices("cpu")[:{dp} * {tp}], ({dp}, {tp}), steps=10, verbose=False)
    print("LOSS", max(abs(a - b) / abs(b) for a, b in zip(ours, ref)))
"""


@pytest.mark.parametrize("cpu_devices_count,dp,tp", [(0, 1, 2), (2, 2, 2)],
                         ids=["lavapipe", "cpu_plus_lavapipe"])
def test_jax_runs_on_vulkan_devices(cpu_devices_count, dp, tp):
    if lavapipe_count() < 2:
        pytest.skip("needs two lavapipe ICD files in VK_DRIVER_FILES (the test build makes them)")
    examples = os.path.join(os.environ.get("TESSERA_SOURCE_ROOT",
                                           str(pathlib.Path(__file__).parents[3])), "examples")
    code, out = run_python(VULKAN_SCRIPT.format(examples=examples, dp=dp, tp=tp),
                           TESSERA_CPU_DEVICES=cpu_devices_count, TESSERA_VULKAN="required",
                           JAX_PLATFORMS="tessera,cpu")
    assert code == 0, out
    kinds = next(line for line in out.splitlines() if line.startswith("KINDS"))
    assert ("cpu" in kinds) == (cpu_devices_count > 0), out
    mlp_error = float(next(l for l in out.splitlines() if l.startswith("MLP")).split()[1])
    assert mlp_error < 1e-4, out
    cnn_error = float(next(l for l in out.splitlines() if l.startswith("CNN")).split()[1])
    assert cnn_error < 1e-5, out
    loss_error = float(next(l for l in out.splitlines() if l.startswith("LOSS")).split()[1])
    assert loss_error < 1e-4, out


REFERENCE_SCRIPT = """
    import importlib.util, os, sys
    import numpy as np
    spec = importlib.util.find_spec("xla_plugins.xla_cpu_pjrt")
    from jax._src import xla_bridge
    xla_bridge.register_plugin("xla_reference", options={{"cpu_device_count": 8}},
                               library_path=os.path.join(os.path.dirname(spec.origin),
                                                         "xla_cpu_pjrt.so"))
    import jax
    sys.path.insert(0, "{examples}")
    import jax_mlp_train
    ours = jax_mlp_train.train(jax.devices("tessera")[:8], (2, 4), steps=20, verbose=False)
    ref = jax_mlp_train.train(jax.devices("xla_reference")[:8], (2, 4), steps=20, verbose=False)
    print("PLATFORMS", jax.devices("tessera")[0].platform, jax.devices("xla_reference")[0].platform)
    print("LOSS", max(abs(a - b) / abs(b) for a, b in zip(ours, ref)))
"""


def test_the_xla_cpu_reference_plugin_computes_the_same_training_run():
    """The xla-cpu-pjrt wheel's plugin (XLA's CPU compiler behind the same C API) in the same
    process: the same 20 steps through both plugins."""
    import importlib.util

    if importlib.util.find_spec("xla_plugins.xla_cpu_pjrt") is None:
        pytest.skip("the xla-cpu-pjrt wheel is not installed (`make deps`)")
    examples = os.path.join(os.environ.get("TESSERA_SOURCE_ROOT",
                                           str(pathlib.Path(__file__).parents[3])), "examples")
    code, out = run_python(REFERENCE_SCRIPT.format(examples=examples),
                           JAX_PLATFORMS="tessera,xla_reference")
    assert code == 0, out
    assert "PLATFORMS tessera cpu" in out, out
    loss_error = float(next(l for l in out.splitlines() if l.startswith("LOSS")).split()[1])
    assert loss_error < 1e-4, out


def test_the_plugin_loads_under_every_jax_this_machine_has():
    """jax 0.10.2 is the build venv's; a jax 0.12 needs Python 3.12, which this machine lacks
    unless TESSERA_JAX012_PYTHON names an interpreter that has it."""
    other = os.environ.get("TESSERA_JAX012_PYTHON")
    if not other:
        pytest.skip("no second JAX: set TESSERA_JAX012_PYTHON to a Python with jax 0.12")
    import subprocess

    script = ("import jax, numpy as np; d = jax.devices('tessera'); "
              "print(len(d), np.asarray(jax.jit(lambda a: a + 1)(np.ones(4, np.float32))).sum())")
    done = subprocess.run([other, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, JAX_PLATFORMS="tessera"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "8 8.0" in done.stdout


def test_indexing_a_sharded_array_matches_numpy(tessera_devices):
    # jax.Array.__getitem__ with static slices compiles a gather whose index vector is its
    # indices' dimension 0 (StableHLO prints no index_vector_dim then).
    mesh = mesh_of(tessera_devices, (4, 2), ("x", "y"))
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    a = jax.device_put(x, NamedSharding(mesh, P("x", "y")))
    for index in ((slice(2, 4), slice(0, 1)), (3,), (slice(None), 1), (slice(1, 7, 2),)):
        np.testing.assert_array_equal(np.asarray(a[index]), x[index])


def test_checkpoint_cond_and_barriers_match_jax_cpu(tessera_devices, cpu_devices):
    # jax.checkpoint (an optimization_barrier of several values), lax.cond on a scalar in a
    # program without shardings (a linalg op of no loops), and its gradient with allow_int.
    def on(devices, f, *args):
        return jax.jit(f)(*[jax.device_put(a, devices[0]) for a in args])

    block = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)) * 2)
    cases = [
        (jax.grad(lambda x: block(x).sum()), (np.linspace(-1, 1, 8, dtype=np.float32),)),
        (lambda i, x: jax.lax.switch(i, [lambda v: v * 3.0, lambda v: -v, jnp.exp], x),
         (np.int32(2), np.float32(0.5))),
        (lambda p: jax.value_and_grad(lambda q: jax.lax.cond(q, lambda _: 1., lambda _: 2., 1.),
                                      allow_int=True)(p)[0], (np.bool_(True),)),
        (lambda a, b: jax.lax.optimization_barrier((a * 2, b + 1)),
         (np.ones(3, np.float32), np.arange(2, dtype=np.int32))),
    ]
    for f, args in cases:
        ours = jax.tree.map(np.asarray, on(tessera_devices, f, *args))
        ref = jax.tree.map(np.asarray, on(cpu_devices, f, *args))
        jax.tree.map(lambda o, r: np.testing.assert_allclose(o, r, rtol=1e-6), ours, ref)


def test_reduce_precision_matches_jax_cpu_bit_for_bit(tessera_devices, cpu_devices):
    # lax.reduce_precision (rounding to nearest even, overflow to infinity, underflow and the
    # narrower format's subnormals to zero, NaNs kept) on f32 and, widened inside, bf16 and f16.
    with np.errstate(over="ignore"):
        values = np.array([0., -0., 1., -1.5, np.pi, 1e-3, 65504., 65520., 7e4, 6e-8, 3e-8,
                           1e-40, -1e-40, 3.4e38, np.inf, -np.inf, np.nan, 1 / 3, 1.0000001,
                           255.9], np.float32)
        inputs = [values, values.astype(jnp.bfloat16), values.astype(jnp.float16)]
    for x in inputs:
        for exponent, mantissa in ((8, 7), (5, 10), (8, 23), (4, 3), (5, 2), (2, 1), (8, 0),
                                   (1, 0)):
            f = jax.jit(lambda v: jax.lax.reduce_precision(v, exponent_bits=exponent,
                                                           mantissa_bits=mantissa))
            ours = f(jax.device_put(x, tessera_devices[0]))
            ref = f(jax.device_put(x, cpu_devices[0]))
            np.testing.assert_array_equal(bits(ours), bits(ref), err_msg=f"{x.dtype} "
                                          f"{exponent} {mantissa}")


def test_pad_with_a_computed_value_matches_jax_cpu(tessera_devices, cpu_devices):
    # jnp.pad's constant_values from an argument, edge padding negative too, interior padding
    # (holes of the value too), on one device and rows-sharded over 8.
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    programs = [jax.jit(lambda a, v: jnp.pad(a, ((1, 2), (0, 3)), constant_values=v)),
                jax.jit(lambda a, v: jax.lax.pad(a, v, ((2, -1, 0), (1, 1, 0)))),
                jax.jit(lambda a, v: jax.lax.pad(a, v, ((0, 0, 0), (1, -2, 2)))),
                jax.jit(lambda a, v: jax.lax.pad(a, v, ((0, 0, 1), (0, 0, 1))))]

    def run(devices, f, spec):
        mesh = mesh_of(devices, (len(devices),), ("x",))
        return np.asarray(f(jax.device_put(x, NamedSharding(mesh, spec)), np.float32(-7.5)))

    for f in programs:
        for count, spec in ((1, P()), (8, P("x"))):
            np.testing.assert_array_equal(run(tessera_devices[:count], f, spec),
                                          run(cpu_devices[:count], f, spec))


def test_rejection_sampling_loops_end_and_match_jax_cpu(tessera_devices, cpu_devices):
    # jax.random.gamma / beta: a vmapped while loop (rejection sampling) whose condition is an
    # any() of 16 or more booleans, nested loops, the key an argument; each program run three
    # times (a loop must not leave state behind), on one device and in a shard_map over 8.
    def on(devices, f, *args):
        return np.asarray(jax.jit(f)(*[jax.device_put(a, devices[0]) for a in args]))

    key = jax.random.key(SEED)
    for n in (16, 64):
        alpha = np.linspace(0.2, 3.0, n, dtype=np.float32).reshape(n, 1)
        gamma = lambda k, a: jax.random.gamma(k, a)  # noqa: E731
        ref = on(cpu_devices, gamma, key, alpha)
        for _ in range(3):
            np.testing.assert_allclose(on(tessera_devices, gamma, key, alpha), ref, rtol=1e-5)
    beta = jax.random.beta(key, np.float32(2.0), np.float32(3.0), (16,))
    assert np.all((np.asarray(beta) > 0) & (np.asarray(beta) < 1))

    def sharded_beta(devices):
        mesh = mesh_of(devices, (8,), ("dp",))
        f = jax.shard_map(
            lambda k, a: jax.random.beta(jax.lax.pcast(k, ("dp",), to="varying"), a, a + 1),
            mesh=mesh, in_specs=(P(), P("dp")), out_specs=P("dp"))
        k = jax.device_put(key, NamedSharding(mesh, P()))
        return np.asarray(jax.jit(f)(k, jax.device_put(np.ones((64, 1), np.float32),
                                                        NamedSharding(mesh, P("dp")))))

    np.testing.assert_allclose(sharded_beta(tessera_devices), sharded_beta(cpu_devices), rtol=1e-5)


def test_shard_map_over_some_axes_matches_jax_cpu(tessera_devices, cpu_devices):
    # shard_map(axis_names={"x"}) on a 2x4 mesh, y left to the partitioner: a psum over x, a
    # matmul of the local block, axis_index("x") (a shard_map over y inside, as JAX lowers it).
    def run(devices):
        mesh = mesh_of(devices, (2, 4), ("x", "y"))
        a = jax.device_put(np.arange(128, dtype=np.float32).reshape(8, 16) / 64,
                           NamedSharding(mesh, P("x", "y")))

        def partial(body, out_specs):
            return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=out_specs,
                                         axis_names={"x"}))

        return [np.asarray(partial(lambda b: jax.lax.psum(b * 2 + jnp.sin(b), "x"), P())(a)),
                np.asarray(partial(lambda b: b @ b.T, P("x"))(a)),
                np.asarray(partial(lambda b: jax.lax.axis_index("x") + b, P("x"))(a))]

    for ours, ref in zip(run(tessera_devices), run(cpu_devices)):
        np.testing.assert_allclose(ours, ref, rtol=1e-5)


def test_collectives_of_one_device_groups_outside_a_shard_map_match_jax_cpu(tessera_devices,
                                                                             cpu_devices):
    # The gradient of a rematerialized shard_map over a mesh of size-1 axes: JAX emits its psum
    # outside any shard_map, over groups of one device each (each device keeps its own value).
    def grad(devices):
        mesh = mesh_of(devices, (1, 1), ("i", "j"))

        @functools.partial(jax.remat, policy=lambda *_, **__: True)
        @functools.partial(jax.shard_map, mesh=mesh, in_specs=(P("j"), P("i")),
                           out_specs=P("i", "j"))
        def f(x, y):
            return jnp.dot(x, y)

        x = np.arange(6.0, dtype=np.float32)
        args = [jax.device_put(a, devices[0]) for a in (x.reshape(3, 2), x.reshape(3, 2, 1))]
        return np.asarray(jax.grad(lambda x, y: f(x, y).sum())(*args))

    np.testing.assert_array_equal(grad(tessera_devices), grad(cpu_devices))


def test_sorting_matches_jax_cpu_bit_for_bit(tessera_devices, cpu_devices):
    # jnp.sort, argsort, descending, lax.top_k and jnp.median (sorts JAX lowers as stablehlo.sort
    # with a total-order comparator): NaNs, -0 / +0 ties, repeated values, length 37.
    x = np.random.default_rng(SEED).standard_normal(37).astype(np.float32)
    x[[3, 9]] = np.nan
    x[5], x[6] = -0.0, 0.0
    x[7] = x[8] = 1.5
    x[10] = -np.inf
    programs = [jnp.sort, jnp.argsort, lambda v: jnp.sort(v, descending=True),
                lambda v: jax.lax.top_k(v, 5), lambda v: jnp.median(v[:20])]
    for f in programs:
        ours, ref = (jax.tree.leaves(jax.jit(f)(jax.device_put(x, d[0])))
                     for d in (tessera_devices, cpu_devices))
        for o, r in zip(ours, ref):
            np.testing.assert_array_equal(bits(o), bits(r))


def test_compiler_options_are_checked_by_name(tessera_devices):
    # jax.jit(f, compiler_options=...): XLA's debug options (xla_...) are taken and ignored; any
    # other name raises, naming it, as XLA's own backends do.
    x = jax.device_put(np.float32(2.0), tessera_devices[0])
    f = lambda v: jnp.sqrt(v ** 2) + 1.0  # noqa: E731
    assert float(jax.jit(f, compiler_options={"xla_embed_ir_in_executable": True})(x)) == 3.0
    with pytest.raises(jax.errors.JaxRuntimeError, match="No such compile option: 'invalid_key'"):
        jax.jit(f, compiler_options={"invalid_key": "invalid_value"})(x)


def test_results_of_no_elements(tessera_devices):
    # A slice past the end (x[:, 100:116]) has no elements: returned from a jit and from a
    # shard_map over 2 devices, as an array of shape (32, 0).
    mesh = mesh_of(tessera_devices, (2,), ("x",))
    arr = jax.device_put(np.ones((32, 32), np.float32), NamedSharding(mesh, P(None, "x")))
    f = lambda x: x[:, 100:116]  # noqa: E731
    for g in (jax.jit(f), jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P(None, "x"),
                                                out_specs=P(None, "x")))):
        out = g(arr)
        assert out.shape == (32, 0)
        assert np.asarray(out).shape == (32, 0)


def test_a_collective_inside_a_loop_raises_naming_it(tessera_devices):
    # A psum inside lax.map inside a shard_map: the runtime runs collectives between kernels, so
    # this is refused by name (never an internal error), and the inputs stay intact.
    mesh = mesh_of(tessera_devices, (2,), ("x",))
    x = jax.device_put(np.ones((8, 3), np.float32), NamedSharding(mesh, P("x")))
    body = lambda b: jax.lax.map(lambda row: jax.lax.psum(row, "x"), b)  # noqa: E731
    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    with pytest.raises(jax.errors.JaxRuntimeError,
                       match="UNIMPLEMENTED: 'shard.all_reduce' .* is inside 'scf.while'.*"
                             "a collective inside a loop"):
        f(x)
    np.testing.assert_array_equal(np.asarray(x), np.ones((8, 3), np.float32))


def test_bitcast_between_widths_matches_jax_cpu_bit_for_bit(tessera_devices, cpu_devices):
    # lax.bitcast_convert_type to a narrower type adds a last dimension (lowest bits first) and
    # back drops it: f32 <-> u8 (NaN, -0, a subnormal), i32 <-> i16, on one device and with the
    # rows sharded over 8.
    x = np.array([1.5, -0.0, np.nan, 3e38, -1e-40, 7.0, -2.5, 1e-3], np.float32)
    i = np.array([[1, -2], [70000, -70000]] * 4, np.int32)
    cases = [
        (lambda v: jax.lax.bitcast_convert_type(v, jnp.uint8), x),
        (lambda v: jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(v, jnp.uint8) + 1,
                                                jnp.float32), x),
        (lambda v: jax.lax.bitcast_convert_type(v, jnp.int16), i),
        (lambda v: jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(v, jnp.uint16) + 3,
                                                jnp.int32), i),
    ]

    def run(devices, f, a, count):
        mesh = mesh_of(devices, (count,), ("x",))
        return np.asarray(jax.jit(f)(jax.device_put(a, NamedSharding(mesh, P("x")))))

    for f, a in cases:
        for count in (1, 8):
            np.testing.assert_array_equal(bits(run(tessera_devices, f, a, count)),
                                          bits(run(cpu_devices, f, a, count)))


def test_bitcasts_of_bf16_and_f16_match_jax_cpu_bit_for_bit(tessera_devices, cpu_devices):
    # bf16 and f16 are computed in f32; a bitcast goes through their 16 bits, exactly: NaNs with
    # payloads, infinities, subnormals, -0; same width and between widths, on one device and with
    # the rows sharded over 8.
    h = np.array([0, 1, 0x8000, 0x7F80, 0xFF80, 0x7FC1, 0x3F80, 0x807F,
                  0x7C00, 0x7E01, 0x03FF, 0xFBFF, 0x1234, 0xABCD, 0x0400, 0xC000], np.uint16)
    x = np.array([1.5, -0.0, np.inf, 3e-40, 1e38, -2.5, 7.0, np.nan], np.float32)
    bitcast = jax.lax.bitcast_convert_type
    cases = [(lambda v, t=t: bitcast(v, t), h) for t in (jnp.bfloat16, jnp.float16)]
    cases += [(lambda v, t=t: bitcast(bitcast(v, t), jnp.int16), h)
              for t in (jnp.bfloat16, jnp.float16)]
    cases += [(lambda v, t=t: bitcast(v, t), x) for t in (jnp.bfloat16, jnp.float16)]
    cases += [(lambda v, t=t: bitcast(bitcast(v.reshape(8, 2), t), jnp.float32), h)
              for t in (jnp.bfloat16, jnp.float16)]
    cases += [(lambda v, t=t: bitcast(v.astype(t), jnp.uint8), x)
              for t in (jnp.bfloat16, jnp.float16)]

    def run(devices, f, a, count):
        mesh = mesh_of(devices, (count,), ("x",))
        return np.asarray(jax.jit(f)(jax.device_put(a, NamedSharding(mesh, P("x")))))

    for f, a in cases:
        ref = run(cpu_devices, f, a, 1)
        for count in (1, 8):
            np.testing.assert_array_equal(bits(run(tessera_devices, f, a, count)), bits(ref))


def test_vmapped_indexing_and_its_gradients_match_jax_cpu(tessera_devices, cpu_devices):
    # vmap of a lookup or of `.at[]` emits gathers and scatters with batching dimensions, and the
    # gradient of a batched dynamic_slice a scatter of windows over part of a dimension: bit for
    # bit with JAX's CPU backend, indices past the ends included (clamped by gather, dropped by
    # scatter), on one device and with the batch sharded over 8.
    rng = np.random.default_rng(SEED + 43)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    x3 = rng.standard_normal((8, 5, 4)).astype(np.float32)
    i = rng.integers(-2, 8, 8).astype(np.int32)
    i2 = rng.integers(0, 5, (8, 3)).astype(np.int32)
    take = jax.vmap(lambda a, j: a[j])
    cases = [
        (take, (x, i)),
        (take, (x3, i2)),
        (jax.vmap(lambda a, j: a.at[j].add(1.0)), (x, i)),
        (jax.vmap(lambda a, j: a.at[j].set(7.0)), (x, i)),
        (jax.vmap(lambda a, j: a.at[j].max(0.5, mode="drop")), (x, i)),
        (jax.vmap(lambda a, j: a.at[j, 1:3].set(-1.0)), (x3, i2)),
        (jax.vmap(lambda a, j: jnp.take_along_axis(a, j, 0)), (x, i2)),
        (jax.grad(lambda a, j: jnp.sum(jnp.sin(take(a, j)))), (x3, i2)),
        (jax.vmap(lambda a, j: jax.lax.dynamic_slice(a, (j,), (3,))), (x, i)),
        (jax.grad(lambda a, j: jnp.sum(
            jax.vmap(lambda r, s: jax.lax.dynamic_slice(r, (s,), (3,)))(a, j) ** 2)), (x, i)),
        (lambda a, j: a.at[j[:3], :3].add(2.0), (x, i)),
        # constant indices, which the compiler folds into the scatter
        (lambda a, j: a.at[:, -1].set(0.0), (x, i)),
        (lambda a, j: a.at[jnp.array([1, 1, 7])].add(2.0), (x, i)),
    ]

    def run(devices, f, args, count):
        sharding = NamedSharding(mesh_of(devices, (count,), ("x",)), P("x"))
        return np.asarray(jax.jit(f)(*[jax.device_put(a, sharding) for a in args]))

    for n, (f, args) in enumerate(cases):
        ref = run(cpu_devices, f, args, 1)
        for count in (1, 8):
            np.testing.assert_array_equal(bits(run(tessera_devices, f, args, count)), bits(ref),
                                          err_msg=f"case {n} on {count}")


def test_argmax_and_top_k_over_a_sharded_dimension_match_jax_cpu(tessera_devices, cpu_devices):
    # argmax reduces values and indices together, which the devices' partial results cannot be
    # combined into: the sharded dimension is gathered and each device reduces whole rows. Ties
    # pick the first index, as on JAX's CPU backend.
    rng = np.random.default_rng(SEED + 44)
    x = rng.integers(0, 5, (4, 64)).astype(np.float32)
    mesh = mesh_of(tessera_devices, (4, 2), ("x", "y"))
    programs = [lambda a: jnp.argmax(a, axis=1), lambda a: jnp.argmin(a, axis=0),
                lambda a: jnp.argmax(a), lambda a: jax.lax.top_k(a, 3)[1]]
    for f in programs:
        ref = np.asarray(jax.jit(f)(jax.device_put(x, cpu_devices[0])))
        for spec in (P(None, "x"), P("x", None), P("x", "y")):
            got = np.asarray(jax.jit(f)(jax.device_put(x, NamedSharding(mesh, spec))))
            np.testing.assert_array_equal(got, ref, err_msg=str(spec))


# lax.conv_general_dilated cases: input shape, kernel shape, keyword arguments.
CONVOLUTIONS = [
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(window_strides=(2, 1), padding=((1, 2), (0, 1)),
                                      rhs_dilation=(1, 2))),
    ((2, 7, 6, 4), (3, 3, 2, 4), dict(window_strides=(1, 1), padding="SAME", feature_group_count=2,
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((3, 2, 5), (4, 2, 2), dict(window_strides=(1,), padding=((-1, 3),), lhs_dilation=(3,))),
    ((1, 2, 4, 5, 3), (2, 2, 2, 2, 3), dict(window_strides=(1, 2, 1), padding="VALID",
                                            dimension_numbers=("NCDHW", "OIDHW", "NCDHW"))),
    ((4, 6, 6, 6), (6, 1, 3, 3), dict(window_strides=(2, 2), padding="SAME",
                                      feature_group_count=6)),  # depthwise
]


@pytest.mark.parametrize("x_shape,w_shape,kwargs", CONVOLUTIONS,
                         ids=[f"conv{i}" for i in range(len(CONVOLUTIONS))])
def test_convolutions_and_their_gradients_match_jax_cpu(tessera_devices, cpu_devices, x_shape,
                                                        w_shape, kwargs):
    # The convolution, and jax.grad of a loss through it (the input's gradient is a convolution
    # with lhs_dilation, the kernel's one with batch groups where the forward has feature groups).
    rng = np.random.default_rng(SEED + 31)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    conv = functools.partial(jax.lax.conv_general_dilated, **kwargs)
    forward = jax.jit(conv)
    grads = jax.jit(jax.grad(lambda a, b: jnp.sum(jnp.sin(conv(a, b))), argnums=(0, 1)))
    for f in (forward, grads):
        ours = f(jax.device_put(x, tessera_devices[0]), jax.device_put(w, tessera_devices[0]))
        ref = f(jax.device_put(x, cpu_devices[0]), jax.device_put(w, cpu_devices[0]))
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(ref)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-4)


def test_convolutions_of_integers_and_bf16_match_jax_cpu(tessera_devices, cpu_devices):
    # int32 exactly; bf16 inputs accumulated in f32 (preferred_element_type), bf16 results, int8
    # inputs into f32, and booleans (true where any product is).
    rng = np.random.default_rng(SEED + 32)
    xi = rng.integers(-50, 50, (2, 3, 7, 7)).astype(np.int32)
    wi = rng.integers(-50, 50, (5, 3, 3, 3)).astype(np.int32)
    xb = rng.standard_normal((2, 3, 7, 7)).astype(jnp.bfloat16)
    wb = rng.standard_normal((5, 3, 3, 3)).astype(jnp.bfloat16)
    cases = [
        (jax.jit(lambda a, b: jax.lax.conv(a, b, (2, 1), "SAME")), xi, wi, 0),
        (jax.jit(lambda a, b: jax.lax.conv_general_dilated(
            a, b, (1, 1), "VALID", preferred_element_type=jnp.float32)), xb, wb, 1e-5),
        (jax.jit(lambda a, b: jax.lax.conv(a, b, (1, 1), "VALID")), xb, wb, 1e-2),
        (jax.jit(lambda a, b: jax.lax.conv_general_dilated(
            a.astype(jnp.int8), b.astype(jnp.int8), (1, 1), "VALID",
            preferred_element_type=jnp.float32)), xi, wi, 0),
        (jax.jit(lambda a, b: jax.lax.conv(a > 30, b > 30, (1, 1), "SAME")), xi, wi, 0),
    ]
    for f, x, w, tol in cases:
        ours = f(jax.device_put(x, tessera_devices[0]), jax.device_put(w, tessera_devices[0]))
        ref = f(jax.device_put(x, cpu_devices[0]), jax.device_put(w, cpu_devices[0]))
        assert ours.dtype == ref.dtype
        np.testing.assert_allclose(np.asarray(ours).astype(np.float64),
                                   np.asarray(ref).astype(np.float64), rtol=tol, atol=tol)


def test_a_data_parallel_cnn_training_step_matches_jax_cpu(tessera_devices, cpu_devices):
    # Two convolutions (the second strided), a ReLU, mean pooling and a dense layer: SGD steps of
    # a batch sharded over 8 devices, parameters replicated.
    rng = np.random.default_rng(SEED + 33)
    params = (rng.standard_normal((3, 3, 3, 8)).astype(np.float32) * 0.3,
              rng.standard_normal((3, 3, 8, 8)).astype(np.float32) * 0.3,
              rng.standard_normal((8, 4)).astype(np.float32) * 0.3)
    images = rng.standard_normal((16, 10, 10, 3)).astype(np.float32)
    labels = rng.integers(0, 4, 16)

    def loss(p, x, y):
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, p[0], (1, 1), "SAME",
                                                     dimension_numbers=dn))
        h = jax.nn.relu(jax.lax.conv_general_dilated(h, p[1], (2, 2), "SAME",
                                                     dimension_numbers=dn))
        logits = h.mean(axis=(1, 2)) @ p[2]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

    @jax.jit
    def step(p, x, y):
        value, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree.map(lambda a, b: a - 0.1 * b, p, g), value

    def train(devices):
        mesh = mesh_of(devices, (8,), ("x",))
        p = jax.device_put(params, NamedSharding(mesh, P()))
        x = jax.device_put(images, NamedSharding(mesh, P("x")))
        y = jax.device_put(labels, NamedSharding(mesh, P("x")))
        losses = []
        for _ in range(5):
            p, value = step(p, x, y)
            losses.append(float(value))
        return losses

    ours, ref = train(tessera_devices), train(cpu_devices)
    assert ours[-1] < ours[0]
    np.testing.assert_allclose(ours, ref, rtol=1e-4)


@pytest.mark.parametrize("window,strides,padding", [((1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
                                                    ((1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
                                                    ((2, 3, 1, 1), (1, 1, 1, 1), "VALID")])
def test_max_and_min_pooling_gradients_match_jax_cpu_bit_for_bit(tessera_devices, cpu_devices,
                                                                  window, strides, padding):
    # The gradient of max (min) pooling is a select_and_scatter: each window's first maximum
    # (minimum) in row-major order gets the window's gradient, summed where windows overlap. Small
    # integers make ties in most windows. On one device and rows sharded over 8, against JAX's
    # CPU backend on one device: on 8 (XLA 0.10.2), windows across the sharded rows (the third
    # case) give other sums than on one device, and than the spec's.
    rng = np.random.default_rng(SEED + 34)
    x = rng.integers(0, 4, (8, 9, 7, 3)).astype(np.float32)
    scale = rng.standard_normal((8, 9, 7, 3)).astype(np.float32)

    def pooled(a, init, op):
        return jax.lax.reduce_window(a, init, op, window, strides, padding)

    for init, op in ((-jnp.inf, jax.lax.max), (jnp.inf, jax.lax.min)):
        shape = jax.eval_shape(lambda a: pooled(a, init, op), x).shape
        weights = rng.standard_normal(shape).astype(np.float32)
        f = jax.jit(jax.grad(lambda a: jnp.sum(pooled(a * scale, init, op) * weights)))
        def run(devices, count, spec):
            mesh = mesh_of(devices[:count], (count,), ("x",))
            return np.asarray(f(jax.device_put(x, NamedSharding(mesh, spec))))

        ref = run(cpu_devices, 1, P())
        for count, spec in ((1, P()), (8, P("x"))):
            np.testing.assert_array_equal(bits(run(tessera_devices, count, spec)), bits(ref),
                                          err_msg=f"{op.__name__} {count}")


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_data_parallel_pooling_moves_nothing_and_keeps_the_batch_split(tessera_devices,
                                                                      cpu_devices, pool):
    # Pooling over a batch sharded 8 ways, and its gradient: each device pools its own images
    # (no bytes between devices), and the results, which the jit leaves open, come back split
    # as JAX's CPU backend splits them, with the same bits.
    from tessera import jax_plugin

    rng = np.random.default_rng(SEED + 36)
    x = rng.integers(0, 5, (16, 12, 10, 4)).astype(np.float32)
    window, strides = ((1, 3, 3, 1), (1, 2, 2, 1)) if pool == "max" else ((1, 2, 2, 1),) * 2

    def pooled(a):
        if pool == "max":
            return jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, window, strides, "SAME")
        return jax.lax.reduce_window(a, 0.0, jax.lax.add, window, strides, "VALID") / 4

    programs = [jax.jit(pooled), jax.jit(jax.grad(lambda a: jnp.sum(jnp.sin(pooled(a)))))]

    def run(devices, f):
        mesh = mesh_of(devices, (8,), ("x",))
        a = jax.device_put(x, NamedSharding(mesh, P("x")))
        f(a).block_until_ready()  # compiled and run once
        before = jax_plugin.transfer_stats()["device_to_device"][0]
        out = f(a)
        out.block_until_ready()
        return out, jax_plugin.transfer_stats()["device_to_device"][0] - before

    for f in programs:
        (ours, moved), (ref, _) = run(tessera_devices, f), run(cpu_devices, f)
        assert moved == 0
        assert ours.sharding.spec == ref.sharding.spec == P("x")
        np.testing.assert_array_equal(bits(np.asarray(ours)), bits(np.asarray(ref)))


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_narrow_float_windows_round_each_step_as_jax_cpu(tessera_devices, cpu_devices, dtype):
    # XLA combines a bf16 (f16) window in its type, rounding after each step in the window's
    # order: sum pooling with padding and strides, cumsum, and max and average pooling's
    # gradients, bit for bit, on one device and batch-sharded over 8.
    rng = np.random.default_rng(SEED + 37)
    x = rng.standard_normal((8, 9, 7, 3)).astype(dtype)

    def summed(a):
        return jax.lax.reduce_window(a, 0.0, jax.lax.add, (1, 2, 3, 1), (1, 1, 2, 1),
                                     ((0, 0), (1, 0), (0, 2), (0, 0)))

    def maxed(a):
        return jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")

    programs = [jax.jit(summed), jax.jit(lambda a: jnp.cumsum(a, axis=1)),
                jax.jit(jax.grad(lambda a: jnp.sum(jnp.sin(summed(a))))),
                jax.jit(jax.grad(lambda a: jnp.sum(maxed(a).astype(jnp.float32) * 1.37)))]

    def run(devices, f, count):
        mesh = mesh_of(devices[:count], (count,), ("x",))
        return np.asarray(f(jax.device_put(x, NamedSharding(mesh, P("x")))))

    for f in programs:
        ref = run(cpu_devices, f, 1)
        for count in (1, 8):
            np.testing.assert_array_equal(bits(run(tessera_devices, f, count)), bits(ref))


@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16])
def test_forward_mode_derivatives_of_pooling_match_jax_cpu(tessera_devices, cpu_devices, dtype):
    # jax.jvp of max and min pooling emits a reduce_window of two operands (values and tangents,
    # the tangent of each window's first maximum kept): bit for bit with JAX's CPU backend on one
    # device and batch-sharded over 8 (no bytes between devices). jacfwd through max pooling
    # equals the reverse-mode gradient, as the spec's window order gives it; XLA 0.10.2's own
    # jacfwd here breaks two ties otherwise (its batched variadic reduce_window), unlike its grad.
    from tessera import jax_plugin

    rng = np.random.default_rng(SEED + 38)
    x = rng.integers(0, 4, (8, 9, 7, 3)).astype(dtype)  # ties in most windows
    tangent = rng.standard_normal((8, 9, 7, 3)).astype(dtype)

    def max_pool(a):
        return jax.lax.reduce_window(a, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")

    def min_pool(a):
        return jax.lax.reduce_window(a, jnp.inf, jax.lax.min, (1, 2, 3, 1), (1, 1, 2, 1), "VALID")

    for pool in (max_pool, min_pool):
        f = jax.jit(lambda a, t, pool=pool: jax.jvp(pool, (a,), (t,)))

        def run(devices, count):
            sharding = NamedSharding(mesh_of(devices[:count], (count,), ("x",)), P("x"))
            a, t = jax.device_put(x, sharding), jax.device_put(tangent, sharding)
            jax.block_until_ready(f(a, t))
            before = jax_plugin.transfer_stats()["device_to_device"][0]
            out = [np.asarray(v) for v in f(a, t)]
            return out, jax_plugin.transfer_stats()["device_to_device"][0] - before

        ref, _ = run(cpu_devices, 1)
        for count in (1, 8):
            ours, moved = run(tessera_devices, count)
            assert moved == 0
            for a, b in zip(ours, ref):
                np.testing.assert_array_equal(bits(a), bits(b), err_msg=f"{pool.__name__} {count}")
    if dtype != np.float32:
        return
    loss = lambda a: jnp.sum(max_pool(a) ** 2)  # noqa: E731
    small = x[:2, :4, :4, :1]
    np.testing.assert_array_equal(
        bits(jax.jit(jax.jacfwd(loss))(jax.device_put(small, tessera_devices[0]))),
        bits(jax.jit(jax.grad(loss))(jax.device_put(small, cpu_devices[0]))))


def test_interior_padding_matches_jax_cpu(tessera_devices, cpu_devices):
    # lax.pad with interior padding (negative edges too), and the gradients that emit it: of a
    # strided slice and of strided average pooling; on one device and rows-sharded over 8.
    rng = np.random.default_rng(SEED + 35)
    x = rng.standard_normal((8, 6, 5)).astype(np.float32)
    programs = [
        jax.jit(lambda a: jax.lax.pad(a, np.float32(-2.5), ((0, 0, 0), (1, -2, 2), (-1, 3, 1)))),
        jax.jit(jax.grad(lambda a: jnp.sum(jnp.sin(a[:, 1::2, ::3])))),
        jax.jit(jax.grad(lambda a: jnp.sum(jnp.cos(jax.lax.reduce_window(
            a, 0., jax.lax.add, (1, 2, 2), (1, 2, 2), "VALID"))))),
    ]

    def run(devices, f, count, spec):
        mesh = mesh_of(devices[:count], (count,), ("x",))
        return np.asarray(f(jax.device_put(x, NamedSharding(mesh, spec))))

    for f in programs:
        ref = run(cpu_devices, f, 1, P())
        for count, spec in ((1, P()), (8, P("x"))):
            np.testing.assert_allclose(run(tessera_devices, f, count, spec), ref, rtol=1e-6,
                                       atol=1e-6)


def test_a_data_parallel_embedding_lookup_keeps_its_batch_split(tessera_devices, cpu_devices):
    # A lookup of batch-sharded token ids in a replicated table runs on each device's ids, with no
    # bytes between devices and its result split as JAX CPU splits it (the gather reads the table
    # whole and its positions as inputs); the training step's gradient (a scatter-add into the
    # table) matches JAX CPU's.
    from tessera import jax_plugin

    rng = np.random.default_rng(SEED + 45)
    table = rng.standard_normal((512, 32)).astype(np.float32)
    w = (rng.standard_normal((32, 16)) / 6).astype(np.float32)
    ids = rng.integers(0, 512, 64).astype(np.int32)

    def forward(t, w, i):
        return jnp.tanh(t[i] @ w)

    def loss(p, i):
        return jnp.mean(forward(p[0], p[1], i) ** 2)

    def run(devices, f, args):
        mesh = mesh_of(devices, (8,), ("x",))
        specs = [P()] * (len(args) - 1) + [P("x")]
        placed = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(args, specs)]
        jax.block_until_ready(f(*placed))
        before = jax_plugin.transfer_stats()["device_to_device"][0]
        out = f(*placed)
        jax.block_until_ready(out)
        return out, jax_plugin.transfer_stats()["device_to_device"][0] - before

    f = jax.jit(forward)
    (ours, moved), (ref, _) = run(tessera_devices, f, (table, w, ids)), run(cpu_devices, f,
                                                                            (table, w, ids))
    assert moved == 0
    assert ours.sharding.spec == ref.sharding.spec == P("x")
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-5, atol=1e-6)
    g = jax.jit(lambda t, w, i: jax.grad(loss)((t, w), i))
    (ours, _), (ref, _) = run(tessera_devices, g, (table, w, ids)), run(cpu_devices, g,
                                                                        (table, w, ids))
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-7)
