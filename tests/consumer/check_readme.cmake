# cmake -P script: README.md must contain the consumer example verbatim (so the README's code is
# the code the consumer test builds and runs).
file(READ ${README} readme)
file(READ ${EXAMPLE} example)
string(FIND "${readme}" "${example}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "README.md does not contain ${EXAMPLE} verbatim; paste it into the README")
endif()
