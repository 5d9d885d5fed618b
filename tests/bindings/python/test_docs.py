"""docs/python.md and README.md's Python example run as written."""
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(os.environ.get("TESSERA_SOURCE_ROOT",
                                   pathlib.Path(__file__).resolve().parents[3]))


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("doc", ["docs/python.md", "README.md"])
def test_python_examples_run(doc, capsys):
    blocks = python_blocks(ROOT / doc)
    assert blocks, f"{doc} has no ```python block"
    for code in blocks:
        exec(compile(code, doc, "exec"), {"__name__": "__doc_example__"})
    assert "round trip OK" in capsys.readouterr().out
