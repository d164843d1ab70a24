# SPDX-License-Identifier: BSD-3-Clause
# gpu-check's test groups: tests, mpi, faults, demo, bindings, python, agree, memcheck, tsan.
# Sourced by tools/gpu-check.sh after the build (its header describes every group and variable);
# uses its want, step, OUTDIR, BUILD_DIR, SOURCE_DIR, SUMMARY, JOBS, ngpu and failed.
# shellcheck shell=bash

if want tests; then
  if [[ "${NO_CTEST:-0}" != 1 ]]; then
    step ctest "$OUTDIR/ctest.log" ctest --test-dir "$BUILD_DIR" --output-on-failure
  fi
  # The suite's own output, for the per-backend counts (ctest shows it only on failure). PoCL's
  # "basic" devices: PoCL 5.0's pthread driver (Ubuntu 24.04, these machines' image) fails its own
  # assertion in pocl_release_dlhandle_cache when several devices run one kernel at once (seen in
  # 2-3 of 3 runs of DeviceArguments.Reduction*/opencl_0, never with POCL_MAX_PTHREAD_COUNT=1 or
  # basic devices; CI's PoCL 3.1 runs the pthread devices).
  gtest_shards="${SKEIN_GTEST_SHARDS:-1}"
  if ((gtest_shards > 1)); then
    # Every shard's output in its own file, then all of them in the log, then the serial tests'
    # run (gtest-serial.log); fails when any shard or the serial run did.
    gtest_serial="${SKEIN_GTEST_SERIAL-*MemoryInfo*:DefaultContextFallback.*:CtypePrelude.*}"
    gtest_shard_filter="${SKEIN_GTEST_FILTER:-*}"
    if [[ -n $gtest_serial ]]; then
      if [[ $gtest_shard_filter == *-* ]]; then
        gtest_shard_filter+=":$gtest_serial"
      else
        gtest_shard_filter+="-$gtest_serial"
      fi
    fi
    gtest_sharded() {
      local pids=() rc=0 i
      for ((i = 0; i < gtest_shards; ++i)); do
        env GTEST_TOTAL_SHARDS="$gtest_shards" GTEST_SHARD_INDEX="$i" \
          POCL_DEVICES="basic basic basic basic" \
          "$BUILD_DIR/tests/skein-tests" --gtest_filter="$gtest_shard_filter" \
          >"$OUTDIR/gtest-shard-$i.log" 2>&1 &
        pids+=($!)
      done
      for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { rc=1; echo "=== gtest shard $i failed"; }
        cat "$OUTDIR/gtest-shard-$i.log"
      done
      if [[ -n $gtest_serial ]]; then
        env POCL_DEVICES="basic basic basic basic" "$BUILD_DIR/tests/skein-tests" \
          --gtest_filter="$gtest_serial" >"$OUTDIR/gtest-serial.log" 2>&1 ||
          { rc=1; echo "=== gtest serial run failed"; }
        cat "$OUTDIR/gtest-serial.log"
      fi
      return "$rc"
    }
    step gtest "$OUTDIR/ctest.log" gtest_sharded
  else
    step gtest "$OUTDIR/ctest.log" env POCL_DEVICES="basic basic basic basic" \
      "$BUILD_DIR/tests/skein-tests" --gtest_filter="${SKEIN_GTEST_FILTER:-*}"
  fi

  step skein-info "$OUTDIR/skein-info.txt" "$BUILD_DIR/apps/skein-info/skein-info"
  # JSON alone in its file; messages on stderr stay on the terminal.
  echo "=== skein-info-json: $BUILD_DIR/apps/skein-info/skein-info --json"
  "$BUILD_DIR/apps/skein-info/skein-info" --json >"$OUTDIR/skein-info.json"
  rc=$?
  printf '%-16s %3d  %s\n' skein-info-json "$rc" skein-info.json >>"$SUMMARY"
  ((rc == 0)) || failed=1
fi

# The MPI suite on the GPUs (ctest runs it on PoCL): NCCL with one GPU per rank, and with one
# rank driving every GPU.
if want mpi && ((ngpu > 0)); then
  step mpi-nccl-1pr "$OUTDIR/ctest.log" timeout 900 mpirun -np "$ngpu" --oversubscribe \
    -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE -x SKEIN_TEST_TIMEOUT=300 "$BUILD_DIR/tests/skein-mpi-tests"
  step mpi-nccl-1rank "$OUTDIR/ctest.log" timeout 900 mpirun -np 1 -x SKEIN_API=cuda \
    -x NCCL_NVLS_ENABLE -x SKEIN_TEST_TIMEOUT=300 "$BUILD_DIR/tests/skein-mpi-tests"
  # CUDA IPC between two processes on one GPU (the Ipc tests skip with fewer than two ranks).
  step mpi-ipc-2ranks "$OUTDIR/ctest.log" timeout 300 mpirun -np 2 --oversubscribe \
    -x SKEIN_API=cuda -x SKEIN_TEST_TIMEOUT=120 "$BUILD_DIR/tests/skein-mpi-tests" --gtest_filter='Ipc.*'
fi

# The fault scenarios (tests/collectives/fault_main.cpp) on the GPUs.
if want faults && ((ngpu > 0)); then
  fault_bin="$BUILD_DIR/tests/skein-collectives-fault"
  # fault NAME SCENARIO NP LIMIT EXPECT VAR=VALUE...: one fault scenario on CUDA, checked as
  # ctest checks them on PoCL (tests/collectives/check_fault.cmake).
  fault() {
    local name="$1" scenario="$2" np="$3" limit="$4" expect="$5"
    shift 5
    # FAULTS (space-separated names; default: all) narrows the step to those scenarios.
    if [[ -n "${FAULTS:-}" && " $FAULTS " != *" $name "* ]]; then return 0; fi
    step "fault-$name" "$OUTDIR/ctest.log" env SKEIN_API=cuda "$@" \
      cmake -DMPIEXEC=mpirun -DNP="$np" -DMODE="$scenario" -DPROGRAM="$fault_bin" \
      -DLIMIT="$limit" -DEXPECT="$expect" -P tests/collectives/check_fault.cmake
  }
  # Two ranks sharing the first GPU (any machine with one): the automatic choice is MPI, and the
  # MPI backend's faults; NCCL forced onto the shared GPU is refused before NCCL is called.
  export SKEIN_SHARE_DEVICES=1 CUDA_VISIBLE_DEVICES_SAVED="${CUDA_VISIBLE_DEVICES-}"
  export CUDA_VISIBLE_DEVICES=0
  fault shared shared 2 60 zero SKEIN_COLLECTIVE_TIMEOUT=20
  fault shared_nccl shared 2 60 zero SKEIN_BACKEND=nccl
  for f in count dtype reduction root operation; do
    fault "$f-shared" "$f" 2 60 zero SKEIN_COLLECTIVE_TIMEOUT=20
  done
  fault late-shared late 2 60 zero SKEIN_COLLECTIVE_TIMEOUT=2
  fault tiny-shared tiny 2 60 zero SKEIN_COLLECTIVE_TIMEOUT=0.000001
  # A rank that never comes to a checkpoint (where Skein has HDF5: the checkpoint loop is built).
  if [[ -x "$BUILD_DIR/tests/skein-checkpoint-loop" ]]; then
    fault checkpoint_skip-shared checkpoint_skip 3 60 zero SKEIN_COLLECTIVE_TIMEOUT=5
  fi
  unset SKEIN_SHARE_DEVICES
  if [[ -n "$CUDA_VISIBLE_DEVICES_SAVED" ]]; then export CUDA_VISIBLE_DEVICES="$CUDA_VISIBLE_DEVICES_SAVED"; else unset CUDA_VISIBLE_DEVICES; fi
  if ((ngpu >= 2)); then
    # Over NCCL: up to 3 ranks (rank 1 is the one that differs, skips or dies), one GPU each.
    fnp=$((ngpu < 3 ? ngpu : 3))
    for f in count dtype reduction root operation; do
      fault "$f-nccl" "$f" "$fnp" 60 zero SKEIN_COLLECTIVE_TIMEOUT=20
    done
    # Each mismatch followed only by queue.synchronize() and get(): the LogicError within 2 s on
    # every rank, no value read (NCCL's calls return before the check; the host completion waits
    # for it). With one GPU per rank on 2 ranks, then on up to 3.
    for np_read in 2 "$fnp"; do
      for f in count dtype reduction root operation; do
        fault "read_$f-nccl-np$np_read" "read_$f" "$np_read" 60 zero SKEIN_COLLECTIVE_TIMEOUT=20
      done
      fault "read_skip-nccl-np$np_read" read_skip "$np_read" 60 zero SKEIN_COLLECTIVE_TIMEOUT=2
      [[ "$fnp" == 2 ]] && break
    done
    fault skip-nccl skip "$fnp" 60 zero SKEIN_COLLECTIVE_TIMEOUT=5
    fault skip-nccl-unchecked skip "$fnp" 60 zero SKEIN_COLLECTIVE_TIMEOUT=5 \
      SKEIN_CHECK_COLLECTIVES=0
    fault skip-nccl-nb skip "$fnp" 60 zero SKEIN_COLLECTIVE_TIMEOUT=5 SKEIN_NCCL_BLOCKING=0
    fault skip_sum-nccl skip_sum "$fnp" 60 zero SKEIN_COLLECTIVE_TIMEOUT=5
    fault late-nccl late 2 60 zero SKEIN_COLLECTIVE_TIMEOUT=2
    fault kill-nccl kill "$fnp" 45 nonzero SKEIN_COLLECTIVE_TIMEOUT=5
  fi
fi

# The README's demo (tools/quickstart.sh demo: skein-heat on two ranks) as a one-GPU machine runs
# it: both ranks share the first GPU, so the automatic choice is the MPI backend.
if want demo && ((ngpu > 0)); then
  step demo "$OUTDIR/apps.log" env CUDA_VISIBLE_DEVICES=0 SKEIN_SKIP_DEPS=1 BUILD_DIR="$BUILD_DIR" \
    bash tools/quickstart.sh demo
  step heat-shared "$OUTDIR/apps.log" env CUDA_VISIBLE_DEVICES=0 SKEIN_SHARE_DEVICES=1 \
    timeout 300 mpirun -np 2 --oversubscribe -x CUDA_VISIBLE_DEVICES -x SKEIN_SHARE_DEVICES \
    "$BUILD_DIR/apps/skein-heat/skein-heat" --nx 2049 --ny 2051 --steps 200 --report-every 100 \
    --out "$(mktemp -d)" --overwrite
fi

# The C API and the Fortran module on CUDA (issue 38): the C API's test program and the guide's
# heat2d examples (docs/examples/heat2d.c, heat2d.f90: each checks itself against the exact
# discrete solution; their HDF5 files are read back by tests/bindings/heat2d_check.py) on one rank,
# on 2 ranks sharing the first GPU (the MPI backend), and on one GPU per rank where there are two
# or more (NCCL). The Fortran parts where the build has the module (a Fortran compiler: FC, or
# CMAKE_EXTRA_ARGS=-DCMAKE_Fortran_COMPILER=...).
if want bindings && ((ngpu > 0)); then
  bind="$BUILD_DIR/tests/bindings"
  bind_tmp="$(mktemp -d)"
  bind_env=(-x SKEIN_API=cuda -x SKEIN_TEST_TIMEOUT=120 -x NCCL_NVLS_ENABLE)
  step capi-1rank "$OUTDIR/bindings.log" timeout 300 mpirun -np 1 "${bind_env[@]}" \
    "$bind/skein-capi-tests"
  step capi-shared "$OUTDIR/bindings.log" env CUDA_VISIBLE_DEVICES=0 SKEIN_SHARE_DEVICES=1 \
    timeout 300 mpirun -np 2 --oversubscribe -x CUDA_VISIBLE_DEVICES -x SKEIN_SHARE_DEVICES \
    "${bind_env[@]}" "$bind/skein-capi-tests"
  if ((ngpu > 1)); then
    # The CUDA cases only: one GPU per rank is what this step checks, and an OpenCL platform
    # with one device (PoCL's) has none for the second rank without SKEIN_SHARE_DEVICES=1.
    step capi-1pr "$OUTDIR/bindings.log" timeout 300 mpirun -np 2 "${bind_env[@]}" \
      "$bind/skein-capi-tests" "--gtest_filter=*/cuda*"
  fi
  for lang in c fortran; do
    exe="$bind/heat2d"
    [[ $lang == fortran ]] && exe="$bind/fortran/heat2d"
    if [[ ! -x "$exe" ]]; then
      echo "=== $lang heat2d: $exe was not built" | tee -a "$OUTDIR/bindings.log"
      continue
    fi
    step "$lang-heat2d-shared" "$OUTDIR/bindings.log" env CUDA_VISIBLE_DEVICES=0 \
      SKEIN_SHARE_DEVICES=1 timeout 300 mpirun -np 2 --oversubscribe -x CUDA_VISIBLE_DEVICES \
      -x SKEIN_SHARE_DEVICES "${bind_env[@]}" "$exe" "$bind_tmp/$lang-shared.h5"
    step "$lang-heat2d-h5" "$OUTDIR/bindings.log" python3 tests/bindings/heat2d_check.py \
      "$bind_tmp/$lang-shared.h5"
    if ((ngpu > 1)); then
      step "$lang-heat2d-1pr" "$OUTDIR/bindings.log" timeout 300 mpirun -np 2 "${bind_env[@]}" \
        "$exe" "$bind_tmp/$lang-1pr.h5"
    fi
  done
  rm -rf "$bind_tmp"
fi

# The Python package on CUDA (issue 39): its suite with CUDA required (the CuPy and PyTorch round
# trips are in it: tests/python/test_interop.py), the guide's Python examples, and the overhead
# benchmark where tools/peer-python-calls.py exists. pytest where it imports, else the stand-in
# tests/python/minipytest.py (same files, same fixtures).
if want python && ((ngpu > 0)) && ((python_ok)); then
  py_env=(env "PYTHONPATH=$SOURCE_DIR/$BUILD_DIR/python" SKEIN_TEST_EXPECT_APIS=cuda
    POCL_DEVICES="basic basic" PYTHONDONTWRITEBYTECODE=1)
  [[ "$BUILD_DIR" == /* ]] && py_env[1]="PYTHONPATH=$BUILD_DIR/python"
  step python-env "$OUTDIR/python.log" python3 -c '
import importlib
for name in ("numpy", "pybind11", "pytest", "cupy", "torch", "mpi4py"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as e:  # missing or broken: said, and the tests that need it skip
        print(name, "MISSING:", type(e).__name__, e)'
  py_files=()
  for f in tests/python/test_*.py; do py_files+=("$f"); done
  if python3 -c 'import pytest' 2>/dev/null; then
    step python-suite "$OUTDIR/python.log" timeout 900 "${py_env[@]}" python3 -m pytest \
      -p no:cacheprovider -rfEs --rootdir=tests/python "${py_files[@]}"
  else
    echo "=== python-suite: pytest is not installed: tests/python/minipytest.py runs the files" |
      tee -a "$OUTDIR/python.log"
    step python-suite "$OUTDIR/python.log" timeout 900 "${py_env[@]}" python3 \
      tests/python/minipytest.py "${py_files[@]}"
  fi
  step python-cupy-example "$OUTDIR/python.log" timeout 300 "${py_env[@]}" python3 \
    docs/examples/cupy_interop.py
  step python-basics-example "$OUTDIR/python.log" timeout 300 "${py_env[@]}" python3 \
    docs/examples/python_basics.py
  if [[ -f tools/peer-python-calls.py ]]; then
    step python-calls "$OUTDIR/python.log" timeout 600 "${py_env[@]}" python3 \
      tools/peer-python-calls.py --api cuda --json "$OUTDIR/python-calls.json" \
      --cpp "$BUILD_DIR/tests/bench/skein-bench-small"
  else
    echo "=== python-calls: tools/peer-python-calls.py does not exist (yet): not run" |
      tee -a "$OUTDIR/python.log"
  fi
fi

# The agreement check's cost on the 8-byte all_reduce, on and off in one run: the MPI backend on
# two ranks sharing the first GPU, and NCCL with one GPU per rank where there are two or more.
if want agree && ((ngpu > 0)); then
  coll_bin="$BUILD_DIR/apps/skein-bench-collectives/skein-bench-collectives"
  step agree-mpi "$OUTDIR/bench-coll.txt" timeout 300 env CUDA_VISIBLE_DEVICES=0 \
    SKEIN_SHARE_DEVICES=1 mpirun -np 2 --oversubscribe -x SKEIN_API=cuda -x SKEIN_SHARE_DEVICES \
    -x CUDA_VISIBLE_DEVICES "$coll_bin" --coll all_reduce --backend mpi -b 8 -n 2000 -w 200 \
    --devices-per-rank 1 --agreement-cost 9
  if ((ngpu >= 2)); then
    step agree-nccl "$OUTDIR/bench-coll.txt" timeout 300 mpirun -np "$ngpu" --oversubscribe \
      -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE "$coll_bin" --coll all_reduce --backend nccl -b 8 \
      -n 2000 -w 200 --devices-per-rank 1 --agreement-cost 9
  fi
fi

# The CUDA cases of the suite (parameterised per backend, named .../cuda_N) under memcheck.
# --error-exitcode makes a memory error fail the step even when the tests pass. API errors are not
# reported: Skein turns every failed call into an exception the tests see, and some failures are
# expected (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED when a second context enables peer access,
# the error cases the tests provoke on purpose).
if want memcheck; then
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  # memcheck takes every kernel write to managed memory allocated with CU_MEM_ATTACH_HOST for
  # out of bounds (tools/memcheck-attach-host.cpp, a plain driver program, shows it): the one test
  # whose kernel writes such memory is left out while memcheck still reports that program.
  memcheck_filter='*cuda*'
  cuda_home="$(dirname "$(dirname "$sanitizer")")"
  if g++ -std=c++20 "$SOURCE_DIR/tools/memcheck-attach-host.cpp" -I"$cuda_home/include" \
      -L"$cuda_home/lib64" -L"$cuda_home/lib64/stubs" -lcuda -lnvrtc \
      -o "$BUILD_DIR/memcheck-attach-host" >>"$OUTDIR/memcheck.log" 2>&1; then
    step memcheck-attach-global "$OUTDIR/memcheck.log" \
      "$sanitizer" --tool memcheck --error-exitcode 99 "$BUILD_DIR/memcheck-attach-host" 1
    if ! "$sanitizer" --tool memcheck --error-exitcode 99 "$BUILD_DIR/memcheck-attach-host" 2 \
        >>"$OUTDIR/memcheck.log" 2>&1; then
      echo "memcheck: CU_MEM_ATTACH_HOST memory reported (see above): leaving out" \
        "Memory.ManagedBufferIsSharedByKernelsCopiesArraysAndTheHost" | tee -a "$OUTDIR/memcheck.log"
      memcheck_filter='*cuda*:-*Memory.ManagedBufferIsSharedByKernelsCopiesArraysAndTheHost*'
    fi
  fi
  step memcheck "$OUTDIR/memcheck.log" \
    "$sanitizer" --tool memcheck --report-api-errors no --leak-check full --error-exitcode 99 \
    "$BUILD_DIR/tests/skein-tests" --gtest_filter="$memcheck_filter"
fi

# The threaded tests under ThreadSanitizer (their own build, build-tsan), on CUDA and both OpenCLs.
if want tsan; then
  step tsan "$OUTDIR/tsan.log" env BUILD_DIR="$SOURCE_DIR/build-tsan" JOBS="$JOBS" \
    bash "$SOURCE_DIR/tools/tsan-check.sh" "$OUTDIR/tsan.log"
fi
