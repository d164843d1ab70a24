# SPDX-License-Identifier: BSD-3-Clause
# skein-heat on a process grid (tests/apps/heat.cmake's apps.heat.grid.* tests), one per MODE:
#   run  one run on NP ranks with ARGS (--nx --ny [--nz] [--grid] [--boundary] --steps --dtype
#        [--modes] [--mode-z] [--dt-factor]): it must exit 0 with its own analytic check passed and
#        EXPECT in its output, and its heat.h5 must hold the exact discrete solution computed
#        independently by heat_grid_reference.py (which also reads it whole with h5py when h5py
#        is installed)
#   bad  runs that must fail on every rank with a message: a --grid that does not multiply to the
#        members, --grid in a wrong format, --grid with the wrong number of axes
#   cmake -DMODE=... -DMPIEXEC=... -DHEAT=... -DDIR=... -DH5DUMP=... -DPYTHON=... -DREFERENCE=...
#         [-DNP=n -DARGS=... -DEXPECT=...] -DLIMIT=seconds -P heat_grid_check.cmake
# Exits 77 (skipped) when h5dump or python3 is missing.
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")

function(heat name np)
  execute_process(COMMAND ${MPIEXEC} -np ${np} --oversubscribe ${HEAT} ${ARGN}
                  RESULT_VARIABLE r OUTPUT_VARIABLE o ERROR_VARIABLE o TIMEOUT ${LIMIT})
  message(STATUS "---- ${name}: ${np} rank(s): skein-heat ${ARGN}: exit ${r}\n${o}")
  if(NOT r MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${name}: skein-heat did not end within ${LIMIT} s (${r})")
  endif()
  set(rc ${r} PARENT_SCOPE)
  set(out "${o}" PARENT_SCOPE)
endfunction()

function(expect_text name text)
  string(FIND "${out}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: the output lacks '${text}'")
  endif()
endfunction()

function(need tool path)
  if(NOT path OR NOT EXISTS "${path}")
    message(STATUS "SKIP: ${tool} is missing (install it: tools/install-deps.sh)")
    cmake_language(EXIT 77)
  endif()
endfunction()

if(MODE STREQUAL "run")
  need(h5dump "${H5DUMP}")
  need(python3 "${PYTHON}")
  heat(run ${NP} ${ARGS} --out "${DIR}/out" --report-every 10)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run: skein-heat exited ${rc}, expected 0")
  endif()
  expect_text(run ": passed")
  expect_text(run "${EXPECT}")
  set(h5 "${DIR}/out/heat.h5")
  if(NOT EXISTS "${h5}")
    message(FATAL_ERROR "run: ${h5} was not written")
  endif()
  execute_process(COMMAND ${H5DUMP} -d /u -b LE -o "${DIR}/u.bin" "${h5}" RESULT_VARIABLE r OUTPUT_QUIET
                  ERROR_VARIABLE e)
  if(NOT r EQUAL 0)
    message(FATAL_ERROR "h5dump could not read dataset u of ${h5}: ${e}")
  endif()
  # The problem's parameters from ARGS (the app's defaults otherwise).
  set(p_--nx 256)
  set(p_--ny 256)
  set(p_--nz 0)
  set(p_--steps 1000)
  set(p_--dtype float64)
  set(p_--modes "1,1")
  set(p_--mode-z 1)
  set(p_--dt-factor 0.2)
  set(p_--boundary open)
  set(key "")
  foreach(a ${ARGS})
    if(key MATCHES "^--")
      set(p_${key} "${a}")
    endif()
    set(key "${a}")
  endforeach()
  string(REPLACE "," ";" modes "${p_--modes}")
  list(GET modes 0 kx)
  list(GET modes 1 ky)
  execute_process(COMMAND ${PYTHON} ${REFERENCE} "${DIR}/u.bin" ${p_--nx} ${p_--ny} ${p_--nz} ${p_--steps}
                          ${p_--dtype} ${kx} ${ky} ${p_--mode-z} ${p_--dt-factor} ${p_--boundary} "${h5}"
                  RESULT_VARIABLE r OUTPUT_VARIABLE o ERROR_VARIABLE o)
  message(STATUS "run: ${o}")
  if(NOT r EQUAL 0)
    message(FATAL_ERROR "run: heat.h5 does not hold the exact discrete solution")
  endif()

elseif(MODE STREQUAL "bad")
  # NAME|ARGS|TEXT: each on 4 ranks (4 members), exit non-zero, TEXT in the output.
  foreach(case
      "not_members|--nx;8;--ny;8;--nz;8;--grid;3x1x1;--steps;1|multiply"
      "format|--nx;8;--ny;8;--nz;8;--grid;2by2;--steps;1|is not a process grid of 3 axes"
      "axes|--nx;8;--ny;8;--nz;8;--grid;2x2;--steps;1|is not a process grid of 3 axes")
    string(REPLACE "|" ";" fields "${case}")
    list(GET fields 0 name)
    list(GET fields -1 text)
    list(LENGTH fields n)
    math(EXPR n "${n} - 2")
    list(SUBLIST fields 1 ${n} args)
    heat(${name} 4 ${args})
    if(rc EQUAL 0)
      message(FATAL_ERROR "${name}: skein-heat exited 0, expected a failure")
    endif()
    expect_text(${name} "${text}")
  endforeach()
else()
  message(FATAL_ERROR "heat_grid_check.cmake: unknown MODE '${MODE}'")
endif()
