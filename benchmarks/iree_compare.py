#!/usr/bin/env python3
"""Times the same programs in Tessera and in IREE (MLIR's reference compiler), per device setup.

    build/pyenv/bin/python benchmarks/iree_compare.py [--rounds 5] [--repeat 7] \
        [--configs lavapipe,cpu1,cpu2] [--cases matmul512,matmul1024,mlp,elementwise,rowsum,tiny] \
        [--quick] [--vulkan-target llvmpipe] [--tessera-python build/python]

Programs (all f32, linalg on tensors, `func.func @main`, as benchmarks/ifrt/program_benchmark.cc):
  matmul512    x @ w, f32[512,512] @ f32[512,512]
  matmul1024   x @ w, f32[1024,1024] @ f32[1024,1024]
  mlp          relu(x @ w + b), x f32[256,2048], w f32[2048,2048], b f32[2048]
  elementwise  x * 2 + 1 over f32[4096,4096] (64 MiB)
  rowsum       the sum over the last axis of f32[4096,4096] -> f32[4096]; printed also as GB/s
               (bytes read / time) beside a memcpy floor measured in the same process (np.copyto of
               the same 64 MiB into a preallocated array, bandwidth = bytes read / time)
  tiny         relu(x @ w + b) with x f32[16,32], w f32[32,64], b f32[64]: the cost of a small call
--quick shrinks every size (a smoke test of the script, not a measurement).

Configurations:
  lavapipe  one Vulkan device on lavapipe, Mesa's CPU Vulkan driver (VK_DRIVER_FILES points at its
            ICD unless already set). Tessera: Client(cpu_devices=0, vulkan="required"). IREE:
            target vulkan-spirv with --iree-vulkan-target=llvmpipe (IREE 3.x's known target for
            lavapipe: SPIR-V 1.6, subgroup 8, 32 KiB workgroup memory; vp_android_baseline_2022 is
            the generic fallback, --vulkan-target), driver "vulkan".
  cpu1      one CPU device. Tessera: Client(cpu_devices=1, vulkan="off"). IREE: target llvm-cpu,
            driver local-task with --task_topology_max_group_count=1 (one worker).
  cpu2      two CPU devices. Tessera: Client(cpu_devices=2), the batch / rows sharded over both
            (P(x,None); weights and bias replicated). IREE: the same unsharded program, local-task
            with --task_topology_max_group_count=2 (two workers).
IREE compiles the same linalg text with Tessera's `tessera.sharding` attributes stripped
(--iree-input-type=none); on the CPU with its fast flags: --iree-opt-data-tiling
--iree-llvmcpu-enable-ukernels=all --iree-llvmcpu-target-cpu=host.

How: every (system, configuration, round) runs in a fresh subprocess of this script
(`--worker tessera|iree --config CONFIG`), so that nothing of one system (IREE's Vulkan device
spins about half a core while idle) is alive while the other is timed. A worker compiles each
case, puts its inputs on the devices, runs it once and compares the result with numpy (allclose,
tolerances scaled to the reduction length: a wrong result is reported, never timed), then prints
the median of --repeat calls after a warm-up (up to 20 calls or 1 s; Tessera: execute +
block_until_ready of the outputs; IREE: the function call, which returns when the device is done).
Rounds alternate which system goes first.
The table shows per case the median over rounds of each system's time and of the per-round ratio
IREE / Tessera (above 1: Tessera is faster) with its range over rounds: on a shared machine a
burst of load then lands on both sides of a ratio rather than on one system. A full run takes
about 15 minutes on a 2-core machine, most of it Tessera's 1024^3 matmul and MLP on lavapipe
(seconds a call). On a loaded machine IREE's Vulkan calls wake up late, in steps of the kernel's
4 ms tick (a tiny call then takes 4-20 ms instead of 0.1 ms): measure on a quiet machine.

IREE is a point of comparison only (build_tools/bench-requirements.txt); nothing in Tessera needs
it.
"""
import argparse
import collections
import importlib.metadata
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
INSTALL_HINT = "build/pyenv/bin/pip install -r build_tools/bench-requirements.txt"
CONFIGS = ("lavapipe", "cpu1", "cpu2")
CASES = ("matmul512", "matmul1024", "mlp", "elementwise", "rowsum", "tiny")
IREE_CPU_FLAGS = ["--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=all",
                  "--iree-llvmcpu-target-cpu=host"]

# The programs, with {D} the number of devices; `tessera.sharding` attributes as in
# benchmarks/ifrt/program_benchmark.cc (stripped for IREE).
MATMUL = """
func.func @main(%x: tensor<{M}x{K}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}},
                %w: tensor<{K}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P()"}})
    -> (tensor<{M}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}}) {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{M}x{N}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %y = linalg.matmul ins(%x, %w : tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32>)
                     outs(%acc : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  return %y : tensor<{M}x{N}xf32>
}}
"""

MLP = """
func.func @main(%x: tensor<{M}x{K}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}},
                %w: tensor<{K}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P()"}},
                %b: tensor<{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P()"}})
    -> (tensor<{M}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}}) {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{M}x{N}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %h = linalg.matmul ins(%x, %w : tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32>)
                     outs(%acc : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %bias = linalg.broadcast ins(%b : tensor<{N}xf32>) outs(%e : tensor<{M}x{N}xf32>) dimensions = [0]
  %sum = arith.addf %h, %bias : tensor<{M}x{N}xf32>
  %y = arith.maximumf %sum, %acc : tensor<{M}x{N}xf32>
  return %y : tensor<{M}x{N}xf32>
}}
"""

ELEMENTWISE = """
func.func @main(%x: tensor<{M}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}})
    -> (tensor<{M}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}}) {{
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<{M}x{N}xf32>
  %y = linalg.map ins(%x : tensor<{M}x{N}xf32>) outs(%e : tensor<{M}x{N}xf32>)
    (%in: f32, %out: f32) {{
      %m = arith.mulf %in, %two : f32
      %a = arith.addf %m, %one : f32
      linalg.yield %a : f32
    }}
  return %y : tensor<{M}x{N}xf32>
}}
"""

ROWSUM = """
func.func @main(%x: tensor<{M}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}})
    -> (tensor<{M}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x)"}}) {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{M}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<{M}xf32>) -> tensor<{M}xf32>
  %y = linalg.reduce ins(%x : tensor<{M}x{N}xf32>) outs(%acc : tensor<{M}xf32>) dimensions = [1]
    (%in: f32, %init: f32) {{
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }}
  return %y : tensor<{M}xf32>
}}
"""


# A case: its program template, the sizes filled in, its inputs' shapes and PartitionSpecs, the
# numpy reference, the length of its reductions (for the tolerance), the bytes a call reads (for
# GB/s; None: not printed).
Case = collections.namedtuple("Case", "program sizes shapes specs reference k bytes_read")


def case_spec(case, quick):
    """The Case named `case`; --quick shrinks the sizes."""
    if case.startswith("matmul"):
        n = int(case[len("matmul"):]) // (8 if quick else 1)
        return Case(MATMUL, dict(M=n, K=n, N=n), [(n, n), (n, n)], ["P(x,None)", "P()"],
                    lambda x, w: x @ w, n, None)
    if case in ("mlp", "tiny"):
        m, k, n = (16, 32, 64) if case == "tiny" else (32, 128, 128) if quick else (256, 2048, 2048)
        return Case(MLP, dict(M=m, K=k, N=n), [(m, k), (k, n), (n,)], ["P(x,None)", "P()", "P()"],
                    lambda x, w, b: np.maximum(x @ w + b, 0), k, None)
    m = n = 256 if quick else 4096
    if case == "elementwise":
        return Case(ELEMENTWISE, dict(M=m, N=n), [(m, n)], ["P(x,None)"], lambda x: x * 2 + 1, 1,
                    None)
    if case == "rowsum":
        return Case(ROWSUM, dict(M=m, N=n), [(m, n)], ["P(x,None)"], lambda x: x.sum(axis=1), n,
                    m * n * 4)
    raise ValueError(f"unknown case {case!r}")


def shape_text(case, quick):
    return " ".join("x".join(map(str, s)) for s in case_spec(case, quick).shapes)


def strip_shardings(program):
    """The program without Tessera's `{tessera.sharding = "..."}` attributes (for IREE)."""
    return re.sub(r'\s*\{tessera\.sharding = "[^"]*"\}', "", program)


def median_seconds(call, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def warm_up(call, most_calls=20, most_seconds=1.0):
    """Calls `call` until `most_calls` calls or `most_seconds` have passed (at least once): IREE's
    Vulkan driver takes some ten calls to settle (its first calls of a tiny program on lavapipe
    take 4-36 ms, later ones 0.1 ms)."""
    start = time.perf_counter()
    for _ in range(most_calls):
        call()
        if time.perf_counter() - start > most_seconds:
            break


def memcpy_floor_seconds(nbytes, repeat):
    """The median time of np.copyto of `nbytes` into a preallocated array (pages touched first)."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.zeros_like(src)
    np.copyto(dst, src)
    return median_seconds(lambda: np.copyto(dst, src), repeat)


def check(got, want, k):
    """None when `got` matches the float64 reference `want`, else what is wrong. Tolerances grow
    with the reduction length k (f32 sums of k terms of magnitude about 1)."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    atol = 1e-5 * max(k, 1)
    if np.allclose(got, want, rtol=1e-4, atol=atol):
        return None
    err = np.abs(got.astype(np.float64) - want)
    where = tuple(int(i) for i in np.unravel_index(err.argmax(), err.shape))
    return f"wrong result: max |error| {err.max():.3g} at {where} (atol {atol:.3g}, rtol 1e-4)"


# ---------------------------------------------------------------------------------------------
# Workers: one system, one configuration, one round; one "RESULT {json}" line per case.


class TesseraRunner:
    def __init__(self, config, python_path):
        sys.path.insert(0, python_path)
        import tessera
        if config == "lavapipe":
            self.client = tessera.Client(cpu_devices=0, vulkan="required")
        else:
            self.client = tessera.Client(cpu_devices=int(config[3:]), vulkan="off")
        self.devices = len(self.client.devices)

    def prepare(self, template, sizes, specs, inputs):
        """() -> outputs as numpy, and the timed call."""
        d = self.devices
        exe = self.client.compile(template.format(D=d, **sizes))
        arrays = [self.client.put(a, f"mesh{{x={d}}} {s}") for a, s in zip(inputs, specs)]

        def call():
            for out in exe.execute(arrays):
                out.block_until_ready()

        return lambda: exe.execute(arrays)[0].to_numpy(), call


class IreeRunner:
    def __init__(self, config, vulkan_target):
        import iree.compiler
        import iree.runtime as rt
        self.rt, self.compiler = rt, iree.compiler
        if config == "lavapipe":
            self.backend, self.flags = "vulkan-spirv", [f"--iree-vulkan-target={vulkan_target}"]
            self.config = rt.Config("vulkan")
        else:
            # Before the driver is created: the task system's worker count.
            rt.flags.parse_flags(f"--task_topology_max_group_count={int(config[3:])}")
            self.backend, self.flags = "llvm-cpu", IREE_CPU_FLAGS
            self.config = rt.Config("local-task")

    def prepare(self, template, sizes, specs, inputs):
        rt = self.rt
        vmfb = self.compiler.compile_str(strip_shardings(template.format(D=1, **sizes)),
                                         target_backends=[self.backend], input_type="none",
                                         extra_args=self.flags)
        ctx = rt.SystemContext(config=self.config)
        ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
        main = ctx.modules.module["main"]
        args = [rt.asdevicearray(self.config.device, a) for a in inputs]
        return lambda: self.to_numpy(main(*args)), lambda: main(*args)

    def to_numpy(self, array):
        """DeviceArray.to_host(), or a copy through a staging buffer where that fails: IREE 3.13's
        Vulkan driver refuses to import numpy's (not 4096-byte aligned) memory for the copy."""
        try:
            return np.array(array.to_host())
        except ValueError:
            rt = self.rt
            device, view = self.config.device, array._buffer_view
            source = view.get_buffer()
            staging = device.allocator.allocate_buffer(
                memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
                allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
                allocation_size=source.byte_length())
            sem = device.create_semaphore(0)
            device.queue_copy(source, staging, wait_semaphores=rt.HalFence.create_at(sem, 0),
                              signal_semaphores=rt.HalFence.create_at(sem, 1))
            rt.HalFence.create_at(sem, 1).wait()
            return np.array(staging.map().asarray(view.shape, array.dtype))


def error_summary(e):
    """The exception's type and its first diagnostic ("...: error: ..."; IREE's compiler errors
    start with lines naming the tool and its exit code), else its first line."""
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()] or [""]
    said = [line for line in lines if "error:" in line.lower()]
    return f"{type(e).__name__}: {(said or lines)[0][:300]}"


def run_worker(args):
    """Times each case once (a median of --repeat calls) and prints its RESULT line."""
    if args.worker == "tessera":
        runner = TesseraRunner(args.config, args.tessera_python)
    else:
        runner = IreeRunner(args.config, args.vulkan_target)
    rng = np.random.default_rng(0)
    for case in args.cases.split(","):
        spec = case_spec(case, args.quick)
        inputs = [rng.uniform(-1, 1, s).astype(np.float32) for s in spec.shapes]
        result = {"case": case}
        try:
            t = time.perf_counter()
            run_once, call = runner.prepare(spec.program, spec.sizes, spec.specs, inputs)
            result["compile_s"] = time.perf_counter() - t
            want = spec.reference(*[a.astype(np.float64) for a in inputs])
            wrong = check(run_once(), want, spec.k)
            if wrong:
                result["error"] = wrong
            else:
                warm_up(call)
                result["seconds"] = median_seconds(call, args.repeat)
                if spec.bytes_read:
                    result["floor_s"] = memcpy_floor_seconds(spec.bytes_read, args.repeat)
        except Exception as e:  # a compile or run failure of one case: report it, go on
            result["error"] = error_summary(e)
        print("RESULT " + json.dumps(result), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# The parent: rounds of worker processes, then one table per configuration.


def worker_round(args, system, config, cases):
    """{case: result dict} of one worker process; a crashed worker gives every case its error."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", system, "--config", config,
           "--cases", ",".join(cases), "--repeat", str(args.repeat), "--vulkan-target",
           args.vulkan_target, "--tessera-python", args.tessera_python] + (
               ["--quick"] if args.quick else [])
    env = dict(os.environ)
    if os.path.exists(LAVAPIPE_ICD):
        env.setdefault("VK_DRIVER_FILES", LAVAPIPE_ICD)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {case: {"case": case, "error": f"worker ran past --timeout {args.timeout:g} s"}
                for case in cases}
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            results[r["case"]] = r
    if proc.returncode != 0:
        status = (f"killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
                  else f"exit status {proc.returncode}")
        tail = "; ".join([status] + proc.stderr.strip().splitlines()[-1:])
        for case in cases:
            results.setdefault(case, {"case": case, "error": f"worker failed: {tail[:300]}"})
    return results


def ratio_text(ratios, width):
    """The median ratio with the rounds' range, e.g. "1.82x (1.79-1.90)"."""
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}x".rjust(width)
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})".rjust(width)


def gbps(nbytes, seconds):
    return nbytes / seconds / 1e9


def print_config(args, config, cases, rounds):
    """One table for `config` from rounds = [{system: {case: result}}, ...]."""
    rounds_text = f"{args.rounds} round" + ("s taking turns" if args.rounds > 1 else "")
    print(f"\n{config}: median of {args.repeat} calls a round, {rounds_text}")
    print(f"{'case':12} {'shapes':24} {'Tessera ms':>11} {'IREE ms':>10} "
          f"{'IREE/Tessera (range)':>22} {'compile ms T / I':>17}")
    failed = False
    for case in cases:
        per_round = [(r["tessera"][case], r["iree"][case]) for r in rounds]
        errors = [f"{s}: {res['error']}" for pair in per_round
                  for s, res in zip(("Tessera", "IREE"), pair) if "error" in res]
        shapes = shape_text(case, args.quick)
        if errors:
            failed = True
            print(f"{case:12} {shapes:24} FAILED {sorted(set(errors))[0]}")
            for e in sorted(set(errors))[1:]:
                print(f"{'':37} {e}")
            continue
        ts = [t["seconds"] for t, _ in per_round]
        its = [i["seconds"] for _, i in per_round]
        ratios = [i / t for t, i in zip(ts, its)]
        compile_ms = (f"{statistics.median(t['compile_s'] for t, _ in per_round) * 1e3:.0f} / "
                      f"{statistics.median(i['compile_s'] for _, i in per_round) * 1e3:.0f}")
        print(f"{case:12} {shapes:24} {statistics.median(ts) * 1e3:11.3f} "
              f"{statistics.median(its) * 1e3:10.3f} {ratio_text(ratios, 22)} {compile_ms:>17}")
        nbytes = case_spec(case, args.quick).bytes_read
        if nbytes:
            for name, index in (("Tessera", 0), ("IREE", 1)):
                res = [pair[index] for pair in per_round]
                got = statistics.median(gbps(nbytes, r["seconds"]) for r in res)
                floor = statistics.median(gbps(nbytes, r["floor_s"]) for r in res)
                target = "" if config == "lavapipe" else " (target: >= 80%)"
                print(f"{'':12}   {name:7} {got:6.2f} GB/s read; memcpy floor in its process "
                      f"{floor:6.2f} GB/s; {got / floor:4.0%} of it{target}")
    return failed


def header(args):
    versions = {p: importlib.metadata.version(p)
                for p in ("iree-base-compiler", "iree-base-runtime", "numpy")}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"IREE {versions['iree-base-compiler']} (compiler) / {versions['iree-base-runtime']} "
          f"(runtime), numpy {versions['numpy']}, Python {sys.version.split()[0]}; "
          f"{os.cpu_count()} cores, load average {load}"
          + ("; --quick sizes (smoke test)" if args.quick else ""))
    print(f"IREE CPU: llvm-cpu {' '.join(IREE_CPU_FLAGS)}, driver local-task with "
          f"--task_topology_max_group_count=N (N = 1 or 2); IREE lavapipe: vulkan-spirv "
          f"--iree-vulkan-target={args.vulkan_target}, driver vulkan; "
          f"VK_DRIVER_FILES={os.environ.get('VK_DRIVER_FILES', LAVAPIPE_ICD)}")
    print("Tessera: linalg programs with tessera.sharding (cpu2: rows over 2 CPU devices, weights "
          "replicated), Client.compile + execute + block_until_ready. Ratio above 1: Tessera "
          "faster.")


def run_parent(args):
    configs = args.configs.split(",")
    cases = args.cases.split(",")
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"unknown configuration {c!r}; choose from {','.join(CONFIGS)}")
    for c in cases:
        if c not in CASES:
            sys.exit(f"unknown case {c!r}; choose from {','.join(CASES)}")
    header(args)
    failed = False
    for config in configs:
        rounds = []
        for i in range(args.rounds):
            order = ("tessera", "iree") if i % 2 == 0 else ("iree", "tessera")
            rounds.append({system: worker_round(args, system, config, cases) for system in order})
        failed |= print_config(args, config, cases, rounds)
    return 1 if failed else 0


def require_iree():
    try:
        import iree.compiler  # noqa: F401
        import iree.runtime  # noqa: F401
    except ImportError as e:
        sys.exit(f"IREE is not importable ({e}). Install it into the build's venv, from the "
                 f"repository root:\n    {INSTALL_HINT}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=7, help="calls a round (their median is kept)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    ap.add_argument("--vulkan-target", default="llvmpipe",
                    help="IREE's --iree-vulkan-target for lavapipe (or vp_android_baseline_2022)")
    ap.add_argument("--tessera-python", default=os.path.join(REPO, "build", "python"))
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per worker process")
    ap.add_argument("--worker", choices=("tessera", "iree"), help=argparse.SUPPRESS)
    ap.add_argument("--config", choices=CONFIGS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rounds < 1 or args.repeat < 1:
        ap.error("--rounds and --repeat must be at least 1")
    require_iree()
    if args.worker:
        return run_worker(args)
    return run_parent(args)


if __name__ == "__main__":
    sys.exit(main())
