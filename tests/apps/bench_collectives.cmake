# SPDX-License-Identifier: BSD-3-Clause
# skein-bench-collectives on PoCL's CPU devices (tests/apps/CMakeLists.txt includes this): the
# table (every row checked against the expected values, "#wrong" 0, exit status 0) and the
# agreement check's cost (--agreement-cost: both communicators' results checked; a wrong
# element makes the exit status 1). The figures mean nothing on CPU devices; these only show that the runs work.
if(NOT TARGET skein-bench-collectives)
  return()
endif()
add_test(NAME apps.skein-bench-collectives.table
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
          $<TARGET_FILE:skein-bench-collectives> --coll all_reduce -b 8 -e 4K -f 8 -n 5 -w 1
          --devices-per-rank 1)
add_test(NAME apps.skein-bench-collectives.agreement-cost
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
          $<TARGET_FILE:skein-bench-collectives> --coll all_reduce --backend mpi -b 8 -n 20 -w 2
          --devices-per-rank 1 --agreement-cost 3)
set_tests_properties(apps.skein-bench-collectives.table apps.skein-bench-collectives.agreement-cost
  PROPERTIES TIMEOUT 120 LABELS mpi ENVIRONMENT "${_skein_mpi_env}")
