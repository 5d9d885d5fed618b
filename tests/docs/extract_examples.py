#!/usr/bin/env python3
"""Extracts the C++ examples of docs/*.md into translation units, and checks none was missed.

  extract_examples.py extract DOCS_DIR OUT_DIR   writes OUT_DIR/*.cc and OUT_DIR/manifest.txt
  extract_examples.py check DOCS_DIR MANIFEST    fails when a C++ block of the docs is not in the
                                                 manifest (edited since the build, or fenced in a
                                                 way the extractor does not read)

Fences (the first word is the language, as Markdown renderers read it):
  ```cpp            a snippet: compiled as the body of a function that returns absl::Status, with
                    `using namespace tessera;` and the names of docs_example_prelude.h in scope
                    (client, array, arrays, specs, data, host, dtype, shape, sharding, devices)
  ```cpp (client)   the same (transfer-guard.md's name for examples that need a client)
  ```cpp (program)  a whole file with `int main()`: compiled on its own, and run by the test
  ```cpp (file)     a whole file without main (helpers, classes): compiled on its own
docs/transfer-guard.md's plain ```cpp blocks are compiled by tests/guard/docs_examples_test.cc and
skipped here; its ```cpp (client) blocks are extracted like every other.
"""

import hashlib
import os
import re
import sys

SKIP_PLAIN = {"transfer-guard.md"}
STRICT = re.compile(r"^(\s*)```cpp(?:\s+\((client|program|file)\))?\s*$")
LOOSE = re.compile(r"^\s*(```|~~~)\s*\{?\s*\.?(c\+\+|cpp|cc|cxx|hpp|h)(?![A-Za-z0-9_])", re.IGNORECASE)
CLOSE = re.compile(r"^\s*```\s*$")


def blocks(path):
    """Yields (line, kind, code) for each strict C++ block; kind: snippet, client, program, file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = STRICT.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        kind = m.group(2) or "snippet"
        start = i + 1
        j = start
        while j < len(lines) and not CLOSE.match(lines[j]):
            j += 1
        code = "\n".join(l[indent:] if l[:indent].strip() == "" else l for l in lines[start:j])
        yield start + 1, kind, code  # 1-based line of the first line of code
        i = j + 1


def loose_fences(path):
    with open(path, encoding="utf-8") as f:
        return [n + 1 for n, l in enumerate(f.read().split("\n")) if LOOSE.match(l)]


def digest(code):
    return hashlib.sha1(code.encode("utf-8")).hexdigest()[:16]


def wanted(doc, kind):
    return not (doc in SKIP_PLAIN and kind == "snippet")


def ident(doc):
    return re.sub(r"[^A-Za-z0-9]", "_", doc[:-3])


def extract(docs_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    manifest, programs, written = [], [], set()
    for doc in sorted(os.listdir(docs_dir)):
        if not doc.endswith(".md"):
            continue
        path = os.path.abspath(os.path.join(docs_dir, doc))
        snippets = []
        for line, kind, code in blocks(path):
            if not wanted(doc, kind):
                continue
            manifest.append(f"{doc}\t{line}\t{kind}\t{digest(code)}")
            name = f"{ident(doc)}_{line}"
            if kind in ("snippet", "client"):
                snippets.append(
                    f"// docs/{doc}:{line}\n"
                    f"[[maybe_unused]] absl::Status Example_{name}(DocsExampleContext& ctx) {{\n"
                    f"  using namespace tessera;\n  DOCS_EXAMPLE_NAMES(ctx)\n  {{\n"
                    f"#line {line} \"{path}\"\n{code}\n  }}\n  return absl::OkStatus();\n}}\n")
            else:
                body = code
                if kind == "program":
                    body, n = re.subn(r"\bint\s+main\s*\(", f"int docs_program_{name}(", code)
                    if n != 1:
                        sys.exit(f"docs/{doc}:{line}: a (program) block needs one `int main(`")
                    programs.append(name)
                out = os.path.join(out_dir, f"example_{name}.cc")
                write(out, f"// Generated from docs/{doc}:{line}. Do not edit.\n"
                           f"#line {line} \"{path}\"\n{body}\n")
                written.add(out)
        if snippets:
            out = os.path.join(out_dir, f"snippets_{ident(doc)}.cc")
            write(out, f"// Generated from docs/{doc}. Do not edit.\n"
                       "#include \"tests/docs/docs_example_prelude.h\"\n\n"
                       f"namespace docs_examples_{ident(doc)} {{\n\n" + "\n".join(snippets) +
                       "\n}  // namespace\n")
            written.add(out)
    runner = ["// Generated: runs every ```cpp (program) block of docs/. Do not edit.",
              "#include \"gtest/gtest.h\"", ""]
    runner += [f"int docs_program_{p}();" for p in programs]
    runner += [""] + [f"TEST(DocsPrograms, {p}) {{ EXPECT_EQ(docs_program_{p}(), 0); }}"
                      for p in programs]
    if not programs:
        runner.append("TEST(DocsPrograms, None) {}")
    out = os.path.join(out_dir, "programs_test.cc")
    write(out, "\n".join(runner) + "\n")
    written.add(out)
    write(os.path.join(out_dir, "manifest.txt"), "\n".join(manifest) + "\n")
    for stale in os.listdir(out_dir):
        p = os.path.join(out_dir, stale)
        if stale.endswith(".cc") and p not in written:
            os.remove(p)


def write(path, text):
    """Writes only when the text changed (keeps the build incremental)."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def check(docs_dir, manifest_path):
    with open(manifest_path, encoding="utf-8") as f:
        built = {tuple(l.split("\t")) for l in f.read().split("\n") if l}
    errors, count = [], 0
    for doc in sorted(os.listdir(docs_dir)):
        if not doc.endswith(".md"):
            continue
        path = os.path.join(docs_dir, doc)
        strict = list(blocks(path))
        strict_lines = {line - 1 for line, _, _ in strict}
        for fence in loose_fences(path):
            if fence not in strict_lines:
                errors.append(f"docs/{doc}:{fence}: a C++ block the extractor does not read; "
                              "fence it as ```cpp, ```cpp (program) or ```cpp (file)")
        for line, kind, code in strict:
            if not wanted(doc, kind):
                continue
            count += 1
            if (doc, str(line), kind, digest(code)) not in built:
                errors.append(f"docs/{doc}:{line}: this example was not compiled by the last "
                              "build (rebuild to extract it)")
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"all {count} C++ examples of {docs_dir} were extracted and compiled")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("extract", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
