#ifndef TESSERA_BINDINGS_PJRT_TESSERA_PJRT_H_
#define TESSERA_BINDINGS_PJRT_TESSERA_PJRT_H_

/* libtessera_pjrt.so: Tessera as a PJRT C API plugin. Besides GetPjrtApi() (pjrt_c_api.h) it
 * exports the one hook its embedder fills: the reader of StableHLO portable artifacts.
 *
 * JAX hands PJRT_Client_Compile a portable artifact (MLIR bytecode of the VHLO dialect). Tessera
 * reads StableHLO in MLIR's generic text form, and no Debian package has the StableHLO dialect
 * that turns one into the other; jaxlib, in the same process, has it. The Python package's
 * jax_plugins entry point (tessera.jax_plugin) registers a reader that calls jaxlib's
 * deserialize_portable_artifact before JAX loads the plugin. A native reader can be registered
 * the same way.
 *
 *   void MyReader(const char* bytes, size_t size, void* reply) {
 *     std::string text = ...;   // the module in generic op form
 *     TesseraPjrt_ReplyProgram(reply, 1, text.data(), text.size());   // or 0 and a message
 *   }
 *   TesseraPjrt_SetProgramReader(MyReader);
 *
 * The reader is called from the thread that compiles, once per PJRT_Client_Compile of bytecode;
 * it must call TesseraPjrt_ReplyProgram exactly once before it returns (a reader that does not
 * reply fails the compile with INTERNAL). Text programs (not bytecode) need no reader. */

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*TesseraPjrt_ProgramReader)(const char* bytes, size_t size, void* reply);

/* Registers the reader (NULL removes it). Thread-safe. */
void TesseraPjrt_SetProgramReader(TesseraPjrt_ProgramReader reader);

/* The reader's answer: ok=1 and the program's generic text, or ok=0 and an error message. The
 * text is copied. */
void TesseraPjrt_ReplyProgram(void* reply, int ok, const char* text, size_t size);

/* The StableHLO versions the reader reads (e.g. "1.13.0"), announced to the framework as the
 * plugin attributes stablehlo_current_version / stablehlo_minimum_version so that it serializes
 * programs in a version the reader knows. Call before the framework loads the plugin; NULL or
 * "" leaves an attribute out. */
void TesseraPjrt_SetStableHloVersions(const char* current, const char* minimum);

/* What the plugin's clients have moved since they were created, summed over the clients alive
 * in the process (JAX makes one): counters[0..7] = host-to-device bytes and copies,
 * device-to-device bytes and copies, device-to-host bytes and copies, within-device bytes and
 * copies. Writes min(n, 8) counters; returns the number of live clients. Thread-safe. */
int TesseraPjrt_TransferStats(long long* counters, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_BINDINGS_PJRT_TESSERA_PJRT_H_ */
