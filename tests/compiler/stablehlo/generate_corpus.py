"""Writes the StableHLO corpus of tests/compiler/stablehlo_import_test.cc: JAX functions lowered
with their shardings and printed in generic form, as Tessera's importer reads them.

    build/pyenv/bin/python3 tests/compiler/stablehlo/generate_corpus.py

Each program is written to <name>.mlir beside this script (source locations stripped, so that
the files do not depend on where this script lives). The shapes are small and odd where the
shardings allow it; the Python tests (tests/bindings/python/test_stablehlo.py) lower and run
larger ones at test time against JAX's own results.
"""
import functools
import os
import pathlib
import re

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def mlp(x, w1, b1, w2):
    return jax.nn.relu(x @ w1 + b1) @ w2


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def attention(x, wq, wk, wv, wo, heads):
    b, s, d = x.shape
    split = lambda t: t.reshape(b, s, heads, d // heads)  # noqa: E731
    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = jnp.einsum("bshd,bthd->bhst", q, k) / jnp.sqrt(d // heads).astype(x.dtype)
    o = jnp.einsum("bhst,bthd->bshd", jax.nn.softmax(scores, -1), v).reshape(b, s, d)
    return o @ wo


def block(x, wq, wk, wv, wo, w1, w2, g, b, heads=2):
    h = x + attention(layernorm(x, g, b), wq, wk, wv, wo, heads=heads)
    return h + jax.nn.gelu(layernorm(h, g, b) @ w1) @ w2


def block_train_step(params, x):
    loss = lambda p: jnp.sum(block(x, *p) ** 2)  # noqa: E731
    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


def block_gradients(params, x, heads=8):
    # A transformer block's weight gradients, as the benchmark's Megatron case asks for them. The
    # weights are scaled as initializers scale them (the tests draw them from N(0, 1)), so that the
    # gradients are not sums of large terms that cancel.
    def loss(p):
        wq, wk, wv, wo, w1, w2, g, b = p
        d, hidden = w1.shape
        scaled = [w * d ** -0.5 for w in (wq, wk, wv, wo, w1)] + [w2 * hidden ** -0.5]
        return jnp.mean(block(x, *scaled, 1.0 + 0.1 * g, 0.1 * b, heads=heads) ** 2)

    return jax.grad(loss)(params)


def iota_rows(x):
    # An iota along the sharded dimension: each device's rows are numbered from its offset.
    return x + jnp.arange(x.shape[0], dtype=x.dtype)[:, None]


def embedding(table, ids, w):
    # A lookup (gather) and, in its gradient, the scatter-add of the rows back into the table.
    loss = lambda t: jnp.sum((t[ids] @ w) ** 2)  # noqa: E731
    return table[ids] @ w, jax.grad(loss)(table)


def take_columns(x, idx):
    return jnp.take(x, idx, axis=1, mode="clip") * 2.0


def slicing(x):
    # Slices, pads and concatenations along the unsharded columns keep the rows sharded; a pad of
    # the sharded rows, and a reverse, run on whole tensors.
    half = x.shape[1] // 2
    rotated = jnp.concatenate([-x[:, half:], x[:, :half]], axis=1)  # rotary embedding's half-turn
    padded = jnp.pad(x[:, 1:5:2], ((0, 0), (2, 1)), constant_values=-1.0)
    return rotated * 2.0, padded, jnp.pad(x, ((1, 0), (0, 0)))[:-1] + jnp.flip(x, 1)


def loops_and_branches(x, n):
    # fori_loop and while_loop (stablehlo.while), cond (stablehlo.case) on rows-sharded data.
    y = jax.lax.fori_loop(0, 5, lambda i, a: a * 0.5 + i.astype(a.dtype), x)
    z, count = jax.lax.while_loop(lambda c: c[1] < n, lambda c: (jnp.tanh(c[0]) + 1.0, c[1] + 1),
                                  (y, 0))
    return jax.lax.cond(jnp.sum(z) > 0, lambda t: t * 2.0, lambda t: -t, z), count


def scan_windows(h, xs, i):
    # scan over xs (stablehlo.while reading xs[t] with dynamic_slice, writing ys[t] with
    # dynamic_update_slice), then a window of ys at a traced offset written back into it.
    h, ys = jax.lax.scan(lambda c, x: (jnp.tanh(c * 0.5 + x), c.sum(-1)), h, xs)
    window = jax.lax.dynamic_slice(ys, (i, 0), (2, ys.shape[1]))
    return h, jax.lax.dynamic_update_slice(ys, window * 2.0, (i + 1, 0))


def reshapes(x):
    # Splits, merges and regroups [8, 6]: [8, 2, 3], [8, 6], then [4, 12] (one group of 48).
    return (x.reshape(8, 2, 3) * 2.0).reshape(8, 6).reshape(4, 12) + 1.0


def cross_entropy(logits, labels):
    one_hot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * one_hot, -1))


def sgd_step(params, x, y):
    loss = lambda p: jnp.mean((mlp(x, *p) - y) ** 2)  # noqa: E731
    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def elementwise(x, y):
    return jnp.where(x > y, jnp.exp(x) * jnp.tanh(y), jnp.maximum(x, -y) / (1.0 + y * y))


def mlp_shard_map(mesh):
    """The Megatron MLP written per device: shard_map's body and its psum over tp."""
    def local(x, w1, b1, w2):
        return jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "tp")
    return jax.shard_map(local, mesh=mesh,
                         in_specs=(P("dp"), P(None, "tp"), P("tp"), P("tp", None)),
                         out_specs=P("dp"))


def collectives(mesh):
    """A shard_map body with each collective Tessera maps: psum over tp, all_gather over dp,
    psum_scatter over dp, all_to_all over tp, pmax over both, axis_index."""
    def local(a, b):
        s = jax.lax.psum(a, "tp") + jax.lax.axis_index("tp").astype(jnp.float32)
        g = jax.lax.all_gather(b, "dp", axis=0, tiled=True)
        r = jax.lax.psum_scatter(a, "dp", scatter_dimension=1, tiled=True)
        t = jax.lax.all_to_all(a, "tp", 0, 1, tiled=True)
        m = jax.lax.pmax(a, ("dp", "tp"))
        return s, g, r, t, m
    return jax.shard_map(local, mesh=mesh, in_specs=(P("dp", "tp"), P("dp")),
                         out_specs=(P("dp", "tp"), P(), P("dp", "tp"), P("dp", "tp"),
                                    P("dp", "tp")), check_vma=False)


def partial_manual(mesh):
    """A shard_map manual over dp only (tp left to the partitioner): a matmul, psum over dp, plus
    axis_index(dp) (which JAX lowers as a shard_map over tp inside)."""
    def local(a, w):
        return jax.lax.psum(a @ w, "dp") + jax.lax.axis_index("dp").astype(jnp.float32)
    return jax.shard_map(local, mesh=mesh, in_specs=(P("dp"), P()), out_specs=P("dp"),
                         axis_names={"dp"}, check_vma=False)


def sort_rows(keys, values):
    """argsort of each row (a stable sort of the keys and their indices), and the values sorted
    by the keys (lax.sort of two operands, one key)."""
    return (jnp.argsort(keys, axis=1),
            jax.lax.sort((keys, values), dimension=1, num_keys=1)[1])


def permutes(mesh):
    """A shard_map body with ppermutes by a shift: a ring over tp, a pipeline step over dp (no
    wrap: the first stage receives zeros), a ring backwards over tp of a scalar, and a shift by -2
    over tp without wrap."""
    def local(a):
        tp, dp = mesh.shape["tp"], mesh.shape["dp"]
        ring = jax.lax.ppermute(a, "tp", [(i, (i + 1) % tp) for i in range(tp)])
        stage = jax.lax.ppermute(a * 2, "dp", [(i, i + 1) for i in range(dp - 1)])
        total = jax.lax.ppermute(a.sum(), "tp", [(i, (i - 1) % tp) for i in range(tp)])
        back = jax.lax.ppermute(a + 1, "tp", [(i, i - 2) for i in range(2, tp)])
        return ring, stage, total[None, None], back
    return jax.shard_map(local, mesh=mesh, in_specs=P("dp", "tp"),
                         out_specs=(P("dp", "tp"), P("dp", "tp"), P("dp", "tp"), P("dp", "tp")),
                         check_vma=False)


def ring_and_stage(mesh):
    """ppermute over a one-axis mesh: a ring (+1, wrapping) and a pipeline step (+1, no wrap);
    the multi-process tests run it over devices of two processes."""
    def local(a):
        n = mesh.shape["x"]
        ring = jax.lax.ppermute(a, "x", [(i, (i + 1) % n) for i in range(n)])
        stage = jax.lax.ppermute(a * 2, "x", [(i, i + 1) for i in range(n - 1)])
        return ring, stage
    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=(P("x"), P("x")),
                         check_vma=False)


def cnn_train_step(params, x):
    # Two convolutions (NHWC; the second strided and grouped), max pooling, a dense layer; the
    # SGD step's gradients are convolutions with input dilation and batch groups and a
    # select_and_scatter.
    def loss(p):
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, p[0], (1, 1), "SAME",
                                                     dimension_numbers=dn))
        h = jax.lax.conv_general_dilated(h, p[1], (2, 2), ((1, 0), (0, 1)),
                                         dimension_numbers=dn, feature_group_count=2)
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID")
        return jnp.sum((h.mean(axis=(1, 2)) @ p[2]) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


def lower(f, args, in_specs, out_specs, mesh):
    named = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    jitted = jax.jit(f, in_shardings=jax.tree.map(named, in_specs),
                     out_shardings=jax.tree.map(named, out_specs))
    module = jitted.lower(*args).compiler_ir("stablehlo")
    return module.operation.get_asm(print_generic_op_form=True)


def lower_gspmd(*args):
    """lower() with jax_use_shardy_partitioner=False: GSPMD shardings, shard_map as a call between
    custom_calls @SPMDFullToShardShape and @SPMDShardToFullShape."""
    previous = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        return lower(*args)
    finally:
        jax.config.update("jax_use_shardy_partitioner", previous)


def main():
    mesh8 = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    mesh2x4 = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(AxisType.Auto,) * 2)
    mesh4 = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    f32 = jnp.float32
    z = lambda *shape: jnp.zeros(shape, f32)  # noqa: E731
    programs = {
        "mlp_data_parallel": lower(mlp, (z(16, 7), z(7, 5), z(5), z(5, 3)),
                                   (P("x"), P(), P(), P()), P("x"), mesh8),
        "mlp_megatron": lower(mlp, (z(6, 8), z(8, 16), z(16), z(16, 8)),
                              (P("dp"), P(None, "tp"), P("tp"), P("tp", None)), P("dp"),
                              mesh2x4),
        "elementwise_replicated": lower(elementwise, (z(5, 3), z(5, 3)), (P(), P()), P(), mesh8),
        "layernorm_rows": lower(layernorm, (z(8, 3, 5), z(5), z(5)), (P("x"), P(), P()),
                                P("x"), mesh8),
        "transformer_block": lower(block, (z(8, 4, 6), *[z(6, 6)] * 4, z(6, 12), z(12, 6),
                                           z(6), z(6)),
                                   (P("x"),) + (P(),) * 8, P("x"), mesh8),
        "transformer_megatron": lower(functools.partial(block, heads=4),
                                      (z(4, 3, 8), *[z(8, 8)] * 4, z(8, 16), z(16, 8), z(8),
                                       z(8)),
                                      (P("dp"), P(None, "tp"), P(None, "tp"), P(None, "tp"),
                                       P("tp", None), P(None, "tp"), P("tp", None), P(), P()),
                                      P("dp"), mesh2x4),
        "transformer_train_step": lower(block_train_step,
                                        ((*[z(6, 6)] * 4, z(6, 12), z(12, 6), z(6), z(6)),
                                         z(8, 5, 6)),
                                        ((P(),) * 8, P("x")), (P(),) * 8, mesh8),
        # Megatron over one axis, the gradients in their weights' shardings (out_shardings).
        "transformer_megatron_gradients": lower(
            block_gradients, ((*[z(16, 16)] * 4, z(16, 64), z(64, 16), z(16), z(16)), z(2, 4, 16)),
            ((P(None, "x"),) * 3 + (P("x", None), P(None, "x"), P("x", None), P(), P()), P()),
            (P(None, "x"),) * 3 + (P("x", None), P(None, "x"), P("x", None), P(), P()), mesh8),
        "iota_rows": lower(iota_rows, (z(16, 3),), (P("x"),), P("x"), mesh8),
        "embedding": lower(embedding, (z(11, 6), jnp.zeros(16, jnp.int32), z(6, 3)),
                           (P(), P("x"), P()), (P("x"), P()), mesh8),
        "take_columns": lower(take_columns, (z(8, 7), jnp.zeros(5, jnp.int32)), (P("x"), P()),
                              P("x"), mesh8),
        "slicing": lower(slicing, (z(16, 6),), (P("x"),), (P("x"), P("x"), P("x")), mesh8),
        "loops_and_branches": lower(loops_and_branches, (z(16, 3), jnp.int32(3)), (P("x"), P()),
                                    (P("x"), P()), mesh8),
        "reshapes": lower(reshapes, (z(8, 6),), (P("x"),), P(), mesh8),
        "scan_windows": lower(scan_windows, (z(8, 5), z(6, 8, 5), jnp.int32(2)), (P("x"), P(), P()),
                              (P("x"), P()), mesh8),
        "cross_entropy": lower(cross_entropy, (z(8, 10), jnp.zeros(8, jnp.int32)),
                               (P("x"), P("x")), P(), mesh8),
        "mlp_shard_map": lower(mlp_shard_map(mesh2x4), (z(6, 8), z(8, 16), z(16), z(16, 8)),
                               (P("dp"), P(None, "tp"), P("tp"), P("tp", None)), P("dp"),
                               mesh2x4),
        "shard_map_collectives": lower(collectives(mesh2x4), (z(8, 16), z(6, 3)),
                                       (P("dp", "tp"), P("dp")),
                                       (P("dp", "tp"), P(), P("dp", "tp"), P("dp", "tp"),
                                        P("dp", "tp")), mesh2x4),
        "sort_rows": lower(sort_rows, (z(8, 11), z(8, 11)), (P("x"), P("x")), (P("x"), P("x")),
                           mesh8),
        "shard_map_partial_manual": lower(partial_manual(mesh2x4), (z(8, 12), z(12, 5)),
                                          (P("dp", "tp"), P()), P("dp"), mesh2x4),
        "shard_map_ppermute": lower(permutes(mesh2x4), (z(8, 12),), (P("dp", "tp"),),
                                    (P("dp", "tp"), P("dp", "tp"), P("dp", "tp"), P("dp", "tp")),
                                    mesh2x4),
        "ppermute_ring_and_stage": lower(ring_and_stage(mesh4), (z(8, 12),), (P("x", None),),
                                         (P("x", None), P("x", None)), mesh4),
        "mlp_shard_map_gspmd": lower_gspmd(mlp_shard_map(mesh2x4),
                                           (z(6, 8), z(8, 16), z(16), z(16, 8)),
                                           (P("dp"), P(None, "tp"), P("tp"), P("tp", None)),
                                           P("dp"), mesh2x4),
        "cnn_train_step": lower(cnn_train_step, ((z(3, 3, 3, 4), z(2, 2, 2, 6), z(6, 5)),
                                                 z(16, 7, 6, 3)),
                                ((P(), P(), P()), P("x")), (P(), P(), P()), mesh8),
        "sgd_step": lower(sgd_step, ((z(7, 5), z(5), z(5, 3)), z(16, 7), z(16, 3)),
                          ((P(), P(), P()), P("x"), P("x")), (P(), P(), P()), mesh8),
    }
    for name, text in programs.items():
        path = HERE / f"{name}.mlir"
        path.write_text(f"// {name}: generated by generate_corpus.py (jax {jax.__version__})\n"
                        + text)
        print(f"wrote {path.relative_to(HERE.parents[2])} ({len(text)} bytes)")


if __name__ == "__main__":
    main()
