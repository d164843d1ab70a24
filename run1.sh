export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p /tmp/dl/dlpack && cp $(python3 -c "import torch,os;print(os.path.join(os.path.dirname(torch.__file__),'include/ATen/dlpack.h'))") /tmp/dl/dlpack/dlpack.h
NO_CTEST=1 CMAKE_EXTRA_ARGS="-DDLPACK_INCLUDE_DIR=/tmp/dl" STEPS=tests,small,bench BUILD_DIR=build-gpu timeout 420 bash tools/gpu-check.sh $OUT/r > $OUT/check.log 2>&1
B=build-gpu/tests/bench/skein-bench-small
for i in 1 2; do for v in raw elementwise axpy; do
  CUDA_VISIBLE_DEVICES=0 $B --profile $v --seconds 1 2>&1 | grep profile >> $OUT/current.txt
  CUDA_VISIBLE_DEVICES=0 $B --profile $v --seconds 1 --make-current 2>&1 | grep profile | sed 's/$/ (made current)/' >> $OUT/current.txt
done; done
H=build-gpu/apps/skein-heat/skein-heat
[ -x $H ] || cmake --build build-gpu --target skein-heat > $OUT/heat-build.log 2>&1
G=(-x CUDA_VISIBLE_DEVICES=0 -x SKEIN_DEVICES_PER_RANK=1 -x NCCL_NVLS_ENABLE -x SKEIN_API=cuda -x SKEIN_SHARE_DEVICES=1)
A=(--nx 4099 --ny 4097 --dtype float64 --steps 300 --report-every 100)
for m in serial overlapped; do timeout 120 mpirun -np 2 --oversubscribe "${G[@]}" $H "${A[@]}" --halo-exchange $m --json $OUT/h-2-$m.json > $OUT/h-2-$m.log 2>&1; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log; mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
for np in 2 4; do for m in serial overlapped; do timeout 120 mpirun -np $np --oversubscribe "${G[@]}" -x CUDA_MPS_PIPE_DIRECTORY $H "${A[@]}" --halo-exchange $m --json $OUT/hm-$np-$m.json > $OUT/hm-$np-$m.log 2>&1; done; done
echo quit | nvidia-cuda-mps-control
