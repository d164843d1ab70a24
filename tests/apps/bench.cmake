# SPDX-License-Identifier: BSD-3-Clause
# skein-bench's scaling mode on PoCL's 4 CPU devices (tests/apps/CMakeLists.txt includes this):
# tests/apps/bench_check_scaling.py runs it under mpirun and checks the JSON (every configuration,
# positive times, the speed-ups) and the SVG (well-formed, one point per configuration). The
# sizes are small, so each test takes a few seconds; the figures themselves mean nothing here.
find_program(_skein_bench_python python3)
if(NOT _skein_bench_python)
  message(STATUS "skein-bench scaling tests: no python3, left out")
  return()
endif()

set(_skein_bench_check ${CMAKE_CURRENT_LIST_DIR}/bench_check_scaling.py)
set(_skein_bench_dir ${CMAKE_CURRENT_BINARY_DIR}/bench)
file(MAKE_DIRECTORY ${_skein_bench_dir})
set(_skein_bench_fast --repeat 3 --warmup 1)

# skein_bench_scaling(NAME NP CONFIGS ARGS...): a scaling run on NP ranks that must give CONFIGS
# (ranks x devices per rank, in order).
function(skein_bench_scaling name np configs)
  set(json ${_skein_bench_dir}/${name}.json)
  set(svg ${_skein_bench_dir}/${name}.svg)
  set(weak)
  if("--weak" IN_LIST ARGN)
    set(weak --weak)
  endif()
  add_test(NAME apps.skein-bench.${name}
    COMMAND ${_skein_bench_python} ${_skein_bench_check} --json ${json} --svg ${svg}
            --configs ${configs} ${weak} --
            ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
            $<TARGET_FILE:skein-bench> scaling ${ARGN} ${_skein_bench_fast} --json ${json}
            --svg ${svg})
  set_tests_properties(apps.skein-bench.${name} PROPERTIES TIMEOUT 180 LABELS mpi PROCESSORS ${np}
    ENVIRONMENT "${_skein_mpi_env}")
endfunction()

# 1 rank x 1 and 2 devices, then 2 ranks x 2 devices: every device PoCL offers. An odd size,
# not a multiple of any work-group size, 4 MiB an array.
skein_bench_scaling(scaling.axpy 2 1x1,1x2,2x2 --op axpy --size 1048579 --max-devices-per-rank 2)
# One element over up to 4 devices: empty blocks on all but one.
skein_bench_scaling(scaling.sum-one 2 1x1,1x2,2x2 --op sum --size 1 --max-devices-per-rank 2)
# Weak scaling over 3 ranks with one device each (a rank count that is no power of two).
skein_bench_scaling(scaling.sum-weak 3 1x1,2x1,3x1 --op sum --size 4099 --weak
                    --max-devices-per-rank 1)
# gemm against CLBlast on an odd side; one rank driving 1, 2 and 4 devices (the default K for
# one rank: every device of the node).
skein_bench_scaling(scaling.gemm 1 1x1,1x2,1x4 --op gemm --size 33)

# Bad input fails on every rank, before any measurement, with a message that names it: more
# devices per rank than the node has for 2 ranks, and an --svg file that cannot be written.
add_test(NAME apps.skein-bench.scaling.too-many-devices
  COMMAND ${_skein_bench_python} ${_skein_bench_check} --expect-failure "3 device(s) per rank" --
          ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
          $<TARGET_FILE:skein-bench> scaling --op axpy --size 1000 --max-devices-per-rank 3
          ${_skein_bench_fast})
add_test(NAME apps.skein-bench.scaling.bad-svg-path
  COMMAND ${_skein_bench_python} ${_skein_bench_check} --expect-failure "cannot write" --
          ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
          $<TARGET_FILE:skein-bench> scaling --op axpy --size 1000
          --svg ${_skein_bench_dir}/no-such-directory/plot.svg ${_skein_bench_fast})
set_tests_properties(apps.skein-bench.scaling.too-many-devices apps.skein-bench.scaling.bad-svg-path
  PROPERTIES TIMEOUT 120 LABELS mpi ENVIRONMENT "${_skein_mpi_env}")

# The plain modes still run (and check their own result) beside the scaling mode.
add_test(NAME apps.skein-bench.axpy.np2
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe
          $<TARGET_FILE:skein-bench> axpy --size 65537 ${_skein_bench_fast}
          --json ${_skein_bench_dir}/axpy.json)
set_tests_properties(apps.skein-bench.axpy.np2 PROPERTIES TIMEOUT 120 LABELS mpi
  ENVIRONMENT "${_skein_mpi_env}")
