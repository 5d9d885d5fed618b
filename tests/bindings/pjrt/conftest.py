"""JAX with two backends for the plugin's tests: Tessera's (8 CPU devices, no Vulkan) and JAX's
own CPU backend (8 devices), the reference. Set before any test module imports jax; a test that
needs other plugin options (Vulkan devices, a guard policy) runs a script in a new process
(run_python)."""
import os
import subprocess
import sys
import textwrap

os.environ["JAX_PLATFORMS"] = "tessera,cpu"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["TESSERA_CPU_DEVICES"] = "8"
os.environ["TESSERA_VULKAN"] = "off"
os.environ.pop("TESSERA_TRANSFER_GUARD", None)

import pytest  # noqa: E402


def run_python(script, timeout=300, **env):
    """Runs `script` in a new process of this interpreter with `env` added to the environment;
    returns (exit code, stdout + stderr)."""
    full_env = dict(os.environ)
    full_env.update({k: str(v) for k, v in env.items()})
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def lavapipe_count():
    """How many Vulkan ICD files VK_DRIVER_FILES lists (the test build makes two lavapipe ones)."""
    files = [f for f in os.environ.get("VK_DRIVER_FILES", "").split(":") if f]
    return len(files) if all(os.path.exists(f) for f in files) else 0


@pytest.fixture(scope="session")
def tessera_devices():
    import jax

    return jax.devices("tessera")


@pytest.fixture(scope="session")
def cpu_devices():
    import jax

    return jax.devices("cpu")
