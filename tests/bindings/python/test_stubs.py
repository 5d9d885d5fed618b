"""The type stubs name everything the module defines, with a docstring on each public name."""
import inspect
import pathlib
import re

import tessera
from tessera import _tessera

STUB = pathlib.Path(tessera.__file__).with_name("_tessera.pyi")


def public_names():
    for name, value in vars(_tessera).items():
        if name.startswith("_"):  # private helpers (stubgen leaves them out)
            continue
        yield name, value
        if inspect.isclass(value):
            for member in vars(value):
                if not member.startswith("_") or member in ("__array__", "__dlpack__"):
                    yield f"{name}.{member}", getattr(value, member)


def test_stub_names_every_public_name():
    stub = STUB.read_text()
    defined = set(re.findall(r"^\s*(?:def|class)\s+(\w+)", stub, flags=re.M))
    missing = [n for n, _ in public_names() if n.split(".")[-1] not in defined]
    assert missing == [], f"not in {STUB.name} (regenerate it): {missing}"


def test_public_classes_and_functions_have_docstrings():
    for name in ("Client", "Device", "Array", "Shard", "Executable", "from_dlpack",
                 "Client.put", "Client.reshard", "Array.reshard", "Array.__dlpack__"):
        obj = tessera
        for part in name.split("."):
            obj = getattr(obj, part)
        assert obj.__doc__, name
    for name in ("Mesh", "P", "NamedSharding", "transfer_guard",
                 "transfer_guard_host_to_device"):
        assert getattr(tessera, name).__doc__, name
