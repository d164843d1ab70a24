#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The checks to run on a GPU machine, in one go: build with CUDA, the test suite, skein-info, the
# CUDA tests under compute-sanitizer, and the copy benchmark.
#
#   tools/gpu-check.sh OUTDIR
#
# Every step runs even when an earlier one failed; each step's exit code goes to OUTDIR/summary.txt.
# The script exits non-zero when any step failed. BUILD_DIR (default build-gpu) and JOBS (default:
# all cores) can be overridden. STEPS (default: all) picks groups of steps, comma-separated:
#   tests      ctest, the gtest suite, skein-info
#   mpi        the MPI suite over NCCL (one GPU per rank, one rank for every GPU)
#   faults     the fault scenarios: ranks sharing the first GPU (MPI backend; NCCL refused), and
#              over NCCL with one GPU per rank where there are two or more (FAULTS, names
#              separated by spaces, runs only those: e.g. "skip-nccl read_count-nccl-np2")
#   demo       the README's demo (tools/quickstart.sh demo) and skein-heat on two ranks sharing
#              the first GPU
#   bindings   the C API's tests and the C and Fortran heat2d examples on CUDA: one rank, two
#              ranks sharing the first GPU, and one GPU per rank where there are two (bindings.log)
#   python     the Python package on CUDA (issue 39): configured with SKEIN_WITH_PYTHON=ON when
#              python3 imports numpy and pybind11 (pip's: `python3 -m pybind11 --cmakedir`; else
#              the step python-deps fails and says what is missing), the module built; the
#              package's suite (tests/python less mpi/) with SKEIN_TEST_EXPECT_APIS=cuda, by pytest
#              where it imports, else by tests/python/minipytest.py (the log says which), which
#              includes the CuPy and PyTorch round trips (the same device pointer both ways; they
#              skip where CuPy or PyTorch do not import, and the log names the versions);
#              docs/examples/cupy_interop.py and python_basics.py as a user runs them; and the
#              Python overhead benchmark tools/peer-python-calls.py where it exists (--api cuda
#              --json python-calls.json) (python.log)
#   agree      the agreement check's cost on the 8-byte all_reduce (on and off in one run): the
#              MPI backend on two ranks sharing a GPU, NCCL on every GPU (two or more)
#   memcheck   the CUDA tests under compute-sanitizer (less the one test whose kernel writes
#              CU_MEM_ATTACH_HOST managed memory, while memcheck reports a plain program doing it:
#              tools/memcheck-attach-host.cpp)
#   tsan       the threaded tests under ThreadSanitizer on every backend (tools/tsan-check.sh)
#   bench      the copy and kernel benchmarks
#   coll       the collectives benchmark, every operation, against PyTorch, the MPI staging floor
#              and tools/compare-collectives.py's ratios
#   latency    the 8-byte all_reduce, Skein against NCCL called directly and nccl-tests'
#              all_reduce_perf (where NCCL_TESTS_BIN names the folder it was built into, or
#              NCCL_TESTS_SRC its source, which the step then builds: make MPI=1, sm_90), in
#              LAT_ROUNDS (default 5) alternating rounds of 2000 calls, one GPU per rank and one
#              rank for every GPU, on 2 GPUs and on every GPU; compare-collectives.py judges the
#              medians (one-rank runs with --bind-to none: NCCL's proxy threads, Skein's watchdog
#              and the launching thread on one core otherwise); LAT_PARTS=1 adds where Skein's time
#              per call goes (lat-parts.txt)
#   apps       skein-heat and skein-cg on 1, 2, 4 and 8 GPUs (as many as there are), each checking its
#              result; skein-heat's field bit-identical between 1 rank and 2 then (restarted) 4
#              ranks sharing the first GPU (tools/heat-exact-gpu.sh); its weak scaling against its
#              stencil's bandwidth floor
#              (apps.log, heat-weak-<n>.json; HEAT_NX and HEAT_NY_PER_GPU size its grid)
#   stencil    skein-heat's stencil against its floor (a device copy of the same bytes) on one GPU:
#              4099 x 4097 and 32768 x 65536, float32 and float64, on CUDA and on NVIDIA's
#              OpenCL, and 4099 x 4097 float32 once per --stencil-variant (rows, aligned, flat:
#              heat-floor-<api>-float32-small-<variant>.json); and its halo exchange, overlapped
#              with the interior and not, on 2 and 4 ranks sharing the first GPU (MPI backend),
#              time-sliced and under MPS (a private daemon of the script's own; there also 4
#              ranks overlapped with --halo-priority low, and 4 ranks on 8195 x 8193); skein-cg's
#              iteration against its floor at 8192 x 8192 float64 (stencil.log,
#              heat-floor-*.json, heat-halo-*.json, cg-floor.json)
#   cg         skein-cg on its building blocks (issue 36): 8192 x 8192 float64 on one GPU, the
#              fused, unfused and pipelined forms against the same CG written with CuPy
#              (tools/peer-cg.py: ElementwiseKernels and cuBLAS dots), CG_ROUNDS (default 3)
#              alternating rounds of CG_ITERS (default 300) iterations; then 4096 x 4096 float64
#              on 1 GPU and on every GPU (one GPU per rank, and one rank driving every GPU) in
#              CG_STRONG_ROUNDS (default 5) alternating rounds for the strong scaling;
#              tools/compare-cg.py prints floor / iteration, Skein / CuPy and the efficiencies
#              (of the medians, and per round) and PASS or FAIL against 0.9, 0.8 and 0.85 (cg.log,
#              cg-*.json)
#   heat3d     skein-heat's 3-D process-grid path (--nz, GridArray) weak scaling with the halos
#              overlapped (--halo-exchange overlapped), float64, HEAT3D_N^3 points per GPU (default
#              512: a field of 1 GiB and a step that moves 2 GiB per GPU, so that a step's fixed
#              costs, launches for every GPU from one host thread, the events between the two
#              queues, the shell kernel, stay a few % of it, and faces of 2 MiB), HEAT3D_STEPS steps
#              (default 1000, intervals of 100): on 1, 2 and every GPU, one GPU per rank (mpirun,
#              SKEIN_API=cuda) and one rank driving every GPU (--bind-to none), on the automatic
#              process grid and on the grids HEAT3D_GRIDS names (PxQxR ..., default 2x2x2 on 8
#              GPUs, none otherwise; each where it has as many places as GPUs); first the stencil's
#              floor on one GPU, float64 and float32 (the kernel against a device copy of the same
#              bytes, measured in the run, as `stencil` does in 2-D), and before them the
#              overlapped step byte-identical to the serial one on CUDA (96 x 80 x 72, periodic,
#              every GPU: one per rank and one rank for all); tools/compare-heat3d.py
#              prints each run's efficiency t_step(1 GPU) / t_step(N GPUs) and floor / step and
#              PASS or FAIL against 0.95 and 0.9 (heat3d.log, heat3d-*.json)
#   small      host time per call on small arrays (1 KiB to 16 MiB): skein-bench-small (axpy, a user
#              elementwise kernel, sum; sum, astype and Array::empty making their results, from
#              the array pool and without it; a raw launch, a raw graph launch, a raw
#              cuMemAllocAsync) and CuPy's, their batches alternating in every round
#              (tools/peer-small-arrays.py --skein), as ratios; the bandwidth of astype and sum on
#              1 GiB (skein-bench-array-kernels) with the pool and with SKEIN_ARRAY_POOL=0 (and a
#              base build's: SMALL_BASE_BUILD_DIR); tools/compare-small.py prints the judged ratios
#              with PASS or FAIL (small.txt, small-*.json)
#   arrays     skein-bench (axpy, sum, gemm) on one GPU against CuPy, on NVIDIA's OpenCL, and on
#              1 and 4 GPUs for the speed-ups, with tools/compare-arrays.py's ratios; and
#              skein-bench scaling over 1..N GPUs (ranks, and one rank), drawn as SVG plots
#   halo       GridArray's halo exchange of 3-D float64 fields (skein-bench-halo) against its floor,
#              the same transfers of the same bytes (faces along axis 0 as the whole ghost planes
#              the exchange moves) by plain peer copies (inside a rank) and NCCL send/recv
#              (between ranks) in the same run and rounds, and against one NCCL send/recv of a
#              face: on 2 GPUs and on every GPU (with more than 2 also an N x 1 x 1 grid), one GPU
#              per rank (mpirun, SKEIN_API=cuda) and one rank driving every GPU (--bind-to none);
#              large faces (8 KiB to 4.5 MiB, cubic blocks) and small ones (512 B to 8 KiB);
#              HALO_ROUNDS (default 5) alternating rounds; tools/compare-halo.py's verdicts against
#              issue 35's bounds (halo.txt, halo-*.json; a FAIL fails the step compare-halo)
# NO_CTEST=1 leaves out ctest in `tests` (its PoCL suites are CI's), SKEIN_GTEST_FILTER narrows the
# gtest run, SKEIN_GTEST_SHARDS=N (default 1) runs it as N gtest shards at once (separate
# processes sharing the GPUs and the disk cache; the whole suite outlasts one 600 s call of the
# device tool), then the tests that another process on the GPUs disturbs in one
# process after them (SKEIN_GTEST_SERIAL, a gtest filter; default: the device-memory readings
# *MemoryInfo* and DefaultContextFallback.*, and CtypePrelude.*, whose contexts on every OpenCL
# platform at once met CL_OUT_OF_HOST_MEMORY beside 4 shards on 2 x H200), COLLS (default: every collective) narrows `coll` (the non-blocking all_reduce and the
# MPI floor run where COLLS is unset or names all_reduce), NO_TORCH=1 leaves PyTorch's collectives
# out of it. summary.txt gives each step's seconds; coll-json/ keeps the collectives' JSON.
# BUILD_TARGETS (default: all) builds only those targets (space-separated), for short runs;
# CMAKE_EXTRA_ARGS adds configure arguments.
# It writes these files, and the scaling runs' scaling-*.json and scaling-*.svg, the apps'
# apps.log and heat-weak-*.json, the halo step's halo.txt and halo-*.json, heat3d's heat3d.log and
# heat3d-*.json, the python group's python.log and python-calls.json, and nothing else:
#   summary.txt      step, exit code, log and seconds of every step
#   build.log        nvidia-smi, configure, build
#   ctest.log        the whole test suite (with SKEIN_GTEST_SHARDS: also gtest-shard-<i>.log and
#                    gtest-serial.log)
#   skein-info.txt   skein-info; skein-info.json: skein-info --json
#   memcheck.log     the CUDA tests under compute-sanitizer memcheck
#   coll-json/       the collectives' JSON (skein-*, nccl-*, torch-*), for compare-collectives.py
#   bench-copy.txt   the copy and kernel benchmarks; bench-coll.txt: collectives and their peer
set -uo pipefail

if (($# != 1)); then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi

SOURCE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1"
OUTDIR="$(cd "$1" && pwd)"
BUILD_DIR="${BUILD_DIR:-build-gpu}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
cd "$SOURCE_DIR" || exit 2

# NVLink multicast (NVLS) off, as in the reference measurements Skein is compared with
# (shared PEERS.md).
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# A GPU run must test CUDA and NVIDIA's OpenCL, never pass by finding no backend.
export SKEIN_TEST_EXPECT_APIS="${SKEIN_TEST_EXPECT_APIS:-cuda,opencl}"

STEPS="${STEPS:-all}"
# want GROUP: whether STEPS selects the group.
want() { [[ "$STEPS" == all || ",$STEPS," == *",$1,"* ]]; }

SUMMARY="$OUTDIR/summary.txt"
for f in summary.txt build.log ctest.log skein-info.txt skein-info.json memcheck.log tsan.log \
  bench-copy.txt bench-copy.json bench-coll.txt; do
  rm -f "$OUTDIR/$f"
done
rm -f "$OUTDIR"/scaling-*.json "$OUTDIR"/scaling-*.svg "$OUTDIR"/apps.log "$OUTDIR"/heat-weak-*.json
rm -f "$OUTDIR"/stencil.log "$OUTDIR"/heat-floor-*.json "$OUTDIR"/heat-halo-*.json "$OUTDIR"/cg-floor.json
rm -f "$OUTDIR"/heat3d.log "$OUTDIR"/heat3d-*.json
rm -f "$OUTDIR"/small.txt "$OUTDIR"/small-*.json
rm -f "$OUTDIR"/halo.txt "$OUTDIR"/halo-*.json "$OUTDIR"/python-calls.json "$OUTDIR"/gtest-shard-*.log
rm -rf "$OUTDIR"/coll-json
: >"$SUMMARY"
failed=0

# step NAME LOG COMMAND...: runs COMMAND with its output appended to LOG (and on the terminal) and
# records the exit code.
step() {
  local name="$1" log="$2"
  shift 2
  echo "=== $name: $*"
  local start=$SECONDS
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  printf '%-16s %3d  %-16s %5d s\n' "$name" "$rc" "$(basename "$log")" $((SECONDS - start)) >>"$SUMMARY"
  if ((rc != 0)); then
    failed=1
    echo "=== $name failed with exit code $rc"
  fi
  return 0
}

# nvidia-smi is informational: a machine without it still gets the rest (and the failure is
# recorded).
step nvidia-smi "$OUTDIR/build.log" nvidia-smi

generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  generator=(-G Ninja)
fi
cuda_root=()
if [[ -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null 2>&1; then
  cuda_root=(-DCUDAToolkit_ROOT=/usr/local/cuda)
fi
# CMAKE_EXTRA_ARGS: more configure arguments (e.g. -DDLPACK_INCLUDE_DIR=... where the machine has
# no dlpack/dlpack.h of its own).
read -r -a extra_args <<<"${CMAKE_EXTRA_ARGS:-}"
# The Python package (group python): ON, so that a package CMake cannot build fails the configure,
# only where python3 has what it needs; otherwise python-deps fails and names what is missing.
python_ok=0
if want python; then
  rm -f "$OUTDIR/python.log"
  # pybind11: pip's Python module (these machines), or a distribution's CMake package
  # (Debian's pybind11-dev) that CMake finds without it.
  step python-deps "$OUTDIR/python.log" python3 -c '
import glob, sys, numpy
try:
    import pybind11
    found = "pybind11 " + pybind11.__version__ + " (pip)"
except ImportError:
    found = ", ".join(glob.glob("/usr/lib/cmake/pybind11") + glob.glob("/usr/share/cmake/pybind11"))
    if not found:
        sys.exit("python-deps: pybind11 is missing: pip install pybind11, or the pybind11-dev package")
print("python", sys.version.split()[0], "numpy", numpy.__version__, found)'
  if tail -n 1 "$SUMMARY" | grep -q '^python-deps *0 '; then
    python_ok=1
    extra_args+=(-DSKEIN_WITH_PYTHON=ON "-DPython3_EXECUTABLE=$(command -v python3)")
  fi
fi
step configure "$OUTDIR/build.log" \
  cmake --preset gpu -S . -B "$BUILD_DIR" "${generator[@]}" "${cuda_root[@]}" "${extra_args[@]}"
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
# A short run's targets get the module too when the python group runs.
if ((python_ok)) && [[ -n "${BUILD_TARGETS:-}" ]]; then
  targets+=(--target skein_python --target skein-bench-small)
fi
step build "$OUTDIR/build.log" cmake --build "$BUILD_DIR" --parallel "$JOBS" "${targets[@]}"

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
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
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

if want bench; then
  step bench-copy "$OUTDIR/bench-copy.txt" "$BUILD_DIR/tests/bench/skein-bench-copy"
  # Kernel launches and the program cache; same file as the copy benchmark's.
  step bench-kernels "$OUTDIR/bench-copy.txt" "$BUILD_DIR/tests/bench/skein-bench-kernels"
  # Skein on cudaMalloc'ed memory against its own (axpy, all_reduce), and a transpose through
  # dynamic shared memory against the device copy; one rank, one GPU.
  step bench-interop "$OUTDIR/bench-interop.txt" timeout 300 mpirun -np 1 -x SKEIN_API=cuda \
    -x SKEIN_DEVICES_PER_RANK=1 -x NCCL_NVLS_ENABLE "$BUILD_DIR/tests/bench/skein-bench-interop" \
    --json "$OUTDIR/bench-interop.json"
fi

if want latency && ((ngpu > 1)); then
  jsondir="$OUTDIR/coll-json"
  mkdir -p "$jsondir"
  coll_bin="$BUILD_DIR/apps/skein-bench-collectives/skein-bench-collectives"
  nccl_bin="$BUILD_DIR/tests/bench/skein-bench-nccl"
  # nccl-tests' all_reduce_perf, the peer itself, where NCCL_TESTS_BIN names the folder it was
  # built into (from its public source, on the GPU machine: it is no part of this repository).
  ncclt=""
  # NCCL_TESTS_SRC: nccl-tests' source tree (github.com/NVIDIA/nccl-tests, carried to the machine):
  # all_reduce_perf is built from it here, for this machine's GPUs, NCCL and Open MPI.
  if [[ -z "${NCCL_TESTS_BIN:-}" && -n "${NCCL_TESTS_SRC:-}" ]]; then
    NCCL_TESTS_BIN="$SOURCE_DIR/$BUILD_DIR/nccl-tests"
    [[ "$BUILD_DIR" == /* ]] && NCCL_TESTS_BIN="$BUILD_DIR/nccl-tests"
    nccl_inc="$(dirname "$(find /usr/include /usr/local/cuda/include /usr/local/include \
      -maxdepth 2 -name nccl.h 2>/dev/null | head -n 1)")"
    mpi_inc="$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')"
    step nccl-tests-build "$OUTDIR/bench-coll.txt" make -C "$NCCL_TESTS_SRC/src" -j "$JOBS" MPI=1 \
      "MPI_HOME=$(dirname "$mpi_inc")" "NCCL_HOME=$(dirname "$nccl_inc")" \
      "CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}" "BUILDDIR=$NCCL_TESTS_BIN" \
      "NVCC_GENCODE=${NCCL_TESTS_GENCODE:--gencode=arch=compute_90,code=sm_90}" \
      os.build "$NCCL_TESTS_BIN/all_reduce_perf"
  fi
  if [[ -n "${NCCL_TESTS_BIN:-}" && -x "$NCCL_TESTS_BIN/all_reduce_perf" ]]; then
    ncclt="$NCCL_TESTS_BIN/all_reduce_perf"
  fi
  # The 8-byte all_reduce's latency: the `coll` sweep times 20 calls of ~10 us per size, and its
  # figures move by several us from one process to the next (CPU placement, the host's clocks).
  # LAT_ROUNDS (default 5) alternating rounds of 2000 timed calls each: Skein, NCCL called
  # directly and nccl-tests, one GPU per rank and one rank driving every GPU, on 2 GPUs and on
  # every GPU (coll-json/latency-<who>-<mode>-g<N>-<round>.json, and .txt for nccl-tests, whose
  # medians tools/compare-collectives.py compares).
  lat=(--coll all_reduce -b 8 -e 8 -n 2000 -w 200)
  lat_counts=(2)
  ((ngpu > 2)) && lat_counts+=("$ngpu")
  for g in "${lat_counts[@]}"; do
    visible="$(seq -s, 0 $((g - 1)))"
    for ((round = 1; round <= ${LAT_ROUNDS:-5}; round++)); do
      tag="g$g-$round"
      step "lat-skein-1pr-$tag" "$OUTDIR/bench-coll.txt" timeout 120 env CUDA_VISIBLE_DEVICES="$visible" \
        mpirun -np "$g" --oversubscribe -x CUDA_VISIBLE_DEVICES -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE \
        "$coll_bin" "${lat[@]}" --devices-per-rank 1 --json "$jsondir/latency-skein-1pr-$tag.json"
      step "lat-nccl-1pr-$tag" "$OUTDIR/bench-coll.txt" timeout 120 env CUDA_VISIBLE_DEVICES="$visible" \
        mpirun -np "$g" --oversubscribe -x CUDA_VISIBLE_DEVICES -x NCCL_NVLS_ENABLE "$nccl_bin" "${lat[@]}" \
        --json "$jsondir/latency-nccl-1pr-$tag.json"
      if [[ -n "$ncclt" ]]; then
        step "lat-ncclt-1pr-$tag" "$jsondir/latency-ncclt-1pr-$tag.txt" timeout 120 \
          env CUDA_VISIBLE_DEVICES="$visible" mpirun -np "$g" --oversubscribe -x CUDA_VISIBLE_DEVICES \
          -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH "$ncclt" -b 8 -e 8 -n 2000 -w 200 -g 1
      fi
      step "lat-skein-1rank-$tag" "$OUTDIR/bench-coll.txt" timeout 120 env CUDA_VISIBLE_DEVICES="$visible" \
        mpirun -np 1 --bind-to none -x CUDA_VISIBLE_DEVICES -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE "$coll_bin" "${lat[@]}" \
        --devices-per-rank "$g" --json "$jsondir/latency-skein-1rank-$tag.json"
      step "lat-nccl-1rank-$tag" "$OUTDIR/bench-coll.txt" timeout 120 env CUDA_VISIBLE_DEVICES="$visible" \
        mpirun -np 1 --bind-to none -x CUDA_VISIBLE_DEVICES -x NCCL_NVLS_ENABLE "$nccl_bin" "${lat[@]}" -g "$g" \
        --json "$jsondir/latency-nccl-1rank-$tag.json"
      if [[ -n "$ncclt" ]]; then
        step "lat-ncclt-1rank-$tag" "$jsondir/latency-ncclt-1rank-$tag.txt" timeout 120 \
          env CUDA_VISIBLE_DEVICES="$visible" mpirun -np 1 --bind-to none -x CUDA_VISIBLE_DEVICES \
          -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH "$ncclt" -b 8 -e 8 -n 2000 -w 200 -g "$g"
      fi
    done
  done
  # LAT_PARTS=1: where the time of Skein's call goes, on every GPU with one per rank, in
  # alternating rounds of 10000 calls (lat-parts.txt): NCCL's own loop alone and with an event
  # recorded after each call (skein-bench-nccl --extra event, as each Skein call returns one),
  # Skein as it is and with its agreement check and timeout off, and once Skein's host time per
  # call by phase (SKEIN_PROFILE_COLLECTIVES=1).
  if [[ "${LAT_PARTS:-0}" == 1 ]]; then
    parts=(--coll all_reduce -b 8 -e 8 -n 10000 -w 1000)
    step "lat-parts-profile" "$OUTDIR/lat-parts.txt" timeout 120 mpirun -np "$ngpu" --oversubscribe \
      -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE -x SKEIN_PROFILE_COLLECTIVES=1 "$coll_bin" "${parts[@]}" \
      --devices-per-rank 1
    for ((round = 1; round <= ${LAT_ROUNDS:-5}; round++)); do
      for extra in none event; do
        step "lat-parts-nccl-$extra-$round" "$OUTDIR/lat-parts.txt" timeout 120 mpirun -np "$ngpu" \
          --oversubscribe -x NCCL_NVLS_ENABLE "$nccl_bin" "${parts[@]}" --extra "${extra/none/}" \
          --json "$jsondir/parts-nccl_$extra-$round.json"
      done
      step "lat-parts-skein-$round" "$OUTDIR/lat-parts.txt" timeout 120 mpirun -np "$ngpu" --oversubscribe \
        -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE "$coll_bin" "${parts[@]}" --devices-per-rank 1 \
        --json "$jsondir/parts-skein_default-$round.json"
      step "lat-parts-skein-bare-$round" "$OUTDIR/lat-parts.txt" timeout 120 mpirun -np "$ngpu" --oversubscribe \
        -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE -x SKEIN_CHECK_COLLECTIVES=0 -x SKEIN_COLLECTIVE_TIMEOUT=0 \
        "$coll_bin" "${parts[@]}" --devices-per-rank 1 --json "$jsondir/parts-skein_bare-$round.json"
    done
    step compare-parts "$OUTDIR/lat-parts.txt" python3 - "$jsondir" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
by = {}
for f in glob.glob(os.path.join(d, "parts-*.json")):
    who = os.path.basename(f)[len("parts-"):].rsplit("-", 1)[0]
    r = json.load(open(f))["rows"][0]
    by.setdefault(who, []).append((r["out_of_place"]["time_us"], r["in_place"]["time_us"]))
med = lambda v: sorted(v)[len(v) // 2]
print("medians of the rounds, 8-byte all_reduce, us (out of place / in place):")
for who, t in sorted(by.items()):
    print(f"  {who:<16} {med([x[0] for x in t]):7.2f} / {med([x[1] for x in t]):7.2f}  ({len(t)} rounds)")
PY
  fi
  # With `coll` too, its compare step (below) judges these rounds with the rest.
  if ! want coll; then
    step compare-latency "$OUTDIR/bench-coll.txt" python3 tools/compare-collectives.py "$jsondir"
  fi
fi

# Collectives against their peers, every operation at nccl-tests' sizes (8 B to 1 GiB, x8 a
# row): Skein with one GPU per rank and with one rank driving every GPU, NCCL called directly
# both ways and PyTorch's NCCL collectives in the same run, the MPI backend's all_reduce against
# its staging floor on two GPUs, and the ratios (tools/compare-collectives.py, also against
# shared/PEERS.md).
if want coll && ((ngpu > 1)); then
  jsondir="$OUTDIR/coll-json"
  mkdir -p "$jsondir"
  coll_bin="$BUILD_DIR/apps/skein-bench-collectives/skein-bench-collectives"
  sizes=(-b 8 -e 1G -f 8 -n 20 -w 5)
  for coll in ${COLLS:-all_reduce all_gather broadcast reduce reduce_scatter}; do
    step "$coll-1pr" "$OUTDIR/bench-coll.txt" timeout 300 mpirun -np "$ngpu" --oversubscribe \
      -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE "$coll_bin" --coll "$coll" "${sizes[@]}" \
      --devices-per-rank 1 --json "$jsondir/skein-$coll-1pr.json"
    step "$coll-1rank" "$OUTDIR/bench-coll.txt" timeout 300 mpirun -np 1 \
      -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE "$coll_bin" --coll "$coll" "${sizes[@]}" \
      --devices-per-rank "$ngpu" --json "$jsondir/skein-$coll-1rank.json"
    step "$coll-nccl" "$OUTDIR/bench-coll.txt" timeout 300 mpirun -np "$ngpu" --oversubscribe \
      -x NCCL_NVLS_ENABLE "$BUILD_DIR/tests/bench/skein-bench-nccl" --coll "$coll" "${sizes[@]}" \
      --json "$jsondir/nccl-$coll.json"
    step "$coll-nccl-1rank" "$OUTDIR/bench-coll.txt" timeout 300 mpirun -np 1 -x NCCL_NVLS_ENABLE \
      "$BUILD_DIR/tests/bench/skein-bench-nccl" --coll "$coll" -g "$ngpu" "${sizes[@]}" \
      --json "$jsondir/nccl-$coll-1rank.json"
    if [[ "${NO_TORCH:-0}" != 1 ]] && command -v torchrun >/dev/null 2>&1; then
      step "$coll-torch" "$OUTDIR/bench-coll.txt" timeout 300 torchrun --nproc_per_node "$ngpu" \
        tools/peer-collectives.py --coll "$coll" "${sizes[@]}" --json "$jsondir/torch-$coll.json"
    fi
  done
  # Small all_reduces with NCCL's non-blocking communicators, for the cost of that mode, and the
  # MPI backend's floor: with every collective, or where COLLS names all_reduce.
  if [[ -z "${COLLS:-}" || " $COLLS " == *" all_reduce "* ]]; then
    step all_reduce-nb "$OUTDIR/bench-coll.txt" timeout 300 mpirun -np "$ngpu" --oversubscribe \
      -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE -x SKEIN_NCCL_BLOCKING=0 "$coll_bin" \
      --coll all_reduce -b 8 -e 64K -f 8 -n 20 -w 5 --devices-per-rank 1
    step mpi-floor "$OUTDIR/bench-coll.txt" timeout 300 mpirun -np 2 --oversubscribe \
      -x SKEIN_API=cuda "$coll_bin" --coll all_reduce --backend mpi --floor -b 8 -e 256M -f 8 \
      -n 20 -w 5 --devices-per-rank 1
  fi
  step compare-coll "$OUTDIR/bench-coll.txt" python3 tools/compare-collectives.py "$jsondir"
fi

# GridArray's halo exchange against its floor (tests/bench/halo_bench.cpp): one GPU per rank and
# one rank driving every GPU, on 2 GPUs and on every GPU, large faces and small ones; judged by
# tools/compare-halo.py (floor / exchange >= 0.9 from 1 MiB faces, exchange - send/recv <= 2 us up
# to 64 KiB faces).
if want halo && ((ngpu > 1)); then
  halo_bin="$BUILD_DIR/tests/bench/skein-bench-halo"
  halo_counts=(2)
  ((ngpu > 2)) && halo_counts+=("$ngpu")
  for g in "${halo_counts[@]}"; do
    visible="$(seq -s, 0 $((g - 1)))"
    grids=(auto)
    ((g > 2)) && grids+=("${g}x1x1")
    for grid in "${grids[@]}"; do
      grid_arg=()
      [[ $grid != auto ]] && grid_arg=(--grid "$grid")
      for size in large small; do
        # Faces up to 32 KiB (edges to 64) only in the small run, whose 2000-call loops time them:
        # in 20-call loops (enough for the large faces) one rank's 8 KiB face read 4.6 us over
        # the send/recv where the small run's loops read 1.3 us (2 x H200, 2026-11-30).
        if [[ $size == large ]]; then
          sizes=(--edges 128,256,384,512,768 --iters 20 --warmup 3)
        else
          [[ $grid != auto ]] && continue
          sizes=(--edges 8,16,32,64 --iters 2000 --warmup 200)
        fi
        tag="g$g-$grid-$size"
        step "halo-1pr-$tag" "$OUTDIR/halo.txt" timeout 600 env CUDA_VISIBLE_DEVICES="$visible" \
          mpirun -np "$g" --oversubscribe -x CUDA_VISIBLE_DEVICES -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE \
          "$halo_bin" "${sizes[@]}" "${grid_arg[@]}" --rounds "${HALO_ROUNDS:-5}" --devices-per-rank 1 \
          --json "$OUTDIR/halo-1pr-$tag.json"
        step "halo-1rank-$tag" "$OUTDIR/halo.txt" timeout 600 env CUDA_VISIBLE_DEVICES="$visible" \
          mpirun -np 1 --bind-to none -x CUDA_VISIBLE_DEVICES -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE \
          "$halo_bin" "${sizes[@]}" "${grid_arg[@]}" --rounds "${HALO_ROUNDS:-5}" --devices-per-rank "$g" \
          --json "$OUTDIR/halo-1rank-$tag.json"
      done
    done
  done
  step compare-halo "$OUTDIR/halo.txt" python3 tools/compare-halo.py "$OUTDIR"
fi

# Array kernels: one GPU against CuPy (1 GiB float32 arrays, gemm 8192^3), NVIDIA's OpenCL, and
# the speed-up from one GPU to four (one rank per GPU, and one rank for all four) at sizes that
# fill the GPUs (axpy and sum: 4 Gi float32 elements, 16 GiB an array; gemm: 16384^2).
# The sample apps on 1, 2 and 4 GPUs, one rank per GPU: each run checks its own result (skein-heat
# against the analytic solution, skein-cg its true residual, on the host too) and exits non-zero
# when it is wrong. Then skein-heat's weak scaling: HEAT_NY_PER_GPU rows of HEAT_NX points per GPU
# (float32; the default, 2 x 17 GB per GPU, fits an 80 GB H100 and an H200), its step time against
# the stencil's floor (read and write the block once at the device copy bandwidth measured in the
# same run), and the efficiency t_step(1 GPU) / t_step(n GPUs) from the JSON summaries.
if want apps && ((ngpu > 0)); then
  heat_bin="$BUILD_DIR/apps/skein-heat/skein-heat"
  cg_bin="$BUILD_DIR/apps/skein-cg/skein-cg"
  apps_tmp="$(mktemp -d)"
  # One GPU per rank: the runs on n of the machine's GPUs use n ranks (by default one rank would
  # take every GPU of the machine, and "1 GPU" would mean all of them). cg-deterministic sets its
  # own devices per rank.
  gpu_mpi=(-x SKEIN_API=cuda -x NCCL_NVLS_ENABLE -x SKEIN_DEVICES_PER_RANK=1)
  for n in 1 2 4 8; do
    ((n <= ngpu)) || continue
    step "heat-$n" "$OUTDIR/apps.log" timeout 300 mpirun -np "$n" "${gpu_mpi[@]}" "$heat_bin" \
      --nx 4099 --ny 4097 --steps 400 --report-every 100 --dtype float64 --checkpoint-every 200 \
      --out "$apps_tmp/heat-$n" --overwrite --png "$apps_tmp/heat-$n.png"
    step "heat-f32-$n" "$OUTDIR/apps.log" timeout 300 mpirun -np "$n" "${gpu_mpi[@]}" "$heat_bin" \
      --nx 1023 --ny 777 --steps 1000 --dtype float32
    for dt in float32 float64; do
      step "cg-$dt-$n" "$OUTDIR/apps.log" env SKEIN_API=cuda SKEIN_DEVICES_PER_RANK=1 \
        cmake -DMPIEXEC=mpirun -DPROGRAM="$cg_bin" -DNP="$n" -DDEVICES="$n" -DMODE=pass -DLIMIT=300 \
        -DARGS="--nx;1024;--ny;1023;--dtype;$dt" -DDIR="$apps_tmp/cg-$dt-$n" \
        -P tests/apps/cg_check.cmake
    done
  done
  # The deterministic mode compares runs on several GPUs (NCCL refuses two ranks on one GPU).
  if ((ngpu >= 2)); then
    configs=1x1,2x1
    ((ngpu >= 4)) && configs+=,4x1
    ((ngpu >= 8)) && configs+=,8x1
    step cg-deterministic "$OUTDIR/apps.log" env SKEIN_API=cuda cmake -DMPIEXEC=mpirun \
      -DPROGRAM="$cg_bin" -DMODE=deterministic -DCONFIGS="$configs" -DLIMIT=300 \
      -DARGS="--nx;1024;--ny;1023;--dtype;float32" -DDIR="$apps_tmp/cg-det" -P tests/apps/cg_check.cmake
  fi
  for n in 1 2 4 8; do
    ((n <= ngpu)) || continue
    step "heat-weak-$n" "$OUTDIR/apps.log" timeout 600 mpirun -np "$n" "${gpu_mpi[@]}" "$heat_bin" \
      --weak --nx "${HEAT_NX:-32768}" --ny "${HEAT_NY_PER_GPU:-131072}" --dtype float32 \
      --steps 200 --report-every 20 --json "$OUTDIR/heat-weak-$n.json"
  done
  step heat-weak-eff "$OUTDIR/apps.log" python3 tools/compare-heat.py "$OUTDIR"
  # Exact results on the GPU: plain launches on 1 rank against graph launches on 2 ranks sharing
  # the first GPU, restarted from a checkpoint on 4.
  step heat-exact "$OUTDIR/apps.log" timeout 300 bash tools/heat-exact-gpu.sh "$heat_bin" \
    "$apps_tmp/exact"
  rm -rf "$apps_tmp"
fi

if want cg && ((ngpu > 0)); then
  cg_bin="$BUILD_DIR/apps/skein-cg/skein-cg"
  one_gpu=(-x CUDA_VISIBLE_DEVICES=0 -x SKEIN_DEVICES_PER_RANK=1 -x NCCL_NVLS_ENABLE)
  cg_iters="${CG_ITERS:-300}"
  # A fixed number of iterations (they do not converge in them: exit status 1 is expected; the
  # JSON summary has the figures).
  cg_fixed() { "$@"; local rc=$?; ((rc == 0 || rc == 1)); }
  for round in $(seq 1 "${CG_ROUNDS:-3}"); do
    for form in fused unfused pipelined; do
      step "cg-$form-$round" "$OUTDIR/cg.log" cg_fixed timeout 300 mpirun -np 1 "${one_gpu[@]}" \
        -x SKEIN_API=cuda "$cg_bin" --nx 8192 --ny 8192 --dtype float64 --max-iters "$cg_iters" \
        --report-every 0 --warmup 20 --form $form --json "$OUTDIR/cg-8192-$form-$round.json"
    done
    step "cg-cupy-$round" "$OUTDIR/cg.log" env CUDA_VISIBLE_DEVICES=0 timeout 300 python3 tools/peer-cg.py \
      --nx 8192 --ny 8192 --iterations "$cg_iters" --rounds 1 --json "$OUTDIR/cg-8192-cupy-$round.json"
  done
  # Strong scaling at 4096^2 (issue 36): one GPU, one GPU per rank and one rank for every GPU,
  # alternating in CG_STRONG_ROUNDS rounds (the one-GPU time moves by 3-5 % from run to run).
  if ((ngpu >= 2)); then
    strong=(--nx 4096 --ny 4096 --max-iters 500 --warmup 20 --report-every 0)
    for round in $(seq 1 "${CG_STRONG_ROUNDS:-5}"); do
      step "cg-strong-1-$round" "$OUTDIR/cg.log" cg_fixed timeout 300 mpirun -np 1 "${one_gpu[@]}" \
        -x SKEIN_API=cuda "$cg_bin" "${strong[@]}" --json "$OUTDIR/cg-4096-1-$round.json"
      step "cg-strong-$ngpu-ranks-$round" "$OUTDIR/cg.log" cg_fixed timeout 300 mpirun -np "$ngpu" \
        -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE -x SKEIN_DEVICES_PER_RANK=1 "$cg_bin" "${strong[@]}" \
        --json "$OUTDIR/cg-4096-$ngpu-ranks-$round.json"
      step "cg-strong-$ngpu-one-rank-$round" "$OUTDIR/cg.log" cg_fixed timeout 300 mpirun -np 1 \
        --bind-to none -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE -x SKEIN_DEVICES_PER_RANK="$ngpu" \
        "$cg_bin" "${strong[@]}" --json "$OUTDIR/cg-4096-$ngpu-one-rank-$round.json"
    done
  fi
  step cg-compare "$OUTDIR/cg.log" python3 tools/compare-cg.py "$OUTDIR"
fi

if want stencil && ((ngpu > 0)); then
  heat_bin="$BUILD_DIR/apps/skein-heat/skein-heat"
  one_gpu=(-x CUDA_VISIBLE_DEVICES=0 -x SKEIN_DEVICES_PER_RANK=1 -x NCCL_NVLS_ENABLE)
  # NVIDIA's OpenCL is run as one process without mpirun (MPI starts as a singleton): under
  # mpirun its platform was not found on these machines, only PoCL's.
  for api in cuda opencl; do
    if [[ $api == cuda ]]; then
      launch=(timeout 400 mpirun -np 1 "${one_gpu[@]}" -x SKEIN_API=cuda)
    else
      launch=(timeout 400 env CUDA_VISIBLE_DEVICES=0 SKEIN_DEVICES_PER_RANK=1 SKEIN_API=opencl
        SKEIN_DEVICES=NVIDIA)
    fi
    for dt in float64 float32; do
      step "floor-$api-$dt-small" "$OUTDIR/stencil.log" "${launch[@]}" "$heat_bin" --nx 4099 \
        --ny 4097 --dtype $dt --steps 400 --report-every 100 \
        --json "$OUTDIR/heat-floor-$api-$dt-small.json"
      step "floor-$api-$dt-large" "$OUTDIR/stencil.log" "${launch[@]}" "$heat_bin" --nx 32768 \
        --ny 65536 --dtype $dt --steps 20 --report-every 10 \
        --json "$OUTDIR/heat-floor-$api-$dt-large.json"
    done
    # The odd-width float32 grid once per kernel variant (the default run above is `auto`).
    for variant in rows aligned flat; do
      step "floor-$api-float32-small-$variant" "$OUTDIR/stencil.log" "${launch[@]}" "$heat_bin" \
        --nx 4099 --ny 4097 --dtype float32 --steps 400 --report-every 100 --stencil-variant "$variant" \
        --json "$OUTDIR/heat-floor-$api-float32-small-$variant.json"
    done
  done
  # skein-cg's iteration against its memory floor, 8192 x 8192 float64, 500 iterations (it does
  # not converge in them, so its exit status 1 is expected; the JSON summary has the figures).
  step cg-floor "$OUTDIR/stencil.log" bash -c '"$@"; rc=$?; ((rc == 0 || rc == 1))' cg-floor \
    timeout 300 mpirun -np 1 "${one_gpu[@]}" -x SKEIN_API=cuda "$BUILD_DIR/apps/skein-cg/skein-cg" \
    --nx 8192 --ny 8192 --dtype float64 --max-iters 500 --json "$OUTDIR/cg-floor.json"
  # Ranks sharing the first GPU exchange their halos through the host (MPI backend).
  for np in 2 4; do
    for mode in serial overlapped; do
      step "halo-$np-$mode" "$OUTDIR/stencil.log" timeout 300 mpirun -np $np --oversubscribe \
        "${one_gpu[@]}" -x SKEIN_API=cuda -x SKEIN_SHARE_DEVICES=1 "$heat_bin" --nx 4099 --ny 4097 \
        --dtype float64 --steps 600 --report-every 100 --halo-exchange $mode \
        --json "$OUTDIR/heat-halo-$np-$mode.json"
    done
  done
  # The same under MPS (NVIDIA's Multi-Process Service), which lets the ranks' kernels and copies
  # share the GPU at once instead of taking turns by time slices: a control daemon of this script's
  # own (its pipe and log directories private, so nothing else connects to it), stopped after the
  # runs. It changes no setting of the GPU (the compute mode stays as it is).
  if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    mps_dir=$(mktemp -d)
    mkdir -p "$mps_dir/pipe" "$mps_dir/log"
    if CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" CUDA_MPS_LOG_DIRECTORY="$mps_dir/log" \
        nvidia-cuda-mps-control -d; then
      for np in 2 4; do
        for mode in serial overlapped; do
          step "halo-mps-$np-$mode" "$OUTDIR/stencil.log" timeout 300 mpirun -np $np --oversubscribe \
            "${one_gpu[@]}" -x CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" -x SKEIN_API=cuda \
            -x SKEIN_SHARE_DEVICES=1 "$heat_bin" --nx 4099 --ny 4097 --dtype float64 --steps 600 \
            --report-every 100 --halo-exchange $mode --json "$OUTDIR/heat-halo-mps-$np-$mode.json"
        done
      done
      # The overlapped step with its halo queue at the priority of every other queue (the default
      # is the device's most urgent): what the priority gives.
      step "halo-mps-4-overlapped-low" "$OUTDIR/stencil.log" timeout 300 mpirun -np 4 --oversubscribe \
        "${one_gpu[@]}" -x CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" -x SKEIN_API=cuda \
        -x SKEIN_SHARE_DEVICES=1 "$heat_bin" --nx 4099 --ny 4097 --dtype float64 --steps 600 \
        --report-every 100 --halo-priority low --json "$OUTDIR/heat-halo-mps-4-overlapped-low.json"
      # Four ranks on a grid of 4 x the points: each rank's interior takes 4 x as long, its
      # exchange (two neighbours, staged through the host) about as long as before.
      for mode in serial overlapped; do
        step "halo-mps-4-$mode-8195" "$OUTDIR/stencil.log" timeout 300 mpirun -np 4 --oversubscribe \
          "${one_gpu[@]}" -x CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" -x SKEIN_API=cuda \
          -x SKEIN_SHARE_DEVICES=1 "$heat_bin" --nx 8195 --ny 8193 --dtype float64 --steps 300 \
          --report-every 100 --halo-exchange $mode --json "$OUTDIR/heat-halo-mps-4-$mode-8195.json"
      done
      echo quit | CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" nvidia-cuda-mps-control
      cp "$mps_dir/log/control.log" "$OUTDIR/mps-control.log" 2>/dev/null || true
    else
      echo "=== MPS: nvidia-cuda-mps-control -d failed; the MPS halo runs are left out" | tee -a "$OUTDIR/stencil.log"
    fi
    rm -rf "$mps_dir"
  fi
  python3 - "$OUTDIR" <<'PY' | tee -a "$OUTDIR/stencil.log"
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "heat-*.json"))):
    if not ("floor" in f or "halo" in f):
        continue
    j = json.load(open(f))
    print(f"{os.path.basename(f):46} step {j['t_step_s']*1e6:10.1f} us  kernel {j['t_kernel_s']*1e6:10.1f} us  "
          f"floor {j['floor_s']*1e6:10.1f} us  floor/kernel {j['kernel_floor_ratio']:.3f}  "
          f"exposed halo {100*j['halo_exposed_share']:5.1f} % ({j['halo_exchange']})  "
          f"stencil {j.get('stencil_variant', '-'):7}  check {j['check']['passed']}")
PY
fi

# skein-heat in 3-D on a process grid, weak scaling: every GPU holds one block of HEAT3D_N^3
# float64 points (--weak: the global grid is the block times the process grid GridLayout
# chooses, 2 x 1 x 1 for 2 GPUs, 2 x 2 x 1 for 4, 2 x 2 x 2 for 8), the halos moving on a second
# queue while the interior is computed. The runs on n GPUs see GPUs 0 .. n-1 only. Each run
# checks its field against the analytic solution (exit 3 otherwise) and measures its own floor
# (a device copy of the bytes a step moves, on each of its GPUs).
if want heat3d && ((ngpu > 0)); then
  heat_bin="$BUILD_DIR/apps/skein-heat/skein-heat"
  n3="${HEAT3D_N:-512}"
  steps3="${HEAT3D_STEPS:-1000}"
  every3=$((steps3 / 10 > 0 ? steps3 / 10 : 1))
  grid3=(--nx "$n3" --ny "$n3" --nz "$n3" --steps "$steps3" --report-every "$every3")
  # First the overlapped step's bits on CUDA, where the two queues do run at once: serial and
  # overlapped byte-identical, and the exact discrete solution (tests/apps/heat_grid_check.cmake's
  # overlap mode; periodic walls, so every side of every block is exchanged), one GPU per rank and
  # one rank driving every GPU.
  exact3=(-DMODE=overlap -DMPIEXEC=mpirun "-DHEAT=$heat_bin" "-DH5DUMP=$(command -v h5dump)"
    "-DPYTHON=$(command -v python3)" -DREFERENCE=tests/apps/heat_grid_reference.py -DLIMIT=300
    "-DARGS=--nx;96;--ny;80;--nz;72;--steps;60;--boundary;periodic;--modes;2,1;--mode-z;3")
  exact_tmp="$(mktemp -d)"
  step heat3d-exact-ranks "$OUTDIR/heat3d.log" env SKEIN_API=cuda SKEIN_DEVICES_PER_RANK=1 \
    cmake "${exact3[@]}" -DNP="$ngpu" -DDIR="$exact_tmp/ranks" -P tests/apps/heat_grid_check.cmake
  step heat3d-exact-1rank "$OUTDIR/heat3d.log" env SKEIN_API=cuda SKEIN_DEVICES_PER_RANK="$ngpu" \
    cmake "${exact3[@]}" -DNP=1 -DDIR="$exact_tmp/1rank" -P tests/apps/heat_grid_check.cmake
  rm -rf "$exact_tmp"
  for dt in float64 float32; do
    step "heat3d-floor-$dt" "$OUTDIR/heat3d.log" timeout 600 mpirun -np 1 -x CUDA_VISIBLE_DEVICES=0 \
      -x SKEIN_API=cuda -x SKEIN_DEVICES_PER_RANK=1 "$heat_bin" "${grid3[@]}" --dtype "$dt" \
      --json "$OUTDIR/heat3d-floor-$dt.json"
  done
  step heat3d-weak-1 "$OUTDIR/heat3d.log" timeout 600 mpirun -np 1 -x CUDA_VISIBLE_DEVICES=0 \
    -x SKEIN_API=cuda -x SKEIN_DEVICES_PER_RANK=1 "$heat_bin" --weak "${grid3[@]}" --dtype float64 \
    --halo-exchange overlapped --json "$OUTDIR/heat3d-weak-1.json"
  counts3=()
  ((ngpu >= 2)) && counts3+=(2)
  ((ngpu > 2)) && counts3+=("$ngpu")
  # Given process grids on every GPU besides the automatic one: HEAT3D_GRIDS (PxQxR, separated by
  # spaces; default 2x2x2 on 8 GPUs, none otherwise).
  grids3=()
  ((ngpu == 8)) && grids3=(2x2x2)
  [[ -n "${HEAT3D_GRIDS+set}" ]] && read -r -a grids3 <<<"$HEAT3D_GRIDS"
  for n in "${counts3[@]}"; do
    visible="$(seq -s, 0 $((n - 1)))"
    for g3 in auto "${grids3[@]}"; do
      suffix="" grid_arg=()
      if [[ $g3 != auto ]]; then
        IFS=x read -r gp gq gr <<<"$g3"
        (((gp * gq * gr) == n)) || continue
        suffix="-$g3" grid_arg=(--grid "$g3")
      fi
      step "heat3d-weak-ranks-$n$suffix" "$OUTDIR/heat3d.log" timeout 600 mpirun -np "$n" \
        -x CUDA_VISIBLE_DEVICES="$visible" -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE \
        -x SKEIN_DEVICES_PER_RANK=1 "$heat_bin" --weak "${grid3[@]}" "${grid_arg[@]}" --dtype float64 \
        --halo-exchange overlapped --json "$OUTDIR/heat3d-weak-ranks-$n$suffix.json"
      step "heat3d-weak-1rank-$n$suffix" "$OUTDIR/heat3d.log" timeout 600 mpirun -np 1 --bind-to none \
        -x CUDA_VISIBLE_DEVICES="$visible" -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE \
        -x SKEIN_DEVICES_PER_RANK="$n" "$heat_bin" --weak "${grid3[@]}" "${grid_arg[@]}" --dtype float64 \
        --halo-exchange overlapped --json "$OUTDIR/heat3d-weak-1rank-$n$suffix.json"
    done
  done
  step heat3d-judge "$OUTDIR/heat3d.log" python3 tools/compare-heat3d.py "$OUTDIR"
fi

if want small && ((ngpu > 0)); then
  # SMALL_RUNS times (default 4). The host's speed moves by 30 % or more for seconds at a time on
  # these machines (a raw launch too), so CuPy's batches and Skein's alternate within every round
  # (tools/peer-small-arrays.py drives skein-bench-small --serve) and each round gives its own
  # ratio. Skein twice: as a program that never made the device's context current (every launch
  # pushes and pops it), and with it made current first (--make-current: what a code using the
  # CUDA runtime has after cudaSetDevice).
  small_runs=${SMALL_RUNS:-4}
  small_bin="$BUILD_DIR/tests/bench/skein-bench-small"
  if python3 -c "import cupy" 2>/dev/null; then
    for ((i = 1; i <= small_runs; ++i)); do
      step "small-$i" "$OUTDIR/small.txt" env CUDA_VISIBLE_DEVICES=0 \
        python3 tools/peer-small-arrays.py --skein "$small_bin" --skein "$small_bin --make-current" \
        --json "$OUTDIR/small-$i.json"
    done
  else
    step small-skein "$OUTDIR/small.txt" env CUDA_VISIBLE_DEVICES=0 "$small_bin" \
      --json "$OUTDIR/small-skein.json"
  fi
  # Large arrays: skein-bench-array-kernels (1 GiB float32, device time; astype and sum into given
  # outputs, and making their results) with the array pool, with SKEIN_ARRAY_POOL=0 (a plain
  # allocation and free per call: the path before the pool), and with the build in
  # SMALL_BASE_BUILD_DIR (e.g. the tree before the pool, built there) where given, alternating,
  # SMALL_KERNEL_RUNS times (default 3).
  kernels_bin="$BUILD_DIR/tests/bench/skein-bench-array-kernels"
  base_kernels_bin="${SMALL_BASE_BUILD_DIR:-}"
  [[ -n "$base_kernels_bin" ]] && base_kernels_bin="$base_kernels_bin/tests/bench/skein-bench-array-kernels"
  for ((i = 1; i <= ${SMALL_KERNEL_RUNS:-3}; ++i)); do
    step "small-kernels-pool-$i" "$OUTDIR/small.txt" env CUDA_VISIBLE_DEVICES=0 "$kernels_bin" \
      --api cuda --json "$OUTDIR/small-kernels-pool-$i.json"
    step "small-kernels-nopool-$i" "$OUTDIR/small.txt" env CUDA_VISIBLE_DEVICES=0 \
      SKEIN_ARRAY_POOL=0 "$kernels_bin" --api cuda --json "$OUTDIR/small-kernels-nopool-$i.json"
    if [[ -n "$base_kernels_bin" ]]; then
      step "small-kernels-base-$i" "$OUTDIR/small.txt" env CUDA_VISIBLE_DEVICES=0 \
        "$base_kernels_bin" --api cuda --json "$OUTDIR/small-kernels-base-$i.json"
    fi
  done
  # The judged ratios, PASS or FAIL each (a FAIL fails this step).
  step compare-small "$OUTDIR/small.txt" python3 tools/compare-small.py "$OUTDIR"
fi

if want arrays && ((ngpu > 0)); then
  adir="$(mktemp -d)"
  bench_bin="$BUILD_DIR/apps/skein-bench/skein-bench"
  one=(mpirun -np 1 -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE "$bench_bin")
  if python3 -c "import cupy" 2>/dev/null; then
    step peer-cupy "$OUTDIR/bench-copy.txt" timeout 300 python3 tools/peer-arrays.py --bytes 1G \
      --gemm 8192 --json "$adir/peer.json"
  fi
  step one-axpy "$OUTDIR/bench-copy.txt" timeout 300 "${one[@]}" axpy --size 268435456 \
    --devices-per-rank 1 --json "$adir/one-axpy.json"
  step one-sum "$OUTDIR/bench-copy.txt" timeout 300 "${one[@]}" sum --size 268435456 \
    --devices-per-rank 1 --json "$adir/one-sum.json"
  step one-gemm32 "$OUTDIR/bench-copy.txt" timeout 300 "${one[@]}" gemm --size 8192 \
    --devices-per-rank 1 --json "$adir/one-gemm32.json"
  step one-gemm64 "$OUTDIR/bench-copy.txt" timeout 300 "${one[@]}" gemm --size 8192 \
    --dtype float64 --devices-per-rank 1 --json "$adir/one-gemm64.json"
  # NVIDIA's OpenCL: one process, no mpirun (MPI starts as a singleton).
  step ocl-axpy "$OUTDIR/bench-copy.txt" timeout 300 env SKEIN_API=opencl SKEIN_DEVICES=NVIDIA \
    "$bench_bin" axpy --size 268435456 --devices-per-rank 1 --json "$adir/ocl-axpy.json"
  if ((ngpu >= 2)); then
    for b in axpy sum gemm; do
      size=4294967296
      [[ $b == gemm ]] && size=16384
      # A 16 GiB sum takes 4 ms on one GPU, 1 ms on four: 30 timed calls, not 10, for its median.
      reps=10
      [[ $b == sum ]] && reps=30
      step "scale-$b-1" "$OUTDIR/bench-copy.txt" timeout 300 "${one[@]}" "$b" --size "$size" \
        --devices-per-rank 1 --repeat "$reps" --json "$adir/scale-$b-1.json"
      step "scale-$b-${ngpu}pr" "$OUTDIR/bench-copy.txt" timeout 300 mpirun -np "$ngpu" \
        -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE "$bench_bin" "$b" --size "$size" \
        --devices-per-rank 1 --repeat "$reps" --json "$adir/scale-$b-${ngpu}pr.json"
      step "scale-$b-${ngpu}r1" "$OUTDIR/bench-copy.txt" timeout 300 "${one[@]}" "$b" \
        --size "$size" --devices-per-rank "$ngpu" --repeat "$reps" --json "$adir/scale-$b-${ngpu}r1.json"
    done
    # The same speed-ups as a scaling run each, in one mpirun: 1..N ranks with one GPU each, and
    # one rank driving 1..N GPUs. The tables go to bench-copy.txt; the JSON and the plots (SVG:
    # Skein's speed-up, the reference's, the ideal line) to OUTDIR/scaling-<op>-<ranks|1rank>.*.
    for b in axpy sum gemm; do
      size=4294967296
      [[ $b == gemm ]] && size=16384
      step "scaling-$b-ranks" "$OUTDIR/bench-copy.txt" timeout 600 mpirun -np "$ngpu" \
        -x SKEIN_API=cuda -x NCCL_NVLS_ENABLE "$bench_bin" scaling --op "$b" --size "$size" \
        --max-devices-per-rank 1 --repeat 10 --json "$OUTDIR/scaling-$b-ranks.json" \
        --svg "$OUTDIR/scaling-$b-ranks.svg"
      step "scaling-$b-1rank" "$OUTDIR/bench-copy.txt" timeout 600 "${one[@]}" scaling --op "$b" \
        --size "$size" --max-devices-per-rank "$ngpu" --repeat 10 \
        --json "$OUTDIR/scaling-$b-1rank.json" --svg "$OUTDIR/scaling-$b-1rank.svg"
    done
  fi
  step compare-arrays "$OUTDIR/bench-copy.txt" python3 tools/compare-arrays.py "$adir"
fi

echo "=== summary (step, exit code, log) in $SUMMARY"
cat "$SUMMARY"
exit "$failed"
