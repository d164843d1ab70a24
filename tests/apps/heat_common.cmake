# SPDX-License-Identifier: BSD-3-Clause
# What the skein-heat test scripts share (heat_check.cmake, heat_grid_check.cmake): running the app,
# judging its exit status and output, skipping when a tool is missing, dumping and comparing fields.
# Reads MPIEXEC, HEAT, LIMIT and H5DUMP from the including script.

# heat(NAME NP [args...]): runs skein-heat on NP ranks (0: started directly, as a singleton MPI
# process: cheaper for the option checks); sets rc and out (stdout and stderr).
function(heat name np)
  if(np EQUAL 0)
    set(launcher "")
  else()
    set(launcher ${MPIEXEC} -np ${np} --oversubscribe)
  endif()
  execute_process(COMMAND ${launcher} ${HEAT} ${ARGN}
                  RESULT_VARIABLE r OUTPUT_VARIABLE o ERROR_VARIABLE o TIMEOUT ${LIMIT})
  message(STATUS "---- ${name}: ${np} rank(s): skein-heat ${ARGN}: exit ${r}\n${o}")
  if(NOT r MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${name}: skein-heat did not end within ${LIMIT} s (${r})")
  endif()
  set(rc ${r} PARENT_SCOPE)
  set(out "${o}" PARENT_SCOPE)
endfunction()

function(expect_rc name want)
  if(want STREQUAL "nonzero")
    if(rc EQUAL 0)
      message(FATAL_ERROR "${name}: skein-heat exited 0, expected a failure")
    endif()
  elseif(NOT rc EQUAL want)
    message(FATAL_ERROR "${name}: skein-heat exited ${rc}, expected ${want}")
  endif()
endfunction()

function(expect_text name text)
  string(FIND "${out}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: the output lacks '${text}'")
  endif()
endfunction()

function(need tool path)
  # h5dump: h5py does the same job where the machine has no h5dump (the GPU image).
  if(tool STREQUAL "h5dump" AND (NOT path OR NOT EXISTS "${path}") AND PYTHON)
    execute_process(COMMAND ${PYTHON} -c "import h5py" RESULT_VARIABLE r OUTPUT_QUIET ERROR_QUIET)
    if(r EQUAL 0)
      return()
    endif()
  endif()
  if(NOT path OR NOT EXISTS "${path}")
    message(STATUS "SKIP: ${tool} is missing (install it: tools/install-deps.sh)")
    cmake_language(EXIT 77)
  endif()
endfunction()

# dump(H5 BIN): the raw bytes of dataset "u", little-endian, as h5dump writes them (by h5py where
# there is no h5dump).
function(dump h5 bin)
  if(NOT EXISTS "${h5}")
    message(FATAL_ERROR "${h5} was not written")
  endif()
  if(H5DUMP AND EXISTS "${H5DUMP}")
    execute_process(COMMAND ${H5DUMP} -d /u -b LE -o "${bin}" "${h5}" RESULT_VARIABLE r OUTPUT_QUIET
                    ERROR_VARIABLE e)
  else()  # no h5dump (need() let it through): h5py writes the same little-endian bytes
    execute_process(
      COMMAND ${PYTHON} -c "import sys, h5py; u = h5py.File(sys.argv[1], 'r')['u'][...]; open(sys.argv[2], 'wb').write(u.astype(u.dtype.newbyteorder('<')).tobytes())"
              "${h5}" "${bin}"
      RESULT_VARIABLE r OUTPUT_QUIET ERROR_VARIABLE e)
  endif()
  if(NOT r EQUAL 0 OR NOT EXISTS "${bin}")
    message(FATAL_ERROR "h5dump could not read dataset u of ${h5}: ${e}")
  endif()
endfunction()

# expect_same(NAME BIN REFERENCE WHAT): BIN and REFERENCE hold the same bytes (WHAT: the reference's
# name in the messages).
function(expect_same name bin reference what)
  file(SHA256 "${bin}" got)
  file(SHA256 "${reference}" want)
  file(SIZE "${bin}" size)
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "${name}: the final field differs from ${what}'s (SHA-256 ${got}, reference ${want})")
  endif()
  message(STATUS "${name}: bit-identical to ${what} (${size} bytes)")
endfunction()
