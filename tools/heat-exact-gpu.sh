#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# skein-heat's results stay exact on a GPU, whatever the launch path, the split and the restart:
# on the first GPU, a reference run of 40 steps on 1 rank with every kernel launched by
# cuLaunchKernel (SKEIN_CUDA_GRAPH_LAUNCH=0) and the halo exchange before each step's kernel; then
# the same grid to step 20 on 2 ranks sharing the GPU (MPI backend, the halo overlapped with the
# interior, kernels launched again through CUDA graphs, the default), checkpointed at 10 and 20,
# and restarted on 4 ranks sharing the GPU to step 40. Dataset u of both heat.h5 must hold the
# same bytes, for float64 and float32 (the analytic check of every run must pass too: skein-heat
# exits non-zero otherwise). tests/apps/heat_check.cmake checks the same on PoCL (CI).
#
#   tools/heat-exact-gpu.sh SKEIN_HEAT WORKDIR
# Exits 77 when neither h5dump nor Python's h5py can read the files.
set -euo pipefail
heat="$1"
dir="$2"
mkdir -p "$dir"
dump() {  # dump H5 BIN: dataset u's bytes, little-endian
  if command -v h5dump >/dev/null 2>&1; then
    h5dump -d /u -b LE -o "$2" "$1" >/dev/null
  else
    python3 - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    u = f["u"][...]
open(sys.argv[2], "wb").write(u.astype(u.dtype.newbyteorder("<")).tobytes())
PY
  fi
}
if ! command -v h5dump >/dev/null 2>&1 && ! python3 -c "import h5py" 2>/dev/null; then
  echo "heat-exact-gpu: neither h5dump nor h5py: cannot compare the files"
  exit 77
fi
mpi=(mpirun --oversubscribe -x CUDA_VISIBLE_DEVICES=0 -x SKEIN_API=cuda -x SKEIN_DEVICES_PER_RANK=1
     -x SKEIN_SHARE_DEVICES=1)
for dtype in float64 float32; do
  grid=(--nx 1031 --ny 517 --dtype "$dtype")
  rm -rf "$dir/$dtype"
  SKEIN_CUDA_GRAPH_LAUNCH=0 "${mpi[@]}" -x SKEIN_CUDA_GRAPH_LAUNCH -np 1 "$heat" "${grid[@]}" \
    --steps 40 --halo-exchange serial --out "$dir/$dtype/reference"
  "${mpi[@]}" -np 2 "$heat" "${grid[@]}" --steps 20 --checkpoint-every 10 --out "$dir/$dtype/run"
  "${mpi[@]}" -np 4 "$heat" "${grid[@]}" --steps 40 --restart --out "$dir/$dtype/run" |
    tee "$dir/$dtype/restart.log"
  grep -q "restarted from .*checkpoint-0000000020.h5 (step 20, written by 2 rank(s))" \
    "$dir/$dtype/restart.log"
  dump "$dir/$dtype/reference/heat.h5" "$dir/$dtype/reference.bin"
  dump "$dir/$dtype/run/heat.h5" "$dir/$dtype/restarted.bin"
  if ! cmp -s "$dir/$dtype/reference.bin" "$dir/$dtype/restarted.bin"; then
    echo "heat-exact-gpu: $dtype: the restarted split run differs from the reference"
    exit 1
  fi
  echo "heat-exact-gpu: $dtype: 1 rank (plain launches, halo first) and 2 ranks then 4 ranks" \
    "from a checkpoint (graph launches, halo overlapped): dataset u identical," \
    "$(stat -c %s "$dir/$dtype/reference.bin") bytes, sha256 $(sha256sum <"$dir/$dtype/reference.bin" | cut -c1-16)"
done
