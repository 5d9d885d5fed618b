# cmake -P script: install this build, run the installed `tessera` and build a consumer project
# against the install, as a user would: every command runs with no LD_LIBRARY_PATH, so an
# installed binary or library that cannot find its dependencies (libMLIR, say) fails here.
# Inputs: BUILD_DIR, PROJECT_DIR, WORK_DIR, GENERATOR, SANITIZE, SOURCE_DIR, HAS_COMPILER.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message("${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
if(NOT EXISTS ${prefix}/include/tessera/tessera.h OR NOT EXISTS ${prefix}/include/tessera/ifrt/client.h)
  message(FATAL_ERROR "headers were not installed under ${prefix}/include/tessera")
endif()
# The installed command-line tool starts, lists the devices and runs a program.
if(EXISTS ${prefix}/bin/tessera)
  run(${prefix}/bin/tessera info --devices cpu:4)
  if(HAS_COMPILER)
    run(${prefix}/bin/tessera run ${SOURCE_DIR}/examples/mlp2_megatron.mlir --devices cpu:4
        --repeat 2)
  endif()
endif()
# A sanitized build's libraries need the consumer to link the same sanitizer runtime.
set(flags "")
if(SANITIZE STREQUAL "address")
  set(flags "-fsanitize=address,undefined")
elseif(SANITIZE STREQUAL "thread")
  set(flags "-fsanitize=thread")
endif()
run(${CMAKE_COMMAND} -S ${PROJECT_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${flags}"
    -DTESSERA_HAS_COMPILER=${HAS_COMPILER})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/readme_example)
if(HAS_COMPILER)
  run(${WORK_DIR}/build/compile_example ${SOURCE_DIR}/examples/mlp2_megatron.mlir)
endif()
