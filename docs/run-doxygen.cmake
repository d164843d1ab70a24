# SPDX-License-Identifier: BSD-3-Clause
# Runs Doxygen on DOXYFILE and fails, printing WARN_LOG, when it reports any warning.
#   cmake -DDOXYGEN=doxygen -DDOXYFILE=BUILD/docs/Doxyfile -DWARN_LOG=BUILD/docs/doxygen-warnings.log
#         -P run-doxygen.cmake
foreach(var DOXYGEN DOXYFILE WARN_LOG)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run-doxygen.cmake: pass -D${var}=...")
  endif()
endforeach()

file(REMOVE "${WARN_LOG}")
execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}" RESULT_VARIABLE status)
set(warnings "")
if(EXISTS "${WARN_LOG}")
  file(READ "${WARN_LOG}" warnings)
endif()
# WARN_AS_ERROR = FAIL_ON_WARNINGS gives a non-zero status; the log is checked as well, so that a
# Doxygen that ignores the setting still fails here.
if(NOT status EQUAL 0 OR NOT warnings STREQUAL "")
  message(FATAL_ERROR "Doxygen failed (exit status ${status}); the API reference must build "
                      "without warnings. Warnings (${WARN_LOG}):\n${warnings}\n"
                      "Header comments become documentation through docs/doxygen-filter.py: fix "
                      "the comment, or the filter when it misreads a valid comment.")
endif()
get_filename_component(dir "${DOXYFILE}" DIRECTORY)
message(STATUS "API reference: ${dir}/html/index.html")
