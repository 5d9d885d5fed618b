"""Tessera as a JAX backend: the ``jax_plugins`` entry point of the tessera package.

JAX calls :func:`initialize` when it discovers its plugins (``pip install`` registers the entry
point ``tessera = tessera.jax_plugin``). It registers Tessera's PJRT plugin,
``libtessera_pjrt.so`` beside this file, under the platform name ``tessera``; then

    JAX_PLATFORMS=tessera python train.py

runs ``train.py`` on Tessera's devices. The plugin's options come from the environment (read by
the plugin when JAX creates its client; docs/jax.md):

    TESSERA_CPU_DEVICES     CPU devices (default 4)
    TESSERA_VULKAN          off | if_available (default) | required
    TESSERA_TRANSFER_GUARD  the transfer guard's policy ("d2d=disallow", ...)

JAX hands the plugin programs as StableHLO portable artifacts (MLIR bytecode); Tessera's compiler
reads MLIR text. The reader registered here turns one into the other with jaxlib's own StableHLO
dialect, which is in the process already (bindings/pjrt/tessera_pjrt.h).
"""

import ctypes
import os
import threading

PLATFORM_NAME = "tessera"
# Below JAX's own CPU backend (priority 0): installing tessera never changes the default
# backend of a JAX program; JAX_PLATFORMS=tessera (or jax.devices("tessera")) chooses it.
PRIORITY = -100

_lock = threading.Lock()
_library = None
_reader = None  # the ctypes callback: must live as long as the library may call it
_context = None  # the MLIR context the reader parses in (one, reused, under _context_lock)
_context_lock = threading.Lock()

_READER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)


def library_path():
    """The path of libtessera_pjrt.so, beside this module."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libtessera_pjrt.so")


def _generic_text(bytecode):
    """The StableHLO portable artifact `bytecode` as MLIR generic text, with locations."""
    global _context
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir.dialects import stablehlo

    with _context_lock:
        if _context is None:
            _context = jax_mlir.make_ir_context()
        module = stablehlo.deserialize_portable_artifact(_context, bytecode)
        with _context:
            return module.operation.get_asm(
                print_generic_op_form=True, enable_debug_info=True, binary=False
            )


def _read_program(data, size, reply):
    try:
        text = _generic_text(ctypes.string_at(data, size)).encode()
        _library.TesseraPjrt_ReplyProgram(reply, 1, text, len(text))
    except BaseException as e:  # never let an exception unwind into C
        message = f"{type(e).__name__}: {e}".encode()
        _library.TesseraPjrt_ReplyProgram(reply, 0, message, len(message))


def _stablehlo_versions():
    """The StableHLO versions jaxlib reads: what JAX should serialize programs in."""
    try:
        from jaxlib.mlir.dialects import stablehlo

        return stablehlo.get_current_version(), stablehlo.get_minimum_version()
    except Exception:  # an older jaxlib: JAX then picks its default, which jaxlib also reads
        return None, None


def load_library():
    """Loads libtessera_pjrt.so and registers the program reader (once per process)."""
    global _library, _reader
    with _lock:
        if _library is not None:
            return _library
        path = library_path()
        if not os.path.exists(path):
            raise RuntimeError(
                f"Tessera's PJRT plugin is missing: {path} (this tessera package was built "
                "without it: its build needs the xla-cpu-pjrt wheel for pjrt_c_api.h)"
            )
        library = ctypes.CDLL(path)
        library.TesseraPjrt_SetProgramReader.argtypes = [_READER_TYPE]
        library.TesseraPjrt_SetProgramReader.restype = None
        library.TesseraPjrt_ReplyProgram.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        library.TesseraPjrt_ReplyProgram.restype = None
        library.TesseraPjrt_SetStableHloVersions.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        library.TesseraPjrt_SetStableHloVersions.restype = None
        library.TesseraPjrt_TransferStats.argtypes = [
            ctypes.POINTER(ctypes.c_longlong),
            ctypes.c_size_t,
        ]
        library.TesseraPjrt_TransferStats.restype = ctypes.c_int
        current, minimum = _stablehlo_versions()
        library.TesseraPjrt_SetStableHloVersions(
            current.encode() if current else None, minimum.encode() if minimum else None
        )
        _library = library
        _reader = _READER_TYPE(_read_program)
        library.TesseraPjrt_SetProgramReader(_reader)
        return library


def transfer_stats():
    """The bytes and copies Tessera's JAX backend has moved since JAX created it, per direction.

    {"host_to_device": (bytes, copies), "device_to_device": ..., "device_to_host": ...,
    "local": ...}: every movement Tessera made for JAX (device_put, reshards of jit arguments, a
    program's collectives, np.asarray), summed over the plugin's clients in this process.
    """
    counters = (ctypes.c_longlong * 8)()
    load_library().TesseraPjrt_TransferStats(counters, 8)
    names = ("host_to_device", "device_to_device", "device_to_host", "local")
    return {name: (counters[2 * i], counters[2 * i + 1]) for i, name in enumerate(names)}


def initialize():
    """Registers Tessera's PJRT plugin with JAX (JAX calls this through the entry point)."""
    from jax._src import xla_bridge

    load_library()
    xla_bridge.register_plugin(PLATFORM_NAME, priority=PRIORITY, library_path=library_path())
