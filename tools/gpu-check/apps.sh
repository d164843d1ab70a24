# SPDX-License-Identifier: BSD-3-Clause
# gpu-check's application groups: apps, cg, stencil, heat3d, small, arrays.
# Sourced by tools/gpu-check.sh after the build (its header describes every group and variable);
# uses its want, step, OUTDIR, BUILD_DIR, SOURCE_DIR, SUMMARY, JOBS, ngpu and failed.
# shellcheck shell=bash

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
  # HEAT3D_STEPS_PER_PASS (1 or 2, default 1): skein-heat's --steps-per-pass in every run below.
  passes3="${HEAT3D_STEPS_PER_PASS:-1}"
  grid3=(--nx "$n3" --ny "$n3" --nz "$n3" --steps "$steps3" --report-every "$every3"
    --steps-per-pass "$passes3")
  # First the overlapped step's bits on CUDA, where the two queues do run at once: serial and
  # overlapped byte-identical, and the exact discrete solution (tests/apps/heat_grid_check.cmake's
  # overlap mode; periodic walls, so every side of every block is exchanged), one GPU per rank and
  # one rank driving every GPU.
  exact3=(-DMODE=overlap -DMPIEXEC=mpirun "-DHEAT=$heat_bin" "-DH5DUMP=$(command -v h5dump)"
    "-DPYTHON=$(command -v python3)" -DREFERENCE=tests/apps/heat_grid_reference.py -DLIMIT=300
    "-DARGS=--nx;96;--ny;80;--nz;72;--steps;60;--boundary;periodic;--modes;2,1;--mode-z;3;--steps-per-pass;$passes3")
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
