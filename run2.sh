export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p /tmp/dl/dlpack && cp $(python3 -c "import torch,os;print(os.path.join(os.path.dirname(torch.__file__),'include/ATen/dlpack.h'))") /tmp/dl/dlpack/dlpack.h
SMALL_RUNS=3 NO_CTEST=1 CMAKE_EXTRA_ARGS="-DDLPACK_INCLUDE_DIR=/tmp/dl" STEPS=stencil,small BUILD_DIR=build-gpu timeout 470 bash tools/gpu-check.sh $OUT/r > $OUT/check.log 2>&1
H=build-gpu/apps/skein-heat/skein-heat
sweep() { timeout 30 env CUDA_VISIBLE_DEVICES=0 SKEIN_API=$1 SKEIN_DEVICES_PER_RANK=1 $H --nx 4099 --ny 4097 --dtype float32 --steps 400 --report-every 200 --stencil-variant $2 ${3:+--stencil-shape $3} --json /tmp/s.json > /dev/null 2>&1 && python3 -c "import json; j=json.load(open('/tmp/s.json')); print('$1 $2 ${3:-default}', 'kernel %.1f floor %.1f ratio %.3f' % (j['t_kernel_s']*1e6, j['floor_s']*1e6, j['kernel_floor_ratio']))" >> $OUT/sweep.txt; }
for r in 1 2; do
sweep cuda rows; sweep cuda flat; sweep cuda aligned
for s in 1,32,8 2,32,8 2,64,4 1,64,4 1,128,2; do sweep cuda flat $s; done
for s in 2,128,2 4,64,4 1,128,2 8,128,1; do sweep cuda aligned $s; done
for s in 8,128,2 2,128,4 4,256,1; do sweep cuda rows $s; done
done
cd $OUT && tar czf all.tgz r && rm -rf r
