# Runs the fa tool once and checks what a user would see: the exit code, a pattern in its output
# (stdout and stderr together), and optionally a pattern in a file it wrote.
#   cmake -DFA=<fa> -DARGS="run^^--decode^^..." -DEXIT=<code> -DREGEX=<pattern>
#         [-DFILE=<path> -DFILE_REGEX=<pattern>] -P expect.cmake
# ARGS is separated by "^^" because ctest would split a ";" list and options contain commas.
string(REPLACE "^^" ";" args "${ARGS}")
if(DEFINED FILE)
  file(REMOVE "${FILE}")
endif()
execute_process(COMMAND "${FA}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT "${rc}" STREQUAL "${EXIT}")
  message(FATAL_ERROR "fa exited with ${rc}, expected ${EXIT}")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "fa's output does not match '${REGEX}'")
endif()
if(DEFINED FILE)
  if(NOT EXISTS "${FILE}")
    message(FATAL_ERROR "fa did not write ${FILE}")
  endif()
  file(READ "${FILE}" content)
  if(NOT content MATCHES "${FILE_REGEX}")
    message(FATAL_ERROR "${FILE} does not match '${FILE_REGEX}':\n${content}")
  endif()
endif()
