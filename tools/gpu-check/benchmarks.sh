# SPDX-License-Identifier: BSD-3-Clause
# gpu-check's benchmark groups: bench, latency, coll, halo.
# Sourced by tools/gpu-check.sh after the build (its header describes every group and variable);
# uses its want, step, OUTDIR, BUILD_DIR, SOURCE_DIR, SUMMARY, JOBS, ngpu and failed.
# shellcheck shell=bash

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
