# SPDX-License-Identifier: BSD-3-Clause
# skein-heat on a process grid (tests/apps/heat.cmake's apps.heat.grid.* tests), one per MODE:
#   run  one run on NP ranks with ARGS (--nx --ny [--nz] [--grid] [--boundary] --steps --dtype
#        [--modes] [--mode-z] [--dt-factor] [--weak] [--devices-per-rank]): it must exit 0 with its
#        own analytic check passed and EXPECT in its output, and its heat.h5 must hold the exact
#        discrete solution computed independently by heat_grid_reference.py (which also reads it
#        whole with h5py when h5py is installed). With --weak the global grid is --nx x --ny x --nz
#        times the process grid the run prints, along every axis: the app must say so, its --json
#        must give the block per device, weak true and the speed figures (step time, bytes per
#        step, bandwidth, floor, halo mode), and the reference checks the global field
#   overlap  the run of ARGS on NP ranks twice, with --halo-exchange serial and overlapped (the
#        interior while the halos move, then the shell): both pass their check, say which they
#        ran (the overlapped one its shell), end with byte-identical fields (the "u" datasets
#        dumped raw by h5dump), and the overlapped field is the exact discrete solution
#        (heat_grid_reference.py)
#        With --kernel3d K in ARGS both runs must say they ran K, and a third run of ARGS less
#        --kernel3d K (the default kernel, serial) must end with the same bytes
#   bad  runs that must fail on every rank with a message: a --grid that does not multiply to the
#        members, --grid in a wrong format, --grid with the wrong number of axes, --png and the 2-D
#        stencil's options on a process grid, --weak with a --grid that does not fit, a
#        --kernel3d not known, a shared kernel's tile too large for local memory
#   restart  the issue's 40 x 36 x 30 run: uninterrupted to step 40 on 4 ranks (--grid 2x2x1) is
#        the reference; the same on 1 rank with 1 device (one block: no halos between members)
#        must give the same bytes (the arithmetic does not depend on the decomposition);
#        `--steps 40 --checkpoint-every 20` on 4 ranks killed in the middle of its second
#        checkpoint (SIGKILL: skein-heat-killable, with SKEIN_TEST_CHECKPOINT_KILL), then --restart
#        on 3 ranks (--grid 3x1x1) to step 40, must end with a field byte-identical to the
#        reference (the "u" datasets dumped raw by h5dump); a restart whose --nz or --boundary do
#        not fit the checkpoint, a fresh start over old checkpoints and a restart from a
#        checkpoint with a flipped bit are refused; the restart's --json file holds its start
#        step, rank count and check
#   cmake -DMODE=... -DMPIEXEC=... -DHEAT=... -DHEAT_KILLABLE=... -DDIR=... -DH5DUMP=... -DPYTHON=...
#         -DREFERENCE=...
#         [-DNP=n -DARGS=... -DEXPECT=...] -DLIMIT=seconds -P heat_grid_check.cmake
# Exits 77 (skipped) when h5dump or python3 (run, overlap, restart) is missing.
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")

include(${CMAKE_CURRENT_LIST_DIR}/heat_common.cmake)

# reference(NAME H5 NX NY NZ): heat.h5's field against heat_grid_reference.py's exact discrete
# solution of the global grid NX x NY x NZ, the other parameters from ARGS (the app's defaults
# otherwise).
function(reference name h5 nx ny nz)
  dump("${h5}" "${DIR}/${name}.bin")
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
  execute_process(COMMAND ${PYTHON} ${REFERENCE} "${DIR}/${name}.bin" ${nx} ${ny} ${nz} ${p_--steps}
                          ${p_--dtype} ${kx} ${ky} ${p_--mode-z} ${p_--dt-factor} ${p_--boundary} "${h5}"
                  RESULT_VARIABLE r OUTPUT_VARIABLE o ERROR_VARIABLE o)
  message(STATUS "${name}: ${o}")
  if(NOT r EQUAL 0)
    message(FATAL_ERROR "${name}: heat.h5 does not hold the exact discrete solution")
  endif()
endfunction()

# arg(OPTION DEFAULT VAR): the value of OPTION in ARGS, else DEFAULT.
function(arg option default var)
  set(value "${default}")
  set(key "")
  foreach(a ${ARGS})
    if(key STREQUAL "${option}")
      set(value "${a}")
    endif()
    set(key "${a}")
  endforeach()
  set(${var} "${value}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "run")
  need(h5dump "${H5DUMP}")
  need(python3 "${PYTHON}")
  heat(run ${NP} ${ARGS} --out "${DIR}/out" --report-every 10 --json "${DIR}/run.json")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run: skein-heat exited ${rc}, expected 0")
  endif()
  expect_text(run ": passed")
  expect_text(run "${EXPECT}")
  arg(--nx 256 nx)
  arg(--ny 256 ny)
  arg(--nz 0 nz)
  list(FIND ARGS --weak weak)
  if(NOT weak EQUAL -1)
    # The process grid the run chose (z x y x x, or y x x in 2-D); the global grid is the block
    # per device times it.
    if(NOT out MATCHES "process grid ([0-9]+) x ([0-9]+)( x ([0-9]+))?")
      message(FATAL_ERROR "run: the summary gives no process grid")
    endif()
    if(nz EQUAL 0)
      math(EXPR gny "${ny} * ${CMAKE_MATCH_1}")
      math(EXPR gnx "${nx} * ${CMAKE_MATCH_2}")
      set(gnz 0)
      expect_text(run "skein-heat: ${gnx} x ${gny} grid, ${nx} x ${ny} per device,")
    else()
      math(EXPR gnz "${nz} * ${CMAKE_MATCH_1}")
      math(EXPR gny "${ny} * ${CMAKE_MATCH_2}")
      math(EXPR gnx "${nx} * ${CMAKE_MATCH_4}")
      expect_text(run "skein-heat: ${gnx} x ${gny} x ${gnz} (x, y, z) grid, ${nx} x ${ny} x ${nz} per device,")
    endif()
    file(READ "${DIR}/run.json" json)
    foreach(field weak nx ny nz nx_per_device ny_per_device nz_per_device devices halo_exchange)
      string(JSON j_${field} ERROR_VARIABLE e GET "${json}" ${field})
      if(e)
        message(FATAL_ERROR "run: ${DIR}/run.json lacks ${field}: ${e}")
      endif()
    endforeach()
    if(NOT j_weak STREQUAL "ON" OR NOT j_nx EQUAL gnx OR NOT j_ny EQUAL gny OR NOT j_nz EQUAL gnz
       OR NOT j_nx_per_device EQUAL nx OR NOT j_ny_per_device EQUAL ny
       OR NOT (j_nz_per_device EQUAL nz OR (nz EQUAL 0 AND j_nz_per_device EQUAL 0)))
      message(FATAL_ERROR "run: ${DIR}/run.json does not describe the weak run (global ${gnx} x ${gny} x ${gnz}, "
                          "per device ${nx} x ${ny} x ${nz}):\n${json}")
    endif()
    # The speed figures, each a positive number.
    foreach(field t_step_s t_kernel_s floor_s floor_ratio copy_GBps bandwidth_GBps bytes_per_step_per_device)
      string(JSON value ERROR_VARIABLE e GET "${json}" ${field})
      if(e OR NOT value MATCHES "^[0-9.]+(e[-+]?[0-9]+)?$" OR value MATCHES "^0(\\.0*)?$")
        message(FATAL_ERROR "run: ${DIR}/run.json's ${field} is not a positive number (${value}${e})")
      endif()
    endforeach()
    set(nx ${gnx})
    set(ny ${gny})
    set(nz ${gnz})
  endif()
  reference(run "${DIR}/out/heat.h5" ${nx} ${ny} ${nz})

elseif(MODE STREQUAL "overlap")
  need(h5dump "${H5DUMP}")
  need(python3 "${PYTHON}")
  heat(serial ${NP} ${ARGS} --halo-exchange serial --out "${DIR}/serial")
  expect_rc(serial 0)
  expect_text(serial ": passed")
  expect_text(serial "halo exchange: serial")
  expect_text(serial "exchanged before the kernel")
  heat(overlapped ${NP} ${ARGS} --halo-exchange overlapped --out "${DIR}/overlapped")
  expect_rc(overlapped 0)
  expect_text(overlapped ": passed")
  expect_text(overlapped "halo exchange: overlapped (a second queue of")
  expect_text(overlapped "overlapped with the interior (shell of")
  if(EXPECT)
    expect_text(overlapped "${EXPECT}")
  endif()
  dump("${DIR}/serial/heat.h5" "${DIR}/serial.bin")
  dump("${DIR}/overlapped/heat.h5" "${DIR}/overlapped.bin")
  expect_same(overlapped "${DIR}/overlapped.bin" "${DIR}/serial.bin" "the serial run")
  arg(--nx 256 nx)
  arg(--ny 256 ny)
  arg(--nz 0 nz)
  reference(overlapped "${DIR}/overlapped/heat.h5" ${nx} ${ny} ${nz})
  # same_as_without(OPTION NAME WHAT SAID...): a serial run of ARGS less OPTION and its value,
  # passed, saying each SAID text, and the overlapped run's field has its bytes.
  function(same_as_without option name what)
    list(FIND ARGS ${option} at)
    set(args ${ARGS})
    list(REMOVE_AT args ${at})
    list(REMOVE_AT args ${at})
    heat(${name} ${NP} ${args} --halo-exchange serial --out "${DIR}/${name}")
    expect_rc(${name} 0)
    expect_text(${name} ": passed")
    foreach(said ${ARGN})
      expect_text(${name} "${said}")
    endforeach()
    dump("${DIR}/${name}/heat.h5" "${DIR}/${name}.bin")
    expect_same(overlapped "${DIR}/overlapped.bin" "${DIR}/${name}.bin" "${what}")
  endfunction()
  # Two steps per launch (--steps-per-pass 2): both runs said so, and their field has the bytes of
  # a run of one step per launch (the same ARGS less --steps-per-pass 2, serial).
  arg(--steps-per-pass 1 passes)
  if(passes STREQUAL "2")
    expect_text(serial "two steps per launch")
    expect_text(overlapped "two steps per launch")
    same_as_without(--steps-per-pass one_step "the one-step run's")
  endif()
  # Another kernel (--kernel3d K): both runs said they ran it, and their field has the bytes of a
  # run of the default kernel (the same ARGS less --kernel3d K, serial).
  arg(--kernel3d "" kernel3d)
  if(kernel3d)
    expect_text(serial "kernel: ${kernel3d},")
    expect_text(overlapped "kernel: ${kernel3d},")
    same_as_without(--kernel3d default "the default kernel's run" "kernel: march,")
  endif()

elseif(MODE STREQUAL "restart")
  need(h5dump "${H5DUMP}")
  need(python3 "${PYTHON}")
  set(GRID --nx 40 --ny 36 --nz 30)
  # same_bytes(NAME BIN REFERENCE): the uninterrupted 4-rank run's bytes, all 40 x 36 x 30 of them.
  function(same_bytes name bin reference)
    expect_same(${name} "${bin}" "${reference}" "the uninterrupted 4-rank run")
    file(SIZE "${bin}" size)
    if(NOT size EQUAL 345600)
      message(FATAL_ERROR "${name}: the final field has ${size} bytes, not 40 x 36 x 30 float64 (345600)")
    endif()
  endfunction()

  heat(reference 4 ${GRID} --grid 2x2x1 --steps 40 --out "${DIR}/reference")
  expect_rc(reference 0)
  expect_text(reference ": passed")
  dump("${DIR}/reference/heat.h5" "${DIR}/reference.bin")
  set(ENV{SKEIN_DEVICES_PER_RANK} 1)
  heat(one-block 1 ${GRID} --steps 40 --out "${DIR}/one")
  unset(ENV{SKEIN_DEVICES_PER_RANK})
  expect_rc(one-block 0)
  expect_text(one-block "process grid 1 x 1 x 1")
  dump("${DIR}/one/heat.h5" "${DIR}/one.bin")
  same_bytes(one-block "${DIR}/one.bin" "${DIR}/reference.bin")

  # Killed while writing the checkpoint of step 40 (its second): step 20's is the newest complete.
  # The same app with the tests' killer linked in (tests/apps/heat_checkpoint_kill.cpp).
  set(plain_heat "${HEAT}")
  set(HEAT "${HEAT_KILLABLE}")
  set(ENV{SKEIN_TEST_CHECKPOINT_KILL} "2:written")
  heat(killed 4 ${GRID} --grid 2x2x1 --steps 40 --checkpoint-every 20 --out "${DIR}/run")
  unset(ENV{SKEIN_TEST_CHECKPOINT_KILL})
  set(HEAT "${plain_heat}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "killed: skein-heat exited 0, but rank 0 was to kill itself in its second checkpoint")
  endif()
  expect_text(killed "skein-heat-killable: killing rank 0 after stage 'written' of checkpoint write 2 (step 40)")
  foreach(f checkpoint-0000000020.h5 checkpoint-0000000020.done .checkpoint-0000000040.h5.tmp)
    if(NOT EXISTS "${DIR}/run/checkpoints/${f}")
      message(FATAL_ERROR "killed: ${DIR}/run/checkpoints/${f} is missing")
    endif()
  endforeach()
  if(EXISTS "${DIR}/run/checkpoints/checkpoint-0000000040.done" OR EXISTS "${DIR}/run/heat.h5")
    message(FATAL_ERROR "killed: the killed run completed step 40's checkpoint or wrote heat.h5")
  endif()
  file(COPY "${DIR}/run/checkpoints" DESTINATION "${DIR}/damaged")
  set(ENV{SKEIN_DEVICES_PER_RANK} 1)  # 3 members (by default the 4 devices are shared out 2, 1, 1)
  heat(restarted 3 ${GRID} --grid 3x1x1 --steps 40 --restart --out "${DIR}/run" --json "${DIR}/restarted.json")
  unset(ENV{SKEIN_DEVICES_PER_RANK})
  expect_rc(restarted 0)
  expect_text(restarted "restarted from ${DIR}/run/checkpoints/checkpoint-0000000020.h5 (step 20, written by 4 rank(s))")
  expect_text(restarted "process grid 3 x 1 x 1")
  expect_text(restarted ": passed")
  dump("${DIR}/run/heat.h5" "${DIR}/restarted.bin")
  same_bytes(restarted "${DIR}/restarted.bin" "${DIR}/reference.bin")
  # --json: the run's figures, the restart's start step and the process grid among them.
  file(READ "${DIR}/restarted.json" json)
  foreach(field "\"start_step\": 20" "\"steps\": 40" "\"ranks\": 3" "\"nz\": 30" "\"passed\": true")
    string(FIND "${json}" "${field}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "restarted: ${DIR}/restarted.json lacks ${field}:\n${json}")
    endif()
  endforeach()

  # Two steps per launch (--steps-per-pass 2): the checkpoint of step 26 of such a run on 4 ranks
  # (intervals of 13 steps: 6 passes and a single step each) restarted on 3 ranks, once in each
  # mode, ends with the uninterrupted one-step run's bytes.
  heat(passes 4 ${GRID} --grid 2x2x1 --steps 27 --checkpoint-every 13 --steps-per-pass 2 --out "${DIR}/passes")
  expect_rc(passes 0)
  expect_text(passes "two steps per launch")
  file(COPY "${DIR}/passes/checkpoints" DESTINATION "${DIR}/passes-one")
  set(ENV{SKEIN_DEVICES_PER_RANK} 1)
  heat(passes-restarted 3 ${GRID} --grid 3x1x1 --steps 40 --restart --steps-per-pass 2 --out "${DIR}/passes")
  heat(passes-one-step 3 ${GRID} --grid 3x1x1 --steps 40 --restart --out "${DIR}/passes-one")
  unset(ENV{SKEIN_DEVICES_PER_RANK})
  foreach(name passes-restarted passes-one-step)
    expect_rc(${name} 0)
    expect_text(${name} "(step 26, written by 4 rank(s))")
    expect_text(${name} ": passed")
  endforeach()
  dump("${DIR}/passes/heat.h5" "${DIR}/passes.bin")
  same_bytes(passes-restarted "${DIR}/passes.bin" "${DIR}/reference.bin")
  dump("${DIR}/passes-one/heat.h5" "${DIR}/passes-one.bin")
  same_bytes(passes-one-step "${DIR}/passes-one.bin" "${DIR}/reference.bin")

  # Refused: another --nz, another --boundary, a fresh start over the checkpoints, a damaged one.
  heat(other-nz 2 --nx 40 --ny 36 --nz 31 --steps 40 --restart --out "${DIR}/run")
  expect_rc(other-nz 1)
  expect_text(other-nz "holds a (30, 36, 40) grid of float64")
  heat(other-boundary 2 ${GRID} --boundary reflect --steps 40 --restart --out "${DIR}/run")
  expect_rc(other-boundary 1)
  expect_text(other-boundary "has boundary = \"open\", the options give \"reflect\"")
  heat(over-old 2 ${GRID} --steps 40 --out "${DIR}/run")
  expect_rc(over-old 1)
  expect_text(over-old "holds checkpoints of an earlier run (newest: step 20)")
  execute_process(COMMAND ${PYTHON} -c "import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 0x10; open(p, 'wb').write(b)"
                          "${DIR}/damaged/checkpoints/checkpoint-0000000020.h5" RESULT_VARIABLE r)
  if(NOT r EQUAL 0)
    message(FATAL_ERROR "could not damage the checkpoint")
  endif()
  heat(damaged 2 ${GRID} --steps 40 --restart --out "${DIR}/damaged")
  expect_rc(damaged 2)
  expect_text(damaged "changed or damaged after it was written")
  if(EXISTS "${DIR}/damaged/heat.h5")
    message(FATAL_ERROR "damaged: a refused restart wrote heat.h5")
  endif()

elseif(MODE STREQUAL "bad")
  # NAME|NP|ARGS|TEXT: each on NP ranks (4 members: the 4 devices shared out), exit non-zero, TEXT
  # in the output.
  foreach(case
      "not_members|4|--nx;8;--ny;8;--nz;8;--grid;3x1x1;--steps;1|multiply"
      "format|4|--nx;8;--ny;8;--nz;8;--grid;2by2;--steps;1|is not a process grid of 3 axes"
      "axes|4|--nx;8;--ny;8;--nz;8;--grid;2x2;--steps;1|is not a process grid of 3 axes"
      "png|2|--nx;8;--ny;8;--nz;8;--steps;1;--png;${DIR}/u.png|--png is not available on a process grid"
      "variant|2|--nx;8;--ny;8;--nz;8;--steps;1;--stencil-variant;flat|--stencil-variant and --stencil-shape are not available on a process grid"
      "weak_grid|2|--nx;8;--ny;8;--nz;8;--grid;3x1x1;--weak;--steps;1|--weak --grid 3x1x1"
      "tile_format|2|--nx;8;--ny;8;--nz;8;--steps;1;--tile3d;64x4|--tile3d is '64x4'"
      "tile_zero|2|--nx;8;--ny;8;--nz;8;--steps;1;--tile3d;0x4x16|a tile of 0 x 4 items over 16 planes"
      "kernel3d|2|--nx;8;--ny;8;--nz;8;--steps;1;--kernel3d;tiled|--kernel3d is 'tiled'"
      "passes_2d|2|--nx;8;--ny;8;--grid;2x1;--steps;1;--steps-per-pass;2|--steps-per-pass 2 in 2-D"
      "passes_kernel|2|--nx;8;--ny;8;--nz;8;--steps;1;--steps-per-pass;2;--kernel3d;shared|--steps-per-pass 2 with --kernel3d shared"
      "passes_thin|2|--nx;8;--ny;8;--nz;3;--grid;2x1x1;--devices-per-rank;1;--steps;2;--steps-per-pass;2|every block needs at least 2 points"
      "passes_three|2|--nx;8;--ny;8;--nz;8;--steps;1;--steps-per-pass;3|--steps-per-pass: Value 3 not in range 1 to 2"
      "kernel3d_room|2|--nx;8;--ny;8;--nz;8;--steps;1;--kernel3d;shared;--tile3d;1024x1x4|the shared kernel's tile of 1024 x 1 items needs 73872 bytes of local memory")
    string(REPLACE "|" ";" fields "${case}")
    list(GET fields 0 name)
    list(GET fields 1 np)
    list(GET fields -1 text)
    list(LENGTH fields n)
    math(EXPR n "${n} - 3")
    list(SUBLIST fields 2 ${n} args)
    heat(${name} ${np} ${args})
    expect_rc(${name} nonzero)
    expect_text(${name} "${text}")
  endforeach()
  # A tile given without --unroll3d: its whole march unrolled (Z up to 16), the check passed.
  heat(tile_unroll 2 --nx 20 --ny 18 --nz 15 --steps 10 --tile3d 32x8x5)
  expect_rc(tile_unroll 0)
  expect_text(tile_unroll "kernel: march, work groups 32 x 8 over 5 planes, unrolled 5")
  expect_text(tile_unroll ": passed")
  # A device that runs fewer items per work group than the default tile's 512 (PoCL's limit set
  # to 256, on PoCL's devices only): the default tile is halved along y and the run passes its
  # check; another tile that does not fit is refused, naming the device and its limit.
  set(ENV{POCL_MAX_WORK_GROUP_SIZE} 256)
  set(ENV{SKEIN_DEVICES} "^(pthread|cpu)-")
  # The default tile is float64's (64 x 8 x 2, unrolled 2) or float32's (64 x 8 x 4, unrolled 4).
  heat(small_groups 2 --nx 20 --ny 18 --nz 15 --steps 10)
  expect_rc(small_groups 0)
  expect_text(small_groups "kernel: march, work groups 64 x 4 over 2 planes, unrolled 2")
  expect_text(small_groups ": passed")
  heat(small_groups_f32 2 --nx 20 --ny 18 --nz 15 --steps 10 --dtype float32)
  expect_rc(small_groups_f32 0)
  expect_text(small_groups_f32 "kernel: march, work groups 64 x 4 over 4 planes, unrolled 4")
  expect_text(small_groups_f32 ": passed")
  heat(small_groups_tile 2 --nx 8 --ny 8 --nz 8 --steps 1 --tile3d 32x16x4)
  expect_rc(small_groups_tile nonzero)
  expect_text(small_groups_tile "a tile of 32 x 16 items: device ")
  expect_text(small_groups_tile "runs at most 256 items per work group of this kernel")
  unset(ENV{POCL_MAX_WORK_GROUP_SIZE})
  unset(ENV{SKEIN_DEVICES})
else()
  message(FATAL_ERROR "heat_grid_check.cmake: unknown MODE '${MODE}'")
endif()
