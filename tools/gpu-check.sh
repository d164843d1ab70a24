#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The checks to run on a GPU machine, in one go: build with CUDA, the test suite, skein-info, the
# CUDA tests under compute-sanitizer, and the copy benchmark.
#
#   tools/gpu-check.sh OUTDIR
#
# Every step runs even when an earlier one failed; each step's exit code goes to OUTDIR/summary.txt.
# This file builds; the groups' steps are in tools/gpu-check/suites.sh, benchmarks.sh and apps.sh,
# sourced in that order.
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
#              PASS or FAIL against 0.95 and 0.9 (heat3d.log, heat3d-*.json); every run with
#              HEAT3D_STEPS_PER_PASS steps per launch (skein-heat --steps-per-pass, default 1; with
#              2 the overlap check also compares with a one-step run's bytes)
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

# The GPUs the steps below use (the groups that need some skip without them).
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
# The groups, by concern, in this order (each file a run of `if want <group>` blocks):
# shellcheck source=/dev/null
source "$SOURCE_DIR/tools/gpu-check/suites.sh"      # tests mpi faults demo bindings python agree memcheck tsan
# shellcheck source=/dev/null
source "$SOURCE_DIR/tools/gpu-check/benchmarks.sh"  # bench latency coll halo
# shellcheck source=/dev/null
source "$SOURCE_DIR/tools/gpu-check/apps.sh"        # apps cg stencil heat3d small arrays

echo "=== summary (step, exit code, log) in $SUMMARY"
cat "$SUMMARY"
exit "$failed"
