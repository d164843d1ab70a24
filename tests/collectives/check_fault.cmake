# SPDX-License-Identifier: BSD-3-Clause
# Runs one fault scenario of skein-collectives-fault under mpirun, with a hard limit, and checks
# how the job ended:
#   cmake -DMPIEXEC=... -DNP=... -DPROGRAM=... -DMODE=... -DLIMIT=seconds [-DEXPECT=zero|nonzero]
#         [-DOK_RANKS=n] -P check_fault.cmake
# - the job ends by itself within LIMIT seconds (a hang fails the test);
# - EXPECT=zero (the default): exit status 0, and every rank (or OK_RANKS of them) printed "ok";
#   EXPECT=nonzero: a non-zero exit status (a rank was killed);
# - nothing crashed or was reported by a sanitizer: no signal, no "terminate called", no
#   "Segmentation fault", no AddressSanitizer / LeakSanitizer / UBSan report, no "WRONG" line.
if(NOT DEFINED EXPECT)
  set(EXPECT zero)
endif()
if(NOT DEFINED OK_RANKS)
  set(OK_RANKS ${NP})
endif()
string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${MPIEXEC} -np ${NP} --oversubscribe ${PROGRAM} ${MODE}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out
  TIMEOUT ${LIMIT})
string(TIMESTAMP end "%s")
math(EXPR elapsed "${end} - ${start}")
message(STATUS "scenario ${MODE} on ${NP} ranks: exit ${rc}, after ${elapsed} s\n${out}")
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself within ${LIMIT} s (${rc})")
endif()
foreach(bad "terminate called" "Segmentation fault" "signal 11" "core dumped" "AddressSanitizer"
        "LeakSanitizer" "runtime error:" "double free" "WRONG" "exception outside the scenario")
  string(FIND "${out}" "${bad}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the output shows '${bad}'")
  endif()
endforeach()
if(EXPECT STREQUAL "nonzero")
  if(rc EQUAL 0)
    message(FATAL_ERROR "the job exited 0 although a rank was killed")
  endif()
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the job exited with status ${rc}, not 0")
endif()
string(REGEX MATCHALL "\\[rank [0-9]+\\] ok:" oks "${out}")
list(LENGTH oks n_ok)
if(n_ok LESS OK_RANKS)
  message(FATAL_ERROR "${n_ok} rank(s) said ok, ${OK_RANKS} should have")
endif()
