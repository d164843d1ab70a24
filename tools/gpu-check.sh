#!/usr/bin/env bash
# The checks to run on a GPU machine, in one go: build with CUDA, the test suite, skein-info, the
# CUDA tests under compute-sanitizer, and the copy benchmark.
#
#   tools/gpu-check.sh OUTDIR
#
# Every step runs even when an earlier one failed; each step's exit code goes to OUTDIR/summary.txt.
# The script exits non-zero when any step failed. BUILD_DIR (default build-gpu) and JOBS (default:
# all cores) can be overridden. It writes these eight files and nothing else:
#   summary.txt      step, exit code, log of every step
#   build.log        nvidia-smi, configure, build
#   ctest.log        the whole test suite
#   skein-info.txt   skein-info; skein-info.json: skein-info --json
#   memcheck.log     the CUDA tests under compute-sanitizer memcheck
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

SUMMARY="$OUTDIR/summary.txt"
for f in summary.txt build.log ctest.log skein-info.txt skein-info.json memcheck.log \
  bench-copy.txt bench-copy.json bench-coll.txt; do
  rm -f "$OUTDIR/$f"
done
: >"$SUMMARY"
failed=0

# step NAME LOG COMMAND...: runs COMMAND with its output appended to LOG (and on the terminal) and
# records the exit code.
step() {
  local name="$1" log="$2"
  shift 2
  echo "=== $name: $*"
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  printf '%-16s %3d  %s\n' "$name" "$rc" "$(basename "$log")" >>"$SUMMARY"
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
step configure "$OUTDIR/build.log" \
  cmake -S . -B "$BUILD_DIR" "${generator[@]}" "${cuda_root[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DSKEIN_WITH_CUDA=ON -DSKEIN_WITH_OPENCL=AUTO -DSKEIN_WITH_MPI=AUTO -DSKEIN_WITH_HDF5=AUTO
step build "$OUTDIR/build.log" cmake --build "$BUILD_DIR" --parallel "$JOBS"

step ctest "$OUTDIR/ctest.log" ctest --test-dir "$BUILD_DIR" --output-on-failure
# The suite's own output, for the per-backend counts (ctest shows it only on failure).
step gtest "$OUTDIR/ctest.log" env POCL_DEVICES="pthread pthread pthread pthread" \
  "$BUILD_DIR/tests/skein-tests"

step skein-info "$OUTDIR/skein-info.txt" "$BUILD_DIR/apps/skein-info/skein-info"
# JSON alone in its file; messages on stderr stay on the terminal.
echo "=== skein-info-json: $BUILD_DIR/apps/skein-info/skein-info --json"
"$BUILD_DIR/apps/skein-info/skein-info" --json >"$OUTDIR/skein-info.json"
rc=$?
printf '%-16s %3d  %s\n' skein-info-json "$rc" skein-info.json >>"$SUMMARY"
((rc == 0)) || failed=1

# The MPI suite on the GPUs (ctest runs it on PoCL): NCCL with one GPU per rank, and with one
# rank driving every GPU.
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if ((ngpu > 0)); then
  step mpi-nccl-1pr "$OUTDIR/ctest.log" mpirun -np "$ngpu" --oversubscribe -x SKEIN_API=cuda \
    -x NCCL_NVLS_ENABLE -x SKEIN_TEST_TIMEOUT=300 "$BUILD_DIR/tests/skein-mpi-tests"
  step mpi-nccl-1rank "$OUTDIR/ctest.log" mpirun -np 1 -x SKEIN_API=cuda \
    -x NCCL_NVLS_ENABLE -x SKEIN_TEST_TIMEOUT=300 "$BUILD_DIR/tests/skein-mpi-tests"
fi

# The CUDA cases of the suite (parameterised per backend, named .../cuda_N) under memcheck.
# --error-exitcode makes a memory error fail the step even when the tests pass. API errors are not
# reported: Skein turns every failed call into an exception the tests see, and some failures are
# expected (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED when a second context enables peer access,
# the error cases the tests provoke on purpose).
sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
step memcheck "$OUTDIR/memcheck.log" \
  "$sanitizer" --tool memcheck --report-api-errors no --leak-check full --error-exitcode 99 \
  "$BUILD_DIR/tests/skein-tests" --gtest_filter='*cuda*'

step bench-copy "$OUTDIR/bench-copy.txt" \
  "$BUILD_DIR/tests/bench/skein-bench-copy"
# Collectives against the peers: Skein over NCCL, then PyTorch's NCCL collectives, same sizes.
if ((ngpu > 1)); then
  step bench-coll "$OUTDIR/bench-coll.txt" mpirun -np "$ngpu" --oversubscribe -x SKEIN_API=cuda \
    -x NCCL_NVLS_ENABLE "$BUILD_DIR/apps/skein-bench-collectives/skein-bench-collectives" \
    --coll all_reduce -b 8 -e 256M -f 4 -n 20 -w 5
  if command -v torchrun >/dev/null 2>&1; then
    step peer-torch "$OUTDIR/bench-coll.txt" torchrun --nproc_per_node "$ngpu" \
      tools/peer-collectives.py --coll all_reduce -b 8 -e 256M -f 4 -n 20 -w 5
  fi
fi
# Kernel launches and the program cache; its table goes to the same file as the copy benchmark's.
step bench-kernels "$OUTDIR/bench-copy.txt" "$BUILD_DIR/tests/bench/skein-bench-kernels"

echo "=== summary (step, exit code, log) in $SUMMARY"
cat "$SUMMARY"
exit "$failed"
