"""The Python examples of docs/python.md, docs/computations.md and README.md run as written."""
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(os.environ.get("TESSERA_SOURCE_ROOT",
                                   pathlib.Path(__file__).resolve().parents[3]))


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("doc, printed", [("docs/python.md", "round trip OK"),
                                          ("README.md", "round trip OK"),
                                          ("docs/computations.md", "JAX and Tessera agree")])
def test_python_examples_run(doc, printed, capsys):
    if doc == "docs/computations.md":
        pytest.importorskip("jax")
    blocks = python_blocks(ROOT / doc)
    assert blocks, f"{doc} has no ```python block"
    for code in blocks:
        exec(compile(code, doc, "exec"), {"__name__": "__doc_example__"})
    assert printed in capsys.readouterr().out
