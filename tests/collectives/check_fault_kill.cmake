# Runs the "kill" fault scenario (a rank SIGKILLs itself during an all_reduce) and checks that
# the job ends, non-zero, well within the limit: a dead rank must never leave the others hanging.
#   cmake -DMPIEXEC=... -DNP=... -DPROGRAM=... -DLIMIT=seconds -P check_fault_kill.cmake
string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${MPIEXEC} -np ${NP} --oversubscribe ${PROGRAM} kill
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out
  TIMEOUT ${LIMIT})
string(TIMESTAMP end "%s")
math(EXPR elapsed "${end} - ${start}")
message(STATUS "exit: ${rc}, after ${elapsed} s\n${out}")
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself within ${LIMIT} s (${rc})")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the job exited 0 although a rank was killed")
endif()
