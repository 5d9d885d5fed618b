#!/usr/bin/env python3
"""Proves the layer rules of ARCHITECTURE.md by reading every #include of the tree.

    check_layering.py <source root> [--expect <file>]

Every C/C++ source under the root is checked (build folders, hidden folders and
tests/layering/testdata excepted). The rules:

- layers: each folder includes only the repository folders below it:
      tools/, bindings/  >  backends/ (and tessera.h)  >  compiler/  >  ifrt/  >  sharding/, guard/
      >  base/
  base/ includes only itself, Abseil and the standard library; sharding/ and guard/ only
  themselves, base/, Abseil and the standard library (not each other);
  tools/ and bindings/ do not include each other, nor one binding another (bindings/python/ not
  bindings/c/); the library never includes tests/ or benchmarks/;
- public API only: tools/ and bindings/ include nothing of ifrt/runtime/, ifrt/spi/ or backends/
  but backends/client_factory.h;
- platform headers, each only in its home:
      MLIR/LLVM (mlir/, llvm/, llvm-c/)   compiler/ and backends/cpu/kernel_loader*
      MPI (mpi.h)                          backends/mpi/
      Python (Python.h, nanobind/)         bindings/python/
      oneTBB (tbb/, oneapi/)               backends/
      Vulkan (vulkan/, vk_*.h)             backends/vulkan/
      PJRT (xla/pjrt/c/pjrt_c_api.h)       bindings/pjrt/
  A test or benchmark counts as the folder it mirrors (tests/backends/vulkan/ as backends/vulkan/)
  for the platform rules; the layer and public-API rules do not apply to tests and benchmarks.

Prints every violation as `path:line: header: why` (sorted by path), then a summary line, and
exits 1 if there is a violation. With --expect, prints the same and exits 0 exactly when the
output equals the file's contents (used to prove that a tree made to break every rule is
reported in full).
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SUFFIXES = {".h", ".hh", ".hpp", ".c", ".cc", ".cpp"}
SKIPPED = ("tests/layering/testdata",)

# Repository folders by layer rank: a folder may include those of lower or equal rank (its own
# included); equal ranks of different folders are independent unless listed as a pair below.
# tessera.h, the umbrella header at the root, sits just above backends/.
RANK = {"base": -1, "sharding": 0, "guard": 0, "ifrt": 1, "compiler": 2, "backends": 3, "tessera.h": 3.5,
        "bindings": 4, "tools": 4, "tests": 5, "benchmarks": 5}
MAY_INCLUDE_PEER = {("tests", "benchmarks"), ("benchmarks", "tests")}

# (name, header pattern, homes: path prefixes where the header may be included, their description)
PLATFORM_RULES = [
    ("MLIR/LLVM", re.compile(r"^(mlir|llvm|llvm-c)/"),
     ("compiler/", "backends/cpu/kernel_loader"), "compiler/ and backends/cpu/kernel_loader*"),
    ("MPI", re.compile(r"^mpi\.h$"), ("backends/mpi/",), "backends/mpi/"),
    ("Python", re.compile(r"^(Python\.h$|nanobind/|pybind11/)"), ("bindings/python/",),
     "bindings/python/"),
    ("oneTBB", re.compile(r"^(tbb/|oneapi/)"), ("backends/",), "backends/"),
    ("Vulkan", re.compile(r"^(vulkan/|vk_[a-z_]+\.h$)"), ("backends/vulkan/",), "backends/vulkan/"),
    ("PJRT", re.compile(r"^xla/"), ("bindings/pjrt/",), "bindings/pjrt/"),
]
PUBLIC_BACKEND_HEADERS = ("backends/client_factory.h",)
INTERNAL_PREFIXES = ("ifrt/runtime/", "ifrt/spi/", "backends/")


def includes(path):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield number, m.group(1), m.group(2)


def folder_of(path):
    """The repository folder a path or header names ("tessera.h" for the umbrella), or None."""
    first = path.split("/", 1)[0]
    return first if first in RANK else None


def home_of(rel):
    """The library path a source stands for: tests/X and benchmarks/X mirror X."""
    parts = rel.split("/", 1)
    if parts[0] in ("tests", "benchmarks") and len(parts) == 2:
        return parts[1]
    return rel


def platform_violation(rel, header):
    home = home_of(rel)
    for name, pattern, homes, where in PLATFORM_RULES:
        if pattern.search(header) and not home.startswith(homes):
            return f"{name} header outside {where}"
    return None


PURE_LAYERS = ("base", "sharding", "guard")


def pure_violation(layer, bracket, header):
    """base/: only itself, Abseil and the standard library; sharding/ and guard/ also base/."""
    if bracket == "<":
        return None if "/" not in header else "a library header in a pure layer"
    allowed = (layer + "/", "absl/") + (("base/",) if layer != "base" else ())
    if header.startswith(allowed):
        return None
    for other in PURE_LAYERS:
        if other != layer and header.startswith(other + "/"):
            return f"{layer}/ depends on {other}/"
    if layer == "base":
        return "base/ may include only base/, Abseil and the standard library"
    return f"{layer}/ may include only {layer}/, base/, Abseil and the standard library"


def layer_violation(layer, header):
    target = folder_of(header)
    if target is None or target == layer or layer in ("tests", "benchmarks"):
        return None
    if (layer, target) in MAY_INCLUDE_PEER:
        return None
    if target in ("tests", "benchmarks"):
        return f"the library includes {target}/"
    if RANK[target] >= RANK[layer]:
        name = target if target == "tessera.h" else target + "/"
        return f"{layer}/ depends on {name}, a layer above or beside it"
    if layer in ("tools", "bindings") and header.startswith(INTERNAL_PREFIXES):
        if header not in PUBLIC_BACKEND_HEADERS:
            return f"{layer}/ may use the public API only"
    return None


def binding_violation(rel, header):
    """One binding (bindings/<name>/) including another's files."""
    if not (rel.startswith("bindings/") and header.startswith("bindings/")):
        return None
    own, other = rel.split("/")[1], header.split("/")[1]
    return None if own == other else f"bindings/{own}/ includes bindings/{other}/"


def violation(rel, bracket, header):
    """Why the source at `rel` may not include `header`, or None."""
    why = binding_violation(rel, header)
    if why:
        return why
    layer = folder_of(rel)
    if layer in PURE_LAYERS:
        return pure_violation(layer, bracket, header)
    why = platform_violation(rel, header)
    if why:
        return why
    return layer_violation(layer, header) if layer else None


def sources(root):
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        top = rel.split("/", 1)[0]
        if top.startswith((".", "build")) or rel.startswith(SKIPPED):
            continue
        yield path, rel


def check(root):
    checked, problems = 0, []
    for path, rel in sources(root):
        checked += 1
        for number, bracket, header in includes(path):
            why = violation(rel, bracket, header)
            if why:
                problems.append(f"{rel}:{number}: {header}: {why}")
    return checked, problems


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--expect"):
        print(__doc__)
        return 2
    root = pathlib.Path(argv[1]).resolve()
    checked, problems = check(root)
    if checked == 0:
        print(f"no sources found under {root}")
        return 1
    lines = problems + [f"{checked} files checked, {len(problems)} layering violations"]
    print("\n".join(lines))
    if len(argv) == 4:
        expected = pathlib.Path(argv[3]).read_text().splitlines()
        if lines != expected:
            print("\nexpected:\n" + "\n".join(expected))
            return 1
        return 0
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
