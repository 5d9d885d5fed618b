#!/usr/bin/env python3
"""One-run timing: client.put + np.asarray of a 64 MiB f32 array from Python, against the same
two calls (MakeArrayFromHostBuffer + CopyToHostBuffer) made from C++ in the same process.

    PYTHONPATH=build/python python3 bindings/python/benchmarks/put_fetch.py [--mib 64]

Prints the best and median of each side over --repeats runs and their ratio (the target:
Python within 1.2x of C++).
"""
import argparse
import statistics
import time

import numpy as np

import tessera
from tessera import _tessera


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--sharding", default="mesh{x=4} P(x,None)")
    args = parser.parse_args()
    client = tessera.Client(cpu_devices=4, vulkan="off")
    cols = 1024
    rows = args.mib * 1024 * 1024 // 4 // cols
    x = np.ones((rows, cols), np.float32)

    def python_run():
        start = time.perf_counter()
        a = client.put(x, args.sharding)
        np.asarray(a)
        return time.perf_counter() - start

    python_run()  # warm up (plans, first-touch of the allocator)
    _tessera._time_put_fetch_cpp(client, rows, cols, args.sharding, 1)
    py, cpp = [], []
    for _ in range(args.repeats):  # interleaved, so that both see the same machine state
        py.append(python_run())
        cpp.extend(_tessera._time_put_fetch_cpp(client, rows, cols, args.sharding, 1))
    for name, t in (("python", py), ("c++", cpp)):
        print(f"{name:7s} put+fetch {args.mib} MiB: best {min(t) * 1e3:7.2f} ms, "
              f"median {statistics.median(t) * 1e3:7.2f} ms")
    print(f"ratio python / c++: best {min(py) / min(cpp):.3f}, "
          f"median {statistics.median(py) / statistics.median(cpp):.3f}")


if __name__ == "__main__":
    main()
