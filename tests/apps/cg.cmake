# SPDX-License-Identifier: BSD-3-Clause
# skein-cg under mpirun on PoCL devices (_skein_mpi_env: four pthread devices, OpenCL, shared out
# evenly among the ranks unless SKEIN_DEVICES_PER_RANK says otherwise). Each run checks itself (converged, true
# residual from a fresh matvec, host residual in double from the gathered x, all within the bound
# for tol and dtype; see apps/skein-cg/main.cpp) and cg_check.cmake checks its JSON summary again.
# The grids are small and odd (33 x 29 splits unevenly over 2 and 4 ranks), so each run takes a
# few seconds.
if(NOT TARGET skein-cg)
  return()
endif()

set(_cg_script ${CMAKE_CURRENT_SOURCE_DIR}/cg_check.cmake)
set(_cg_dir ${CMAKE_CURRENT_BINARY_DIR}/cg)

# skein_cg_test(NAME name NP np MODE pass|fail|deterministic|same ARGS ... [DEFS -DKEY=VALUE ...]
#               [ENV NAME=VALUE ...] [RELEASE_ONLY])
# RELEASE_ONLY: labelled no-sanitizer. The sanitizer run keeps one run of each host code path
# (2 ranks x 2 devices, BLAS dots with b = 1, the edge sizes on 1 and 4 ranks, the failures); the
# others repeat those paths on other splits and dtypes, which checks numbers, not memory.
function(skein_cg_test)
  cmake_parse_arguments(T "RELEASE_ONLY" "NAME;NP;MODE" "ARGS;DEFS;ENV" ${ARGN})
  set(labels mpi apps)
  if(T_RELEASE_ONLY)
    list(APPEND labels no-sanitizer)
  endif()
  string(REPLACE ";" "\\;" args "${T_ARGS}")
  add_test(NAME apps.cg.${T_NAME}
    COMMAND ${CMAKE_COMMAND} -DMPIEXEC=${MPIEXEC_EXECUTABLE} -DPROGRAM=$<TARGET_FILE:skein-cg>
            -DNP=${T_NP} -DMODE=${T_MODE} -DARGS=${args} -DDIR=${_cg_dir}/${T_NAME} -DLIMIT=90
            ${T_DEFS}
            -P ${_cg_script})
  # cg_check.cmake stops each run after 90 s (a run takes a few seconds, several times that under
  # the sanitizers); the deterministic tests make four runs.
  if(T_MODE STREQUAL "deterministic" OR T_MODE STREQUAL "same")
    set(timeout 400)
  else()
    set(timeout 120)
  endif()
  set(procs ${T_NP})
  if(procs LESS 1)
    set(procs 1)
  endif()
  set_tests_properties(apps.cg.${T_NAME} PROPERTIES TIMEOUT ${timeout} LABELS "${labels}"
    PROCESSORS ${procs} ENVIRONMENT "${_skein_mpi_env};${T_ENV}")
endfunction()

# 1, 2 and 4 ranks of one device each on the odd grid (the deterministic tests below run both
# dtypes on each); one rank of four devices; two ranks of two (halos between devices of one rank
# and between ranks). x* makes the error measurable: CG's tol bounds it through A's condition
# number (about 500 here).
foreach(run "1;float64;RELEASE_ONLY" "2;float32;RELEASE_ONLY" "4;float64;RELEASE_ONLY")
  list(GET run 0 np)
  list(GET run 1 dtype)
  set(release_only)
  if(run MATCHES "RELEASE_ONLY")
    set(release_only RELEASE_ONLY)
  endif()
  if(dtype STREQUAL "float64")
    set(max_error 1e-7)
  else()
    set(max_error 1e-3)
  endif()
  skein_cg_test(NAME np${np}.${dtype} NP ${np} MODE pass
    ARGS --nx 33 --ny 29 --dtype ${dtype} --report-every 20
    DEFS -DDEVICES=${np} -DMAX_ERROR=${max_error} ENV SKEIN_DEVICES_PER_RANK=1 ${release_only})
endforeach()
skein_cg_test(NAME np1x4 NP 1 MODE pass ARGS --nx 33 --ny 29 DEFS -DDEVICES=4 -DMAX_ERROR=1e-7
  ENV SKEIN_DEVICES_PER_RANK=4 RELEASE_ONLY)
skein_cg_test(NAME np2x2 NP 2 MODE pass ARGS --nx 33 --ny 29 --dtype float32 DEFS -DDEVICES=4
  -DMAX_ERROR=1e-3 ENV SKEIN_DEVICES_PER_RANK=2)
# Dots through CLBlast with b = 1 (no known x*), on a grid of 9 rows per device (--weak).
skein_cg_test(NAME np2.blas_weak NP 2 MODE pass ARGS --nx 31 --ny 9 --weak --dot blas --rhs ones
  DEFS -DDEVICES=2 ENV SKEIN_DEVICES_PER_RANK=1)
# Edge sizes: one point; one column of three rows over four devices (one has no rows).
skein_cg_test(NAME np1.one_point NP 1 MODE pass ARGS --nx 1 --ny 1 DEFS -DMAX_ERROR=1e-12)
skein_cg_test(NAME np4.one_column NP 4 MODE pass ARGS --nx 1 --ny 3
  DEFS -DDEVICES=4 -DMAX_ERROR=1e-9 ENV SKEIN_DEVICES_PER_RANK=1)
# 2^20 points (4 MiB per float32 vector), still checked on the host, with a loose tol.
skein_cg_test(NAME np2.large NP 2 MODE pass ARGS --nx 1024 --ny 1024 --dtype float32 --tol 1e-3
  --report-every 10 DEFS -DDEVICES=4 RELEASE_ONLY)

# --deterministic: the same iteration count and bit-identical x on 1, 2 and 4 ranks of one
# device and on 2 ranks of 2 devices.
foreach(dtype float32 float64)
  skein_cg_test(NAME deterministic.${dtype} NP 0 MODE deterministic
    ARGS --nx 33 --ny 29 --dtype ${dtype} DEFS -DCONFIGS=1x1,2x1,4x1,2x2 RELEASE_ONLY)
endforeach()

# The forms and the process grid (cg_solver.hpp): the pipelined form on 2 ranks of 2 devices;
# a 2 x 2 grid of one device per rank, fused; and in the deterministic mode the fused and
# unfused forms, row blocks and grids of 1 to 4 devices, bit-identical (the fused form's update
# and the unfused one's give the same bits, as the stencil's p . w and a dist::dots of it do not
# need to: the deterministic fused form takes the dots).
skein_cg_test(NAME np2x2.pipelined NP 2 MODE pass ARGS --nx 33 --ny 29 --form pipelined
  DEFS -DDEVICES=4 -DMAX_ERROR=1e-7 ENV SKEIN_DEVICES_PER_RANK=2)
skein_cg_test(NAME np4.grid2x2 NP 4 MODE pass ARGS --nx 33 --ny 29 --grid 2x2 --dtype float64
  DEFS -DDEVICES=4 -DMAX_ERROR=1e-7 ENV SKEIN_DEVICES_PER_RANK=1)
# (RELEASE_ONLY as the other deterministic tests: NP 0 gets the one-process leak check under the
# sanitizers, while its runs start several ranks, whose Open MPI blocks that check cannot tell
# from Skein's; the forms' host paths keep their sanitizer runs above and in np1.one_point.)
skein_cg_test(NAME deterministic.forms NP 0 MODE deterministic ARGS --nx 33 --ny 29 --dtype float64
  DEFS "-DCONFIGS=1x1/--form=unfused,2x1/--form=fused,2x2/--form=unfused/--grid=2x2,2x1/--form=fused/--grid=1x2"
  RELEASE_ONLY)
# The fused form's scalars on the devices (the fast mode's default on several devices: the host
# reads p . w and r . r one iteration late) against the host reading them in every iteration: the
# same iterations and bit-identical x on one placement (the same kernels' arithmetic: alpha = rr /
# pw and beta in double either way), on row blocks of 2 ranks x 2 devices and a 1 x 2 process
# grid, with the halo exchanged before the stencil, and with r . r combined on a second queue
# while x is updated (--reduce-overlap on: the same arithmetic in two passes). With the halo
# overlapped, p . w sums the interior and the edges separately: the last bits differ, so those
# runs are checked as any run, below.
skein_cg_test(NAME scalars.rows NP 0 MODE same ARGS --nx 33 --ny 29 --dtype float64
  DEFS "-DCONFIGS=2x2/--scalars=device/--halo-overlap=off,2x2/--scalars=host,2x2/--scalars=device/--halo-overlap=off/--reduce-overlap=on"
  RELEASE_ONLY)
# The reduce overlap updates x in two halves of each block's rows, the second half beside the
# next iteration's p . w combine (from p's other buffer), or after the loop when the iterations end
# at --max-iters: x bit-identical to the host's scalars on the same placement when the runs
# converge and when they stop at the limit, with blocks of one row (an empty first half) and a
# member without rows (3 rows over 4 devices), and blocks of 2 and 1 rows (5 rows).
foreach(rows 3 5)
  set(configs "2x2/--scalars=host,2x2/--scalars=device/--halo-overlap=off/--reduce-overlap=on")
  skein_cg_test(NAME scalars.reduce_overlap_rows${rows} NP 0 MODE same ARGS --nx 7 --ny ${rows}
    --dtype float64 DEFS "-DCONFIGS=${configs}" RELEASE_ONLY)
  skein_cg_test(NAME scalars.reduce_overlap_rows${rows}_stopped NP 0 MODE same ARGS --nx 7
    --ny ${rows} --dtype float64 --max-iters 6 DEFS "-DCONFIGS=${configs}" -DSTOPPED=6
    RELEASE_ONLY)
endforeach()
skein_cg_test(NAME scalars.overlap_2x2 NP 2 MODE pass ARGS --nx 33 --ny 29 --dtype float64
  --scalars device --halo-overlap on --reduce-overlap on DEFS -DDEVICES=4 -DMAX_ERROR=1e-7
  "-DEXPECT=halo overlap on, reduce overlap on" ENV SKEIN_DEVICES_PER_RANK=2)
skein_cg_test(NAME scalars.overlap_4x1 NP 4 MODE pass ARGS --nx 33 --ny 29 --dtype float32
  --scalars device --halo-overlap on DEFS -DDEVICES=4 -DMAX_ERROR=1e-3 ENV SKEIN_DEVICES_PER_RANK=1
  RELEASE_ONLY)
skein_cg_test(NAME scalars.grid NP 0 MODE same ARGS --nx 33 --ny 29 --dtype float64
  DEFS "-DCONFIGS=2x1/--scalars=device/--grid=1x2,2x1/--scalars=host/--grid=1x2" RELEASE_ONLY)
# The reduce overlap on a process grid: x's update in its own kernel may be contracted (a * b + c
# into an FMA) where the fused update's is not, so the last bits of x may differ from the runs
# above (seen on PoCL on this grid; on row blocks they are the same, scalars.rows): checked as
# any run.
skein_cg_test(NAME scalars.grid_reduce_overlap NP 2 MODE pass ARGS --nx 33 --ny 29 --dtype float64
  --scalars device --grid 1x2 --reduce-overlap on DEFS -DDEVICES=2 -DMAX_ERROR=1e-7
  "-DEXPECT=reduce overlap on" ENV SKEIN_DEVICES_PER_RANK=1 RELEASE_ONLY)
# The single-reduction form (Chronopoulos-Gear, cg_single.hpp: r . r and w . r as member values,
# one dist::combine_members per iteration): scalars on the devices with r's exchange overlapped
# (2 ranks x 2 devices) and not (4 ranks x 1, float32), on the host (one rank of four devices),
# and the edge sizes (one point; one column over four devices, one of them without rows).
skein_cg_test(NAME single.np2x2 NP 2 MODE pass ARGS --nx 33 --ny 29 --form single-reduction
  --scalars device DEFS -DDEVICES=4 -DMAX_ERROR=1e-7 ENV SKEIN_DEVICES_PER_RANK=2)
skein_cg_test(NAME single.np4 NP 4 MODE pass ARGS --nx 33 --ny 29 --dtype float32
  --form single-reduction --scalars device DEFS -DDEVICES=4 -DMAX_ERROR=1e-3
  ENV SKEIN_DEVICES_PER_RANK=1 RELEASE_ONLY)
skein_cg_test(NAME single.np1x4_host NP 1 MODE pass ARGS --nx 33 --ny 29 --form single-reduction
  --scalars host DEFS -DDEVICES=4 -DMAX_ERROR=1e-7 ENV SKEIN_DEVICES_PER_RANK=4 RELEASE_ONLY)
skein_cg_test(NAME single.one_point NP 1 MODE pass ARGS --nx 1 --ny 1 --form single-reduction
  DEFS -DMAX_ERROR=1e-12)
skein_cg_test(NAME single.one_column NP 4 MODE pass ARGS --nx 1 --ny 3 --form single-reduction
  --scalars device DEFS -DDEVICES=4 -DMAX_ERROR=1e-9 ENV SKEIN_DEVICES_PER_RANK=1)
skein_cg_test(NAME single.refused_grid NP 0 MODE fail ARGS --nx 33 --ny 29 --form single-reduction
  --grid 1x1 DEFS "-DEXPECT=--form single-reduction runs on row blocks.*drop --grid")
skein_cg_test(NAME single.refused_deterministic NP 0 MODE fail ARGS --form single-reduction
  --deterministic DEFS "-DEXPECT=--form single-reduction runs on row blocks.*drop --deterministic")
# Failures: exit status non-zero with a message saying what was wrong (NP 0: refused before MPI
# starts, so run without mpirun; the NP 2 ones show that every rank stops).
skein_cg_test(NAME not_converged NP 2 MODE fail ARGS --nx 33 --ny 29 --max-iters 3
  DEFS "-DEXPECT=did not converge.*after 3 iterations")
skein_cg_test(NAME bad.nx NP 0 MODE fail ARGS --nx 0 DEFS "-DEXPECT=--nx.*0 not in range")
skein_cg_test(NAME bad.tol_zero NP 0 MODE fail ARGS --tol 0
  DEFS "-DEXPECT=--tol.*must be in \\(0, 1\\)")
skein_cg_test(NAME bad.tol_negative NP 2 MODE fail ARGS --tol=-1e-3
  DEFS "-DEXPECT=--tol.*-1e-3.*must be in \\(0, 1\\)")
skein_cg_test(NAME bad.dtype NP 0 MODE fail ARGS --dtype float16
  DEFS "-DEXPECT=--dtype.*float16.*not in")
skein_cg_test(NAME bad.grid NP 2 MODE fail ARGS --nx 33 --ny 29 --grid 3x1
  DEFS "-DEXPECT=--grid 3x1 has 3 places for 2 devices" ENV SKEIN_DEVICES_PER_RANK=1)
add_test(NAME apps.cg.help COMMAND skein-cg --help)
set_tests_properties(apps.cg.help PROPERTIES TIMEOUT 30 LABELS apps PASS_REGULAR_EXPRESSION
  "--nx.*--ny.*--tol.*--max-iters.*--dtype.*--report-every.*--deterministic.*--weak.*--json")
