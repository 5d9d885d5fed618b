"""Trains a two-layer MLP with JAX on Tessera's devices: data parallel over a `dp` mesh axis,
Megatron-style tensor parallel over `tp`.

    pip install ./bindings/python        # Tessera, with its JAX plugin
    JAX_PLATFORMS=tessera TESSERA_CPU_DEVICES=8 python examples/jax_mlp_train.py

Unmodified JAX: the mesh, the shardings, jit and grad are JAX's own; Tessera compiles the
programs JAX lowers and runs them on its devices, moving (and guarding) every byte between them.
Each step prints the loss and the bytes Tessera moved for it. Options: --steps, --devices
(a mesh "dpxtp", default 2x4 for 8 devices), --check (the loss curve against JAX's own CPU
backend, which needs JAX_PLATFORMS=tessera,cpu).
"""

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from tessera import jax_plugin


def make_data(rng, batch, width, classes):
    x = rng.standard_normal((batch, width)).astype(np.float32)
    teacher = rng.standard_normal((width, classes)).astype(np.float32) / np.sqrt(width)
    y = np.argmax(x @ teacher, axis=1)
    return x, np.eye(classes, dtype=np.float32)[y]


def init_params(rng, width, hidden, classes):
    return {
        "w1": (rng.standard_normal((width, hidden)) / np.sqrt(width)).astype(np.float32),
        "b1": np.zeros((hidden,), np.float32),
        "w2": (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
    }


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"]
    return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits), axis=-1))


def make_step(mesh, lr):
    shardings = {
        "w1": NamedSharding(mesh, P(None, "tp")),
        "b1": NamedSharding(mesh, P("tp")),
        "w2": NamedSharding(mesh, P("tp", None)),
    }
    data = NamedSharding(mesh, P("dp", None))
    replicated = NamedSharding(mesh, P())

    def step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    return (
        jax.jit(
            step,
            in_shardings=(shardings, data, data),
            out_shardings=(shardings, replicated),
        ),
        shardings,
        data,
    )


def train(devices, mesh_shape, steps, lr=0.5, seed=0, verbose=True):
    """Runs `steps` steps on `devices`; returns the losses (and prints each step)."""
    mesh = Mesh(np.array(devices).reshape(mesh_shape), ("dp", "tp"))
    rng = np.random.default_rng(seed)
    x, y = make_data(rng, batch=256, width=64, classes=8)
    params = init_params(rng, width=64, hidden=128, classes=8)
    step, shardings, data = make_step(mesh, lr)
    params = jax.device_put(params, shardings)
    x, y = jax.device_put(x, data), jax.device_put(y, data)
    on_tessera = devices[0].platform == jax_plugin.PLATFORM_NAME
    losses = []
    for i in range(steps):
        before = jax_plugin.transfer_stats() if on_tessera else None
        params, loss = step(params, x, y)
        # The step is done when the new parameters are, not only the loss: its bytes then count in
        # this step, not the next.
        params = jax.block_until_ready(params)
        loss = float(loss)
        losses.append(loss)
        if verbose:
            line = f"step {i:3d}  loss {loss:.6f}"
            if on_tessera:
                after = jax_plugin.transfer_stats()
                moved = {k: after[k][0] - before[k][0] for k in after}
                line += (
                    f"  moved: {moved['device_to_device']} B device-to-device, "
                    f"{moved['device_to_host']} B to host, {moved['host_to_device']} B from host"
                )
            print(line, flush=True)
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--devices", default=None, help='the mesh, "dpxtp" (default 2x4, or 1x4, 1x2, 1x1 with fewer devices)')
    parser.add_argument("--check", action="store_true",
                        help="compare the losses with JAX's own CPU backend")
    args = parser.parse_args()

    devices = jax.devices()
    if args.devices:
        dp, tp = (int(n) for n in args.devices.lower().split("x"))
    else:
        # 2x4 on 8 devices or more; else one row of the most devices (4, 2 or 1) that split the
        # model's widths evenly: Tessera's defaults give 4 CPU devices and a Vulkan GPU, 5 in all.
        fits = [t for t in (4, 2, 1) if t <= len(devices)]
        dp, tp = (2, 4) if len(devices) >= 8 else (1, fits[0])
    if dp * tp > len(devices):
        sys.exit(f"a {dp}x{tp} mesh needs {dp * tp} devices; JAX has {len(devices)} "
                 "(TESSERA_CPU_DEVICES sets how many CPU devices Tessera offers)")
    devices = devices[: dp * tp]
    print(f"backend {devices[0].platform}: a {dp}x{tp} mesh over devices {[d.id for d in devices]} "
          f"({devices[0].device_kind})")
    losses = train(devices, (dp, tp), args.steps)
    if args.check:
        cpu = jax.devices("cpu")
        if len(cpu) < dp * tp:
            sys.exit("--check needs as many JAX CPU devices "
                     "(XLA_FLAGS=--xla_force_host_platform_device_count=8)")
        reference = train(cpu[: dp * tp], (dp, tp), args.steps, verbose=False)
        worst = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(losses, reference))
        print(f"loss curve against JAX's CPU backend: worst relative difference {worst:.2e}")
        if worst > 1e-4:
            sys.exit("the loss curves differ")


if __name__ == "__main__":
    main()
