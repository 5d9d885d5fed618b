"""Programs from JAX: functions lowered by jax.jit with their shardings, compiled by Tessera from
the jax.stages.Lowered (or its StableHLO text) and run on Tessera's devices, against JAX's own
results on the same inputs. JAX runs on 8 host CPU devices (conftest.py sets XLA_FLAGS).

Inputs are drawn from a numpy Generator with a fixed, printed seed. f32 results agree within
1e-5 relative where the op order matches; matmuls and reductions, whose summation order differs
(OpenBLAS or Tessera's kernels against XLA's), within rtol 1e-4, atol 1e-5 (stated per test).
"""
import re

import numpy as np
import pytest

import tessera

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

SEED = 20261202


def rng(salt=0):
    print(f"seed {SEED + salt}")
    return np.random.default_rng(SEED + salt)


def normal(gen, *shape):
    return gen.standard_normal(shape).astype(np.float32)


@pytest.fixture(scope="module")
def client8():
    return tessera.Client(cpu_devices=8, vulkan="off")


def make_mesh(shape, names):
    """A JAX mesh whose axes JAX's partitioner shards automatically (as jit with in_shardings
    does), not the explicit axes jax.make_mesh defaults to since 0.7."""
    from jax.sharding import AxisType
    return jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(shape))


def needs_8_jax_devices():
    if len(jax.devices()) < 8:
        pytest.skip("JAX has fewer than 8 CPU devices (XLA_FLAGS set after jax was imported)")


def tessera_sharding(mesh, spec):
    """Tessera's text for JAX's NamedSharding(mesh, spec) over a value of rank len(spec)."""
    axes = ",".join(f"{n}={s}" for n, s in mesh.shape.items())

    def dim(d):
        if d is None:
            return "None"
        if isinstance(d, tuple):
            return "(" + ",".join(d) + ")"
        return d

    return f"mesh{{{axes}}} P({','.join(dim(d) for d in spec)})"


def run_both(client, f, args, in_specs, out_specs, mesh, program=None):
    """f lowered with the shardings, run by JAX and by Tessera; returns (jax outputs, tessera
    outputs) as lists of numpy arrays."""
    named = [NamedSharding(mesh, s) for s in in_specs]
    outs = out_specs if isinstance(out_specs, tuple) else (out_specs,)
    jitted = jax.jit(f, in_shardings=tuple(named),
                     out_shardings=tuple(NamedSharding(mesh, s) for s in outs)
                     if isinstance(out_specs, tuple) else NamedSharding(mesh, out_specs))
    lowered = jitted.lower(*args)
    expected = jitted(*[jax.device_put(a, s) for a, s in zip(args, named)])
    expected = [np.asarray(e) for e in (expected if isinstance(expected, (tuple, list))
                                        else [expected])]
    exe = client.compile(lowered if program is None else program,
                         devices=client.devices[:mesh.size])
    padded = [spec + (None,) * (np.ndim(a) - len(spec)) for a, spec in zip(args, in_specs)]
    arrays = [client.put(np.asarray(a), tessera_sharding(mesh, s)) for a, s in zip(args, padded)]
    got = [np.asarray(o.block_until_ready()) for o in exe.execute(arrays)]
    return expected, got


def mlp(x, w1, b1, w2):
    return jax.nn.relu(x @ w1 + b1) @ w2


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def softmax_rows(x):
    return jax.nn.softmax(x, axis=-1)


def cross_entropy(logits, labels):
    one_hot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * one_hot, -1))


def elementwise(x, y):
    return jnp.where(x > y, jnp.exp(x) * jnp.tanh(y), jnp.maximum(x, -y) / (1.0 + y * y))


def gelu_tanh(x):
    return jax.nn.gelu(x, approximate=True)


def gelu_erf(x):
    return jax.nn.gelu(x, approximate=False)


def mse_loss(params, x, y):
    return jnp.mean((mlp(x, *params) - y) ** 2)


def sgd_step(params, x, y):
    grads = jax.grad(mse_loss)(params, x, y)
    return tuple(p - 0.05 * g for p, g in zip(params, grads))


def test_mlp_data_parallel_odd_shapes(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    for rows, features, hidden, out in [(8, 1, 1, 1), (24, 7, 5, 3), (16, 13, 11, 2)]:
        g = rng(rows + features)
        args = (normal(g, rows, features), normal(g, features, hidden), normal(g, hidden),
                normal(g, hidden, out))
        (want,), (got,) = run_both(client8, mlp, args, (P("x"), P(), P(), P()), P("x"), mesh)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_megatron_mlp_all_reduces_its_partial_sums(client8):
    needs_8_jax_devices()
    mesh = make_mesh((2, 4), ("dp", "tp"))
    g = rng(1)
    args = (normal(g, 6, 8), normal(g, 8, 16), normal(g, 16), normal(g, 16, 8))
    before = client8.transfer_stats()["device_to_device"]["bytes"]
    (want,), (got,) = run_both(client8, mlp, args,
                               (P("dp"), P(None, "tp"), P("tp"), P("tp", None)), P("dp"), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    moved = client8.transfer_stats()["device_to_device"]["bytes"] - before
    # Each of the 8 devices holds a partial [3, 8] f32 sum that its 3 peers of the tp axis need.
    assert moved >= 8 * 3 * 8 * 4, moved


def test_dp_x_tp_mesh_and_two_axes_on_one_dimension(client8):
    needs_8_jax_devices()
    mesh = make_mesh((2, 4), ("dp", "tp"))
    g = rng(2)
    x, y = normal(g, 16, 3), normal(g, 16, 3)
    (want,), (got,) = run_both(client8, elementwise, (x, y), (P(("dp", "tp")), P(("dp", "tp"))),
                               P(("dp", "tp")), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [layernorm, softmax_rows, gelu_tanh, gelu_erf],
                         ids=lambda f: f.__name__)
def test_row_wise_functions(client8, f):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(3)
    if f is layernorm:
        args, specs = (normal(g, 8, 3, 7), normal(g, 7), normal(g, 7)), (P("x"), P(), P())
    else:
        args, specs = (normal(g, 16, 11),), (P("x"),)
    (want,), (got,) = run_both(client8, f, args, specs, P("x"), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)  # reductions: another order


def test_cross_entropy_integer_labels(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(4)
    logits = normal(g, 16, 10)
    labels = g.integers(0, 10, size=16).astype(np.int32)
    (want,), (got,) = run_both(client8, cross_entropy, (logits, labels), (P("x"), P("x")), P(),
                               mesh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_stablehlo_text_compiles_as_the_lowered_does(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(5)
    args = (normal(g, 8, 5), normal(g, 5, 3), normal(g, 3), normal(g, 3, 2))
    lowered = jax.jit(mlp).lower(*args)
    text = lowered.compiler_ir("stablehlo").operation.get_asm(print_generic_op_form=True)
    (want,), (got,) = run_both(client8, mlp, args, (P(), P(), P(), P()), P(), mesh, program=text)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_twenty_sgd_steps_end_where_jax_ends(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(6)
    x, y = normal(g, 32, 7), normal(g, 32, 3)
    params = (0.5 * normal(g, 7, 5), np.zeros(5, np.float32), 0.5 * normal(g, 5, 3))
    replicated = (P(), P(), P())
    step = jax.jit(sgd_step, in_shardings=(tuple(NamedSharding(mesh, s) for s in replicated),
                                           NamedSharding(mesh, P("x")),
                                           NamedSharding(mesh, P("x"))),
                   out_shardings=tuple(NamedSharding(mesh, s) for s in replicated))
    exe = client8.compile(step.lower(params, x, y))
    data = [client8.put(x, "mesh{x=8} P(x,None)"), client8.put(y, "mesh{x=8} P(x,None)")]
    ours = [client8.put(p, "mesh{x=8} P(" + ",".join(["None"] * p.ndim) + ")") for p in params]
    theirs = params
    for _ in range(20):
        ours = exe.execute(ours + data)
        theirs = step(theirs, x, y)
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(got.block_until_ready()), np.asarray(want),
                                   rtol=1e-3, atol=1e-5)  # 20 steps of reordered sums
    loss = float(mse_loss(tuple(np.asarray(o) for o in ours), x, y))
    assert loss < float(mse_loss(params, x, y))


def test_unsupported_op_names_it_and_the_python_line(client8):
    def loop(x):
        return jax.lax.fori_loop(0, 3, lambda i, a: a * 2.0 + 1.0, x)

    lowered = jax.jit(loop).lower(np.zeros((8, 4), np.float32))
    with pytest.raises(RuntimeError) as error:
        client8.compile(lowered)
    message = str(error.value)
    assert "UNIMPLEMENTED" in message and "stablehlo.while" in message, message
    assert re.search(r"test_stablehlo\.py:\d+", message), message  # JAX's source location


def test_reshape_that_splits_dimensions_is_refused_by_name(client8):
    lowered = jax.jit(lambda x: x.reshape(8, 2, 3) * 2.0).lower(np.zeros((8, 6), np.float32))
    with pytest.raises(RuntimeError, match=r"UNIMPLEMENTED.*reshape of 8x6 into 8x2x3"):
        client8.compile(lowered)


def test_mesh_larger_than_the_devices_is_invalid(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    lowered = jax.jit(lambda x: x + 1.0, in_shardings=NamedSharding(mesh, P("x")),
                      out_shardings=NamedSharding(mesh, P("x"))).lower(
                          np.zeros((8, 2), np.float32))
    with pytest.raises(ValueError, match="INVALID_ARGUMENT.*mesh"):
        client8.compile(lowered, devices=client8.devices[:4])


def test_malformed_text_is_invalid_argument_with_line_and_column(client8):
    with pytest.raises(ValueError, match=r"INVALID_ARGUMENT.*2:\d+"):
        client8.compile('"builtin.module"() ({\n  "stablehlo.add"(%x : () -> ()\n}) : () -> ()')


def test_anything_else_is_a_type_error(client8):
    with pytest.raises(TypeError, match="jax.stages.Lowered"):
        client8.compile(42)


def test_two_lavapipe_devices_and_cpu_plus_vulkan():
    client = tessera.Client(cpu_devices=2, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if len(gpus) < 2:
        pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
    from jax.sharding import AxisType, Mesh
    mesh = Mesh(np.array(jax.devices()[:2]), ("x",), axis_types=(AxisType.Auto,))
    g = rng(7)
    args = (normal(g, 8, 5), normal(g, 5, 3), normal(g, 3), normal(g, 3, 2))
    jitted = jax.jit(mlp, in_shardings=(NamedSharding(mesh, P("x")),) + (NamedSharding(mesh, P()),)
                     * 3, out_shardings=NamedSharding(mesh, P("x")))
    want = np.asarray(jitted(*args))
    for devices in (gpus[:2], [client.devices[0], gpus[0]]):
        exe = client.compile(jitted.lower(*args), devices=devices)
        arrays = [client.put(a, tessera.NamedSharding(tessera.Mesh(x=2, devices=devices), spec))
                  for a, spec in zip(args, [tessera.P("x", None), tessera.P(None, None),
                                            tessera.P(None), tessera.P(None, None)])]
        (got,) = exe.execute(arrays)
        np.testing.assert_allclose(np.asarray(got.block_until_ready()), want, rtol=1e-4,
                                   atol=1e-5)


@pytest.mark.parametrize("f, x", [
    (lambda x: x > 0, np.array([-1.0, 2.0, 0.5, -0.0], np.float32)),
    (lambda x: (x * 2).astype(jnp.int8), np.array([1, -3, 5, 127], np.int8)),
    (lambda x: x + 1, np.array([1, -2, 3, 32767], np.int16)),
], ids=["f32_to_pred", "s8", "s16"])
def test_pred_s8_and_s16_at_the_boundary(f, x):
    client = tessera.Client(cpu_devices=1, vulkan="off")
    exe = client.compile(jax.jit(f).lower(x))
    (y,) = exe.execute([client.put(x, "mesh{x=1} P(None)")])
    got, want = np.asarray(y.block_until_ready()), np.asarray(f(x))
    assert got.dtype == want.dtype and np.array_equal(got, want), (got, want)
