#!/usr/bin/env python3
"""Proves the layer rule of ARCHITECTURE.md by reading every #include of the library.

    check_layering.py <source root>

- sharding/ and guard/ include only themselves, Abseil and the standard library (no devices);
- guard/ does not include sharding/ and sharding/ does not include guard/;
- ifrt/ includes no backend and no platform header (Vulkan, oneTBB);
- outside backends/ (and the tests and benchmarks of backends), nothing includes Vulkan or oneTBB.
Prints every violation with its file and line and exits 1 if there is one.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
PLATFORM = re.compile(r"^(vulkan/|oneapi/tbb|tbb/)")


def includes(path):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield number, m.group(1), m.group(2)


def violation(layer, bracket, header):
    """Why `layer` may not include `header`, or None."""
    if layer in ("sharding", "guard"):
        other = "guard" if layer == "sharding" else "sharding"
        if bracket == "<":
            return None if "/" not in header else "a library header in a pure layer"
        if header.startswith((layer + "/", "absl/")):
            return None
        if header.startswith(other + "/"):
            return f"{layer}/ depends on {other}/"
        return f"{layer}/ may include only {layer}/, Abseil and the standard library"
    if PLATFORM.match(header):
        return "a platform header (Vulkan, oneTBB) outside backends/"
    if layer == "ifrt" and header.startswith("backends/"):
        return "ifrt/ names a backend"
    return None


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    checked, problems = 0, []
    for layer in ("sharding", "guard", "ifrt", "tools"):
        for path in sorted((root / layer).rglob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            checked += 1
            for number, bracket, header in includes(path):
                why = violation(layer, bracket, header)
                if why:
                    problems.append(f"{path.relative_to(root)}:{number}: {header}: {why}")
    if checked == 0:
        print(f"no sources found under {root}")
        return 1
    for p in problems:
        print(p)
    print(f"{checked} files checked, {len(problems)} layering violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
