"""Compiles and runs examples/mlp2_megatron.mlir from an installed `tessera` package.

Run by tests/packaging/pip_install.sh inside a fresh venv that holds only what
`pip install ./bindings/python` put there: the package must compute, not just import.
The result is checked against the same MLP in numpy.
"""
import os
import sys

import numpy as np
import tessera

program_path = sys.argv[1]
with open(program_path) as f:
    program = f.read()

# Imported from the venv, not from the source tree or a build folder.
where = os.path.dirname(tessera.__file__)
if not os.path.realpath(where).startswith(os.path.realpath(sys.prefix)):
    sys.exit(f"tessera was imported from {where}, outside the venv {sys.prefix}")

client = tessera.Client(cpu_devices=4, vulkan="off")
exe = client.compile(program, devices=client.devices[:4])
rng = np.random.default_rng(21)
x, w1, b1, w2, b2 = (rng.standard_normal(s).astype(np.float32)
                     for s in [(8, 16), (16, 32), (32,), (32, 16), (16,)])
put = client.put
args = [put(x, "mesh{x=4} P()"), put(w1, "mesh{x=4} P(None,x)"), put(b1, "mesh{x=4} P(x)"),
        put(w2, "mesh{x=4} P(x,None)"), put(b2, "mesh{x=4} P()")]
(y,) = exe.execute(args)
want = np.maximum(x @ w1 + b1, 0) @ w2 + b2
got = np.asarray(y)
if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
    sys.exit(f"y differs from numpy's by up to {np.abs(got - want).max()}")
if "all_reduce" not in exe.explain():
    sys.exit("the Megatron MLP's plan has no all_reduce:\n" + exe.explain())
print(f"pip-installed tessera {where}: the Megatron MLP ran on 4 CPU devices, y matches numpy")
