// SPDX-License-Identifier: BSD-3-Clause
// A one-kernel CUDA graph made and launched through the driver's own entry points (looked up in
// libcuda with dlsym, as the benchmarks' raw cuLaunchKernel is): the floor of the graph launches
// Skein makes for kernels launched again on a stream (framework/cuda/program.cpp), for
// skein-bench-kernels and skein-bench-small.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>

namespace skein::bench {

class RawGraph {
 public:
  // A graph of one launch of `function` (grid x block threads, `params` as for cuLaunchKernel),
  // made in `context`, which is current only meanwhile (the launches are then made as by a thread
  // without a current context, as Skein's are). Throws std::runtime_error when the driver lacks
  // the calls or making the graph fails.
  RawGraph(void* libcuda, CUcontext context, CUfunction function, unsigned grid, unsigned block,
           void** params)
      : context_(context) {
    // The names cuda.h maps the calls to (cuGraphAddKernelNode_v2, cuGraphInstantiateWithFlags).
#define SKEIN_BENCH_STR2(x) #x
#define SKEIN_BENCH_STR(x) SKEIN_BENCH_STR2(x)
#define SKEIN_BENCH_RESOLVE(member, name) \
  member = reinterpret_cast<decltype(&::name)>(dlsym(libcuda, SKEIN_BENCH_STR(name)))
    SKEIN_BENCH_RESOLVE(create_, cuGraphCreate);
    SKEIN_BENCH_RESOLVE(add_kernel_, cuGraphAddKernelNode);
    SKEIN_BENCH_RESOLVE(instantiate_, cuGraphInstantiate);
    SKEIN_BENCH_RESOLVE(launch_, cuGraphLaunch);
    SKEIN_BENCH_RESOLVE(exec_destroy_, cuGraphExecDestroy);
    SKEIN_BENCH_RESOLVE(destroy_, cuGraphDestroy);
    SKEIN_BENCH_RESOLVE(push_, cuCtxPushCurrent);
    SKEIN_BENCH_RESOLVE(pop_, cuCtxPopCurrent);
#undef SKEIN_BENCH_RESOLVE
#undef SKEIN_BENCH_STR
#undef SKEIN_BENCH_STR2
    if (!create_ || !add_kernel_ || !instantiate_ || !launch_ || !exec_destroy_ || !destroy_ ||
        !push_ || !pop_) {
      throw std::runtime_error("the driver's graph calls were not found");
    }
    CUDA_KERNEL_NODE_PARAMS node{};
    node.func = function;
    node.gridDimX = grid;
    node.gridDimY = node.gridDimZ = 1;
    node.blockDimX = block;
    node.blockDimY = node.blockDimZ = 1;
    node.kernelParams = params;
    CUgraphNode added = nullptr;
    CUcontext popped = nullptr;
    const bool made = push_(context_) == CUDA_SUCCESS && create_(&graph_, 0) == CUDA_SUCCESS &&
                      add_kernel_(&added, graph_, nullptr, 0, &node) == CUDA_SUCCESS &&
                      instantiate_(&exec_, graph_, 0) == CUDA_SUCCESS;
    pop_(&popped);
    if (!made) {
      release();
      throw std::runtime_error("making the one-kernel graph failed");
    }
  }
  ~RawGraph() { release(); }
  RawGraph(const RawGraph&) = delete;
  RawGraph& operator=(const RawGraph&) = delete;

  void launch(CUstream stream) const {
    if (launch_(exec_, stream) != CUDA_SUCCESS) std::abort();
  }

 private:
  void release() noexcept {
    if (!exec_ && !graph_) return;
    CUcontext popped = nullptr;
    push_(context_);
    if (exec_) exec_destroy_(exec_);
    if (graph_) destroy_(graph_);
    pop_(&popped);
    exec_ = nullptr;
    graph_ = nullptr;
  }

  CUcontext context_;
  decltype(&::cuGraphCreate) create_ = nullptr;
  decltype(&::cuGraphAddKernelNode) add_kernel_ = nullptr;
  decltype(&::cuGraphInstantiate) instantiate_ = nullptr;
  decltype(&::cuGraphLaunch) launch_ = nullptr;
  decltype(&::cuGraphExecDestroy) exec_destroy_ = nullptr;
  decltype(&::cuGraphDestroy) destroy_ = nullptr;
  decltype(&::cuCtxPushCurrent) push_ = nullptr;
  decltype(&::cuCtxPopCurrent) pop_ = nullptr;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace skein::bench
