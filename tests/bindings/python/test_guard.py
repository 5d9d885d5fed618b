"""The transfer guard from Python: policies, JAX-style context managers, counters, threads."""
import threading

import numpy as np
import pytest

import tessera


def test_scope_refuses_implicit_transfers_only(client):
    x = np.ones((8, 8), np.float32)
    with tessera.transfer_guard("disallow"):
        a = client.put(x, "mesh{x=4} P(x,None)")          # explicit: allowed
        with pytest.raises(tessera.TransferGuardError,
                           match="Disallowed device-to-host transfer"):
            np.asarray(a)                                   # implicit (as in JAX)
        assert np.array_equal(a.to_numpy(), x)              # explicit again
    assert np.array_equal(np.asarray(a), x)                 # the scope has ended
    counters = client.transfer_guard_counters("d2h")
    assert counters["refused_events"] == 1 and counters["refused_bytes"] == 256


def test_refusal_is_both_value_error_and_runtime_error(client):
    with tessera.transfer_guard_host_to_device("disallow_explicit"):
        with pytest.raises(ValueError, match="INVALID_ARGUMENT: Disallowed host-to-device"):
            client.put(np.zeros(4), client.devices[0])
        with pytest.raises(RuntimeError, match="Disallowed host-to-device"):
            client.put(np.zeros(4), client.devices[0])
    assert client.transfer_guard_counters("h2d")["refused_events"] == 2


def test_per_direction_scopes_nest(client):
    a = client.put(np.zeros((4, 4)), "mesh{x=4} P(x,None)")
    with tessera.transfer_guard_device_to_device("disallow_explicit"):
        with pytest.raises(tessera.TransferGuardError, match="device-to-device"):
            a.reshard("mesh{x=4} P(None,x)")
        with tessera.transfer_guard("allow"):
            a.reshard("mesh{x=4} P(None,x)")
        with tessera.transfer_guard_device_to_host("disallow"):
            with pytest.raises(tessera.TransferGuardError):
                np.asarray(a)
            with pytest.raises(tessera.TransferGuardError):
                a.reshard("mesh{x=4} P(None,x)")
    a.reshard("mesh{x=4} P(None,x)")
    with pytest.raises(ValueError, match="level must be one of"):
        with tessera.transfer_guard("sometimes"):
            pass


def test_client_policy(client):
    strict = tessera.Client(cpu_devices=2, vulkan="off", transfer_guard="h2d=log,d2d=disallow")
    assert strict.transfer_guard_policy == "h2d=log,d2d=disallow,d2h=allow"
    a = strict.put(np.zeros(4), "mesh{x=2} P(x)")
    a.reshard("mesh{x=2} P()")  # explicit d2d: allowed under "disallow"
    strict.put(np.zeros(4), "mesh{x=2} P(x)", is_explicit=False)
    assert strict.transfer_guard_counters("h2d")["logged_events"] == 1
    strict.transfer_guard_policy = "disallow_explicit"
    with pytest.raises(tessera.TransferGuardError):
        strict.put(np.zeros(4), "mesh{x=2} P(x)")
    with pytest.raises(ValueError, match="sometimes"):
        strict.transfer_guard_policy = "sometimes"


def test_scopes_are_per_thread(client):
    errors = []

    def other_thread():
        try:
            client.put(np.zeros(4), client.devices[0], is_explicit=False)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    with tessera.transfer_guard("disallow"):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        with pytest.raises(tessera.TransferGuardError):
            client.put(np.zeros(4), client.devices[0], is_explicit=False)
    assert errors == []
