#include "adapters.hpp"

namespace skein::detail::opencl {

OclBuffer::~OclBuffer() {
  if (mem_) clReleaseMemObject(mem_);
}

}  // namespace skein::detail::opencl
