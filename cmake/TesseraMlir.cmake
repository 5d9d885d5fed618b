# Finds MLIR 22 (Debian: libmlir-22-dev, llvm-22-dev) and defines tessera_mlir_deps, an interface
# target that links the shared libMLIR and libLLVM (far faster to link than the static libraries)
# and adds their headers as SYSTEM includes (they do not build warning-free under -Wextra -Werror).
find_package(MLIR REQUIRED CONFIG HINTS /usr/lib/llvm-22/lib/cmake/mlir)
if(NOT TARGET MLIR OR NOT TARGET LLVM)
  message(FATAL_ERROR "MLIR ${MLIR_VERSION} offers no shared MLIR/LLVM library targets")
endif()
add_library(tessera_mlir_deps INTERFACE)
target_include_directories(tessera_mlir_deps SYSTEM INTERFACE ${MLIR_INCLUDE_DIRS}
  ${LLVM_INCLUDE_DIRS})
separate_arguments(_tessera_llvm_defs UNIX_COMMAND "${LLVM_DEFINITIONS}")
target_compile_options(tessera_mlir_deps INTERFACE ${_tessera_llvm_defs})
target_link_libraries(tessera_mlir_deps INTERFACE MLIR LLVM)
