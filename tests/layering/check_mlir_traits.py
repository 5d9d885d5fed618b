#!/usr/bin/env python3
"""Proves that no MLIR code of Tessera asks an op for a trait with hasTrait<...>(), directly or
through MLIR's pattern matchers (m_Constant, m_Zero, m_One, ...: they ask hasTrait<ConstantLike>).

    check_mlir_traits.py <source root>

Why: MLIR finds a trait's TypeID by the trait's type name, and GCC (Tessera) and Clang (Debian's
libMLIR) spell that name differently (a class local to a template). In an executable the two
copies of the lookup are merged by the dynamic linker, so hasTrait works; in the Python extension
(built with hidden visibility) its copy stays its own, gets another TypeID than the one libMLIR's
ops registered, and hasTrait answers false: Vulkan's vec4 elementwise kernels were silently not
used from Python (8x slower) while every C++ test passed. Ask libMLIR instead (its own functions,
e.g. OpTrait::hasElementwiseMappableTraits, through compiler/internal.h's IsElementwiseMappable),
or name the op (compiler/internal.h's ConstantValueOf for an arith.constant). The matchers did the
same to the plugin: zero fills of BLAS matmuls kept, collectives of constant fills not folded.

Prints each use as `path:line: text`, then a summary; exits 1 if there is one.
"""
import pathlib
import re
import sys

HAS_TRAIT = re.compile(r"\bhasTrait\s*<|\bm_[A-Z]\w*\s*\(")
SUFFIXES = {".h", ".cc", ".cpp"}
FOLDERS = ("compiler", "backends", "bindings", "tools")


def uses(root):
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                code = line.split("//", 1)[0]
                if HAS_TRAIT.search(code):
                    yield f"{path.relative_to(root).as_posix()}:{number}: {line.strip()}"


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = pathlib.Path(argv[1]).resolve()
    if not (root / "compiler").is_dir():
        print(f"no compiler/ under {root}")
        return 1
    found = list(uses(root))
    print("\n".join(found + [f"{len(found)} uses of hasTrait<...>() or a matcher (none allowed)"]))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
