# SPDX-License-Identifier: BSD-3-Clause
# skein-heat on 1, 2 and 4 ranks over the 4 PoCL devices of _skein_mpi_env (SKEIN_API=opencl),
# each scenario a script (heat_check.cmake) that checks what the app wrote, independently of it:
#   apps.heat.np1 / np2 / np4   37, 38 and 40 columns x 41 rows (split unevenly): 1 rank x 4
#                               devices, 2 ranks x 2 devices (halos cross a device and a rank
#                               boundary), 4 ranks x 1 device; float64 and float32, two modes (the
#                               stencil's shapes: rows one, two and four elements at a time,
#                               heat_solver.cpp's default_shape); the app's own
#                               analytic check must pass and heat.h5 must hold the exact discrete
#                               solution (heat_reference.py)
#   apps.heat.tiny / large      3 rows on 4 devices (an empty block); a 1100 x 701 float32 field
#   apps.heat.nocache /         37 x 41 on 1 rank x 4 devices with the compile cache off
#   refused_cache               (SKEIN_DISABLE_CACHE=1), and with a world-writable SKEIN_CACHE_DIR
#                               (refused, so off too): every device builds its own kernels
#   apps.heat.restart           checkpoints on 4 ranks, restarted on 2 ranks x 2 devices: the final
#                               field bit-identical to an uninterrupted run on 1 rank x 4 devices;
#                               a damaged checkpoint and a restart that does not fit are refused
#   apps.heat.variants_f32 /    every stencil variant (--stencil-variant rows, aligned, flat; in
#   variants_f64 /              the first two also one with a --stencil-shape of 3 rows per work
#   variants_narrow             item) on grids of odd width: 39 x 13 float32 on 2 ranks x 2
#                               devices (blocks of 3 and 4 rows, their interiors of 1 and 2 rows
#                               launched apart from the edge rows), 37 x 11 float64 on 1 rank x 4
#                               devices with the halo exchange first (blocks of 2 and 3 rows
#                               launched whole), and 1 x 9 float32 (one column: a 16-byte vector
#                               spans rows); each run passes as np1 does, and the variants' fields
#                               are bit-identical
#   apps.heat.png               --png: a valid PNG of the grid's size, and downsampled
#   apps.heat.bad_options       bad options exit non-zero with a message naming what was wrong
#   apps.heat.grid.*            runs on a process grid (heat_grid_check.cmake, heat_grid_reference.py):
#                               3d_np4 is the issue's 40 x 36 x 30 on --grid 2x2x1 (4 ranks);
#                               3d_np1 / 3d_np3 automatic grids (4 devices of 1 rank, 3 ranks);
#                               periodic / reflect the other walls on small 3-D grids, 2d_grid a
#                               2-D run with --grid; each passes its own analytic check and its
#                               heat.h5 holds the exact discrete solution (read with h5dump, and
#                               whole with h5py where installed); bad_grid: a --grid that does not
#                               multiply to the members or is malformed fails with a message;
#                               restart: the 40 x 36 x 30 run killed in a checkpoint on 4 ranks
#                               (2x2x1) and restarted on 3 (3x1x1) ends byte-identical to an
#                               uninterrupted run, as does a 1-rank 1-device run, and a run of two
#                               steps per launch restarted in either mode; misfits refused;
#                               weak_np1 / weak_np2: --weak on 1 rank x 4 devices and 2 ranks x 1
#                               device (the global grid the block per device times the process
#                               grid, checked against the reference; the --json figures);
#                               overlap_*: --halo-exchange overlapped bit-identical to serial on
#                               1-4 ranks, grids 2x2x1, 3x1x1, 1x2x2, 4x1x1 (blocks without an
#                               interior, a member without points), 2-D, every kind of wall
#                               (heat_grid_check.cmake's overlap); overlap_shared_*: the same with
#                               --kernel3d shared at odd sizes on 1-4 ranks, also byte-identical
#                               to the default kernel's run; overlap_column*: the same with
#                               --kernel3d column2 / column4; overlap_passes_*: the same with
#                               --steps-per-pass 2 (two steps per launch), also byte-identical to
#                               a run of one step per launch; bad_grid also refuses --png,
#                               --stencil-variant, a --weak --grid that does not fit, an unknown
#                               --kernel3d, a shared kernel's tile too large for local memory and
#                               --steps-per-pass 2 in 2-D, with another kernel, with blocks of one
#                               point along a split axis, or 3;
#                               with PoCL's work groups limited to 256 items, it runs the default
#                               tile halved along y and refuses a 32x16 tile
# Each takes a few seconds in a release build (the whole set about 25 s; the variants tests, 3-4
# runs each, 2-3 s; the grid's overlap_* tests, two runs each, 2-4 s, and weak_* 1-2 s, measured
# with other builds on the 2 cores: the 29 tests then took 97 s at -j2). Under the sanitizers every start of skein-heat costs 5-15 s, so the sanitizer
# run keeps np1, np2, tiny and restart (every code path of the app but the PNG writer: one and
# several devices per rank, an empty block, HDF5, checkpoints, restart on another rank count, the
# refusals) and leaves out (label no-sanitizer) np4, large, png, bad_options and the variants
# tests, which add sizes, messages and device code, not host code paths (but for picking the
# variant's kernel), and would add several minutes there. The scripts exit 77 (skipped) when
# h5dump or python3 is missing.
if(TARGET skein-heat AND SKEIN_HAS_HDF5)
  find_program(SKEIN_H5DUMP h5dump)
  find_program(SKEIN_PYTHON3 python3)
  set(_heat_script ${CMAKE_CURRENT_SOURCE_DIR}/heat_check.cmake)
  set(_heat_args -DMPIEXEC=${MPIEXEC_EXECUTABLE} -DHEAT=$<TARGET_FILE:skein-heat>
      -DH5DUMP=${SKEIN_H5DUMP} -DPYTHON=${SKEIN_PYTHON3}
      -DREFERENCE=${CMAKE_CURRENT_SOURCE_DIR}/heat_reference.py -DLIMIT=240)

  # NAME NP EXPECT ARGS: one run.
  foreach(case
      "np1|1|on 4 device(s) of 1 rank(s)|--nx;37;--ny;41;--steps;40;--dtype;float64"
      "np2|2|on 4 device(s) of 2 rank(s)|--nx;38;--ny;41;--steps;40;--dtype;float32;--modes;2,3"
      "np4|4|on 4 device(s) of 4 rank(s)|--nx;40;--ny;41;--steps;40;--dtype;float64;--modes;3,2;--dt-factor;0.25"
      # 3 rows on 4 devices (one block empty, 1-row blocks), and a field of 3 MiB.
      "tiny|2|on 4 device(s) of 2 rank(s)|--nx;1;--ny;3;--steps;7;--dtype;float64"
      "large|2|on 4 device(s) of 2 rank(s)|--nx;1100;--ny;701;--steps;12;--dtype;float32;--modes;1,2")
    string(REPLACE "|" ";" _fields "${case}")
    list(GET _fields 0 _name)
    list(GET _fields 1 _np)
    list(GET _fields 2 _expect)
    string(REPLACE "${_name}|${_np}|${_expect}|" "" _run_args "${case}")
    add_test(NAME apps.heat.${_name}
      COMMAND ${CMAKE_COMMAND} -DMODE=run -DNP=${_np} "-DEXPECT=${_expect}" "-DARGS=${_run_args}"
              -DDIR=${CMAKE_CURRENT_BINARY_DIR}/heat-${_name} ${_heat_args} -P ${_heat_script})
    set_tests_properties(apps.heat.${_name} PROPERTIES TIMEOUT 300 LABELS "mpi;apps" SKIP_RETURN_CODE 77
      PROCESSORS ${_np} ENVIRONMENT "${_skein_mpi_env}")
  endforeach()
  set_tests_properties(apps.heat.np4 apps.heat.large PROPERTIES LABELS "mpi;apps;no-sanitizer")

  # NAME|NP (0: one rank started without mpirun)|VARIANTS (space-separated; VARIANT:R,LX,LY gives
  # --stencil-shape)|ARGS.
  foreach(case
      "variants_f32|2|rows aligned flat flat:3,16,2|--nx;39;--ny;13;--steps;20;--dtype;float32;--modes;2,3"
      "variants_f64|0|rows aligned flat aligned:3,32,2|--nx;37;--ny;11;--steps;20;--dtype;float64;--halo-exchange;serial"
      "variants_narrow|0|rows aligned flat|--nx;1;--ny;9;--steps;10;--dtype;float32")
    string(REPLACE "|" ";" _fields "${case}")
    list(GET _fields 0 _name)
    list(GET _fields 1 _np)
    list(GET _fields 2 _variants)
    string(REPLACE " " ";" _variants "${_variants}")
    string(REGEX REPLACE "^[^|]*\\|[^|]*\\|[^|]*\\|" "" _run_args "${case}")
    set(_ranks ${_np})
    if(_np EQUAL 0)
      set(_ranks 1)
    endif()
    add_test(NAME apps.heat.${_name}
      COMMAND ${CMAKE_COMMAND} -DMODE=variants -DNP=${_np} "-DEXPECT=on 4 device(s) of ${_ranks} rank(s)"
              "-DVARIANTS=${_variants}" "-DARGS=${_run_args}" -DDIR=${CMAKE_CURRENT_BINARY_DIR}/heat-${_name}
              ${_heat_args} -P ${_heat_script})
    set_tests_properties(apps.heat.${_name} PROPERTIES TIMEOUT 300 LABELS "mpi;apps;no-sanitizer"
      SKIP_RETURN_CODE 77 PROCESSORS ${_ranks} ENVIRONMENT "${_skein_mpi_env}")
  endforeach()

  # NAME|CACHE (heat_check.cmake's CACHE).
  foreach(case "nocache|off" "refused_cache|refused")
    string(REPLACE "|" ";" _fields "${case}")
    list(GET _fields 0 _cache)
    list(GET _fields 1 _how)
    add_test(NAME apps.heat.${_cache}
      COMMAND ${CMAKE_COMMAND} -DMODE=run -DNP=1 "-DEXPECT=on 4 device(s) of 1 rank(s)"
              "-DARGS=--nx;37;--ny;41;--steps;20;--dtype;float32;--modes;2,1" -DCACHE=${_how}
              -DDIR=${CMAKE_CURRENT_BINARY_DIR}/heat-${_cache} ${_heat_args} -P ${_heat_script})
    set_tests_properties(apps.heat.${_cache} PROPERTIES TIMEOUT 300 LABELS "mpi;apps" SKIP_RETURN_CODE 77
      ENVIRONMENT "${_skein_mpi_env}")
  endforeach()
  # The refused directory adds the refusal to what nocache runs: no code path of its own there.
  set_tests_properties(apps.heat.refused_cache PROPERTIES LABELS "mpi;apps;no-sanitizer")
  # 2 ranks x 2 devices, said explicitly (the even share-out gives the same on 4 devices).
  set_tests_properties(apps.heat.np2 PROPERTIES ENVIRONMENT "${_skein_mpi_env};SKEIN_DEVICES_PER_RANK=2")

  # Process grids. NAME|NP|EXPECT|ARGS. The reference reads heat.h5 with h5py too where a python3
  # has it: Debian's python3-h5py is in the system Python, which a python3 earlier in PATH (pyenv,
  # venv) may not see; with one found, the h5py read is required (SKEIN_REQUIRE_H5PY).
  set(_grid_python ${SKEIN_PYTHON3})
  set(_grid_env "${_skein_mpi_env}")
  foreach(_py /usr/bin/python3 ${SKEIN_PYTHON3})
    if(EXISTS "${_py}")
      execute_process(COMMAND "${_py}" -c "import h5py" RESULT_VARIABLE _h5py_rc OUTPUT_QUIET ERROR_QUIET)
      if(_h5py_rc EQUAL 0)
        set(_grid_python "${_py}")
        list(APPEND _grid_env SKEIN_REQUIRE_H5PY=1)
        break()
      endif()
    endif()
  endforeach()
  # skein-heat-killable: skein-heat's own object files (not compiled again) and
  # heat_checkpoint_kill.cpp, which before main installs the kill SKEIN_TEST_CHECKPOINT_KILL asks
  # for, so that grid.restart kills the app in the middle of a checkpoint with the hook in the
  # tests, not in Skein or the app. It links what skein-heat links, whose imported targets are
  # found again here (they are the apps' directory's).
  find_package(nlohmann_json CONFIG REQUIRED)
  find_package(PNG QUIET)
  add_executable(skein-heat-killable $<TARGET_OBJECTS:skein-heat>
                                     ${CMAKE_CURRENT_SOURCE_DIR}/heat_checkpoint_kill.cpp)
  target_include_directories(skein-heat-killable PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  target_link_libraries(skein-heat-killable PRIVATE $<TARGET_PROPERTY:skein-heat,LINK_LIBRARIES> skein_io_internal)
  skein_test_program(skein-heat-killable)
  set(_grid_script ${CMAKE_CURRENT_SOURCE_DIR}/heat_grid_check.cmake)
  set(_grid_args -DMPIEXEC=${MPIEXEC_EXECUTABLE} -DHEAT=$<TARGET_FILE:skein-heat>
      -DHEAT_KILLABLE=$<TARGET_FILE:skein-heat-killable>
      -DH5DUMP=${SKEIN_H5DUMP} -DPYTHON=${_grid_python}
      -DREFERENCE=${CMAKE_CURRENT_SOURCE_DIR}/heat_grid_reference.py -DLIMIT=240)
  foreach(case
      "3d_np4|4|process grid 2 x 2 x 1|--nx;40;--ny;36;--nz;30;--grid;2x2x1;--steps;40"
      "3d_np1|1|on 4 device(s) of 1 rank(s)|--nx;13;--ny;11;--nz;9;--steps;20;--dtype;float32;--modes;2,1;--mode-z;2"
      "3d_np3|3|on 4 device(s) of 3 rank(s)|--nx;12;--ny;10;--nz;11;--steps;20;--modes;1,2"
      "periodic|4|periodic walls|--nx;12;--ny;10;--nz;9;--grid;1x2x2;--boundary;periodic;--steps;25;--modes;2,1;--mode-z;3"
      "reflect|2|reflect walls|--nx;11;--ny;10;--nz;9;--boundary;reflect;--steps;25;--modes;1,3;--mode-z;2"
      "2d_grid|4|process grid 2 x 2|--nx;37;--ny;41;--grid;2x2;--steps;40"
      # --weak: one rank driving 4 devices (automatic grid), 2 ranks of 1 device (--grid 2x1x1).
      "weak_np1|1|process grid 1 x 2 x 2|--nx;9;--ny;8;--nz;7;--weak;--steps;20;--modes;2,1"
      "weak_np2|2|process grid 2 x 1 x 1|--nx;10;--ny;9;--nz;6;--weak;--grid;2x1x1;--devices-per-rank;1;--steps;20;--boundary;periodic")
    string(REPLACE "|" ";" _fields "${case}")
    list(GET _fields 0 _name)
    list(GET _fields 1 _np)
    list(GET _fields 2 _expect)
    string(REPLACE "${_name}|${_np}|${_expect}|" "" _run_args "${case}")
    add_test(NAME apps.heat.grid.${_name}
      COMMAND ${CMAKE_COMMAND} -DMODE=run -DNP=${_np} "-DEXPECT=${_expect}" "-DARGS=${_run_args}"
              -DDIR=${CMAKE_CURRENT_BINARY_DIR}/heat-grid-${_name} ${_grid_args} -P ${_grid_script})
    # Under the sanitizers: the issue's 3-D run and the restart (below); the other cases add
    # kernels and sizes, not host code paths.
    set(_grid_labels "mpi;apps;no-sanitizer")
    if(_name STREQUAL "3d_np4")
      set(_grid_labels "mpi;apps")
    endif()
    set_tests_properties(apps.heat.grid.${_name} PROPERTIES TIMEOUT 300 LABELS "${_grid_labels}" SKIP_RETURN_CODE 77
      PROCESSORS ${_np} ENVIRONMENT "${_grid_env}")
  endforeach()
  # --halo-exchange overlapped against serial (heat_grid_check.cmake's overlap). NAME|NP|EXPECT|ARGS:
  # 2x2x1 open (faces across ranks along z and y); 3x1x1 periodic on 3 ranks (every side of every
  # block exchanged: shells of six slabs, x faces too); reflect on 2 ranks x 2 devices, 1x2x2, x
  # split 3 + 2 (the 2-wide block has no interior: its shell is the whole block); 4x1x1 periodic
  # over 3 planes (blocks of one plane, all shell; a member without points); one rank driving 4
  # devices (halos between devices, float32); a 2-D grid; another tile (32 x 8 x 5, unrolled 4).
  foreach(case
      "2x2x1|4|process grid 2 x 2 x 1|--nx;20;--ny;18;--nz;15;--grid;2x2x1;--steps;20"
      "3x1x1_periodic|3|periodic walls|--nx;12;--ny;10;--nz;9;--grid;3x1x1;--devices-per-rank;1;--boundary;periodic;--steps;20;--modes;2,1;--mode-z;2"
      "reflect|2|process grid 1 x 2 x 2|--nx;5;--ny;6;--nz;4;--grid;1x2x2;--boundary;reflect;--steps;20;--modes;1,2"
      "thin|2|process grid 4 x 1 x 1|--nx;5;--ny;4;--nz;3;--grid;4x1x1;--boundary;periodic;--steps;15;--mode-z;1"
      "np1_f32|1|on 4 device(s) of 1 rank(s)|--nx;13;--ny;11;--nz;9;--steps;20;--dtype;float32;--modes;2,1"
      "2d|4|process grid 2 x 2|--nx;37;--ny;41;--grid;2x2;--steps;20;--boundary;reflect"
      # Another tile and an unrolled march (--tile3d, --unroll3d): the same check and the same bits.
      "tile|4|process grid 2 x 2 x 1|--nx;20;--ny;18;--nz;15;--grid;2x2x1;--steps;20;--tile3d;32x8x5;--unroll3d;4"
      # The shared kernel (--kernel3d shared) at odd sizes on 1-4 ranks: the same check, the same
      # bits serial and overlapped, and the bits of the default kernel's run (heat_grid_check).
      "shared_2x2x1|4|process grid 2 x 2 x 1|--nx;21;--ny;19;--nz;17;--grid;2x2x1;--steps;20;--kernel3d;shared"
      "shared_periodic|3|periodic walls|--nx;13;--ny;11;--nz;9;--grid;3x1x1;--devices-per-rank;1;--boundary;periodic;--steps;20;--modes;2,1;--mode-z;2;--kernel3d;shared"
      "shared_reflect|2|process grid 1 x 2 x 2|--nx;5;--ny;6;--nz;4;--grid;1x2x2;--boundary;reflect;--steps;20;--modes;1,2;--kernel3d;shared"
      "shared_np1_f32|1|on 4 device(s) of 1 rank(s)|--nx;13;--ny;11;--nz;9;--steps;20;--dtype;float32;--modes;2,1;--kernel3d;shared"
      "shared_tile|2|process grid 2 x 1 x 1|--nx;37;--ny;29;--nz;23;--grid;2x1x1;--devices-per-rank;1;--steps;20;--tile3d;16x8x5;--unroll3d;4;--kernel3d;shared"
      # The column kernels (--kernel3d column2, column4; columns cut short at the blocks' ends).
      "column2_2x2x1|4|process grid 2 x 2 x 1|--nx;21;--ny;19;--nz;17;--grid;2x2x1;--steps;20;--kernel3d;column2"
      "column4_periodic|3|periodic walls|--nx;13;--ny;11;--nz;9;--grid;1x3x1;--devices-per-rank;1;--boundary;periodic;--steps;20;--modes;2,1;--mode-z;2;--kernel3d;column4"
      "column4_np1_f32|1|on 4 device(s) of 1 rank(s)|--nx;13;--ny;11;--nz;9;--steps;20;--dtype;float32;--modes;2,1;--kernel3d;column4"
      "column4_tile|2|process grid 2 x 1 x 1|--nx;37;--ny;29;--nz;23;--grid;2x1x1;--devices-per-rank;1;--steps;20;--tile3d;16x8x5;--unroll3d;4;--kernel3d;column4"
      # Two steps per launch (--steps-per-pass 2, a halo of 2): the same check and the bits of the
      # one-step run, serial and overlapped, with every kind of wall, odd step counts and report
      # intervals, 1-4 ranks, shells of six slabs (periodic: every side exchanged) and blocks of 2
      # planes (no interior: all shell), another tile, float32.
      "passes_2x2x1|4|process grid 2 x 2 x 1|--nx;20;--ny;18;--nz;15;--grid;2x2x1;--steps;21;--steps-per-pass;2"
      "passes_periodic|2|periodic walls|--nx;12;--ny;10;--nz;12;--grid;2x1x1;--devices-per-rank;1;--boundary;periodic;--steps;20;--report-every;7;--modes;2,1;--mode-z;2;--steps-per-pass;2"
      "passes_reflect|2|process grid 1 x 2 x 2|--nx;9;--ny;6;--nz;4;--grid;1x2x2;--boundary;reflect;--steps;19;--modes;1,2;--steps-per-pass;2"
      "passes_thin|2|process grid 4 x 1 x 1|--nx;5;--ny;4;--nz;8;--grid;4x1x1;--boundary;periodic;--steps;15;--mode-z;1;--steps-per-pass;2"
      "passes_np1_f32|1|on 4 device(s) of 1 rank(s)|--nx;13;--ny;11;--nz;9;--steps;20;--dtype;float32;--modes;2,1;--steps-per-pass;2"
      "passes_tile|2|process grid 2 x 1 x 1|--nx;37;--ny;29;--nz;23;--grid;2x1x1;--devices-per-rank;1;--steps;17;--boundary;reflect;--tile3d;14x6x5;--unroll3d;1;--steps-per-pass;2")
    string(REPLACE "|" ";" _fields "${case}")
    list(GET _fields 0 _name)
    list(GET _fields 1 _np)
    list(GET _fields 2 _expect)
    string(REPLACE "${_name}|${_np}|${_expect}|" "" _run_args "${case}")
    add_test(NAME apps.heat.grid.overlap_${_name}
      COMMAND ${CMAKE_COMMAND} -DMODE=overlap -DNP=${_np} "-DEXPECT=${_expect}" "-DARGS=${_run_args}"
              -DDIR=${CMAKE_CURRENT_BINARY_DIR}/heat-grid-overlap-${_name} ${_grid_args} -P ${_grid_script})
    set_tests_properties(apps.heat.grid.overlap_${_name} PROPERTIES TIMEOUT 300 LABELS "mpi;apps;no-sanitizer"
      SKIP_RETURN_CODE 77 PROCESSORS ${_np} ENVIRONMENT "${_grid_env}")
  endforeach()
  add_test(NAME apps.heat.grid.bad_grid
    COMMAND ${CMAKE_COMMAND} -DMODE=bad -DDIR=${CMAKE_CURRENT_BINARY_DIR}/heat-grid-bad ${_grid_args}
            -P ${_grid_script})
  set_tests_properties(apps.heat.grid.bad_grid PROPERTIES TIMEOUT 300 LABELS "mpi;apps" SKIP_RETURN_CODE 77
    PROCESSORS 4 ENVIRONMENT "${_skein_mpi_env}")
  add_test(NAME apps.heat.grid.restart
    COMMAND ${CMAKE_COMMAND} -DMODE=restart -DDIR=${CMAKE_CURRENT_BINARY_DIR}/heat-grid-restart ${_grid_args}
            -P ${_grid_script})
  set_tests_properties(apps.heat.grid.restart PROPERTIES TIMEOUT 300 LABELS "mpi;apps" SKIP_RETURN_CODE 77
    PROCESSORS 4 ENVIRONMENT "${_skein_mpi_env}")

  foreach(_mode restart png bad_options)
    set(_script_mode ${_mode})
    if(_mode STREQUAL "bad_options")
      set(_script_mode bad)
    endif()
    add_test(NAME apps.heat.${_mode}
      COMMAND ${CMAKE_COMMAND} -DMODE=${_script_mode} -DDIR=${CMAKE_CURRENT_BINARY_DIR}/heat-${_mode}
              ${_heat_args} -P ${_heat_script})
    set_tests_properties(apps.heat.${_mode} PROPERTIES TIMEOUT 300 LABELS "mpi;apps" SKIP_RETURN_CODE 77
      ENVIRONMENT "${_skein_mpi_env}")
  endforeach()
  set_tests_properties(apps.heat.png apps.heat.bad_options PROPERTIES LABELS "mpi;apps;no-sanitizer")
endif()
