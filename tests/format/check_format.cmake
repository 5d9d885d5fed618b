# cmake -P script: every C++ file git tracks is formatted as `make format` leaves it
# (clang-format, .clang-format at the root: Google style).
#   -DSOURCE_ROOT=<repository> -DCLANG_FORMAT=<clang-format> -DGIT=<git>
# Exits 77 (ctest: skipped) outside a git checkout, where the list of files is unknown.
if(NOT EXISTS ${SOURCE_ROOT}/.git)
  message("skipped: ${SOURCE_ROOT} is not a git checkout")
  cmake_language(EXIT 77)
endif()
execute_process(COMMAND ${GIT} ls-files *.h *.cc
                WORKING_DIRECTORY ${SOURCE_ROOT}
                OUTPUT_VARIABLE files OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "git ls-files failed (${rc})")
endif()
string(REPLACE "\n" ";" files "${files}")
list(LENGTH files count)
execute_process(COMMAND ${CLANG_FORMAT} --dry-run -Werror ${files}
                WORKING_DIRECTORY ${SOURCE_ROOT}
                ERROR_VARIABLE complaints RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${complaints}\nnot clang-formatted (see above): run `make format`")
endif()
message("${count} files are clang-formatted")
