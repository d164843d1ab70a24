// SPDX-License-Identifier: BSD-3-Clause
#include "check.hpp"

#include <fmt/format.h>

namespace skein::detail::opencl {

const char* error_name(cl_int code) {
  switch (code) {
#define SKEIN_CL_CASE(c) \
  case c: return #c;
    SKEIN_CL_CASE(CL_SUCCESS)
    SKEIN_CL_CASE(CL_DEVICE_NOT_FOUND)
    SKEIN_CL_CASE(CL_DEVICE_NOT_AVAILABLE)
    SKEIN_CL_CASE(CL_COMPILER_NOT_AVAILABLE)
    SKEIN_CL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    SKEIN_CL_CASE(CL_OUT_OF_RESOURCES)
    SKEIN_CL_CASE(CL_OUT_OF_HOST_MEMORY)
    SKEIN_CL_CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
    SKEIN_CL_CASE(CL_MEM_COPY_OVERLAP)
    SKEIN_CL_CASE(CL_IMAGE_FORMAT_MISMATCH)
    SKEIN_CL_CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    SKEIN_CL_CASE(CL_BUILD_PROGRAM_FAILURE)
    SKEIN_CL_CASE(CL_MAP_FAILURE)
    SKEIN_CL_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    SKEIN_CL_CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    SKEIN_CL_CASE(CL_COMPILE_PROGRAM_FAILURE)
    SKEIN_CL_CASE(CL_LINKER_NOT_AVAILABLE)
    SKEIN_CL_CASE(CL_LINK_PROGRAM_FAILURE)
    SKEIN_CL_CASE(CL_DEVICE_PARTITION_FAILED)
    SKEIN_CL_CASE(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    SKEIN_CL_CASE(CL_INVALID_VALUE)
    SKEIN_CL_CASE(CL_INVALID_DEVICE_TYPE)
    SKEIN_CL_CASE(CL_INVALID_PLATFORM)
    SKEIN_CL_CASE(CL_INVALID_DEVICE)
    SKEIN_CL_CASE(CL_INVALID_CONTEXT)
    SKEIN_CL_CASE(CL_INVALID_QUEUE_PROPERTIES)
    SKEIN_CL_CASE(CL_INVALID_COMMAND_QUEUE)
    SKEIN_CL_CASE(CL_INVALID_HOST_PTR)
    SKEIN_CL_CASE(CL_INVALID_MEM_OBJECT)
    SKEIN_CL_CASE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    SKEIN_CL_CASE(CL_INVALID_IMAGE_SIZE)
    SKEIN_CL_CASE(CL_INVALID_SAMPLER)
    SKEIN_CL_CASE(CL_INVALID_BINARY)
    SKEIN_CL_CASE(CL_INVALID_BUILD_OPTIONS)
    SKEIN_CL_CASE(CL_INVALID_PROGRAM)
    SKEIN_CL_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    SKEIN_CL_CASE(CL_INVALID_KERNEL_NAME)
    SKEIN_CL_CASE(CL_INVALID_KERNEL_DEFINITION)
    SKEIN_CL_CASE(CL_INVALID_KERNEL)
    SKEIN_CL_CASE(CL_INVALID_ARG_INDEX)
    SKEIN_CL_CASE(CL_INVALID_ARG_VALUE)
    SKEIN_CL_CASE(CL_INVALID_ARG_SIZE)
    SKEIN_CL_CASE(CL_INVALID_KERNEL_ARGS)
    SKEIN_CL_CASE(CL_INVALID_WORK_DIMENSION)
    SKEIN_CL_CASE(CL_INVALID_WORK_GROUP_SIZE)
    SKEIN_CL_CASE(CL_INVALID_WORK_ITEM_SIZE)
    SKEIN_CL_CASE(CL_INVALID_GLOBAL_OFFSET)
    SKEIN_CL_CASE(CL_INVALID_EVENT_WAIT_LIST)
    SKEIN_CL_CASE(CL_INVALID_EVENT)
    SKEIN_CL_CASE(CL_INVALID_OPERATION)
    SKEIN_CL_CASE(CL_INVALID_GL_OBJECT)
    SKEIN_CL_CASE(CL_INVALID_BUFFER_SIZE)
    SKEIN_CL_CASE(CL_INVALID_MIP_LEVEL)
    SKEIN_CL_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
    SKEIN_CL_CASE(CL_INVALID_PROPERTY)
    SKEIN_CL_CASE(CL_INVALID_IMAGE_DESCRIPTOR)
    SKEIN_CL_CASE(CL_INVALID_COMPILER_OPTIONS)
    SKEIN_CL_CASE(CL_INVALID_LINKER_OPTIONS)
    SKEIN_CL_CASE(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef SKEIN_CL_CASE
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
  }
}

namespace {
std::string hint_for(cl_int code) {
  switch (code) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE: return "Use smaller buffers or fewer at a time.";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET:
      return "Align sub-region origins to the device's base_address_align.";
    case CL_INVALID_BINARY:
      return "The bytes are not a program binary for this device: pass the ones "
             "clGetProgramInfo(CL_PROGRAM_BINARIES) or skein::compile gave for it, or build the "
             "program from source (skein::Program).";
    case -1001:
      return "Install an OpenCL driver (e.g. Debian's pocl-opencl-icd) and check "
             "/etc/OpenCL/vendors.";
    default:
      return "This is likely a bug in Skein or the OpenCL driver; please report it with this "
             "message.";
  }
}
}  // namespace

void raise_error(cl_int code, const char* call, std::string device, std::string location) {
  std::string name(call);
  name = name.substr(0, name.find('('));
  ErrorInfo info{.what = "failed",
                 .call = name,
                 .code_name = error_name(code),
                 .code = code,
                 .has_code = true,
                 .device = std::move(device),
                 .hint = hint_for(code),
                 .location = std::move(location)};
  switch (code) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE: throw MemoryError(info, 0, 0);
    case CL_INVALID_VALUE:
    case CL_INVALID_MEM_OBJECT:
    case CL_INVALID_CONTEXT:
    case CL_INVALID_COMMAND_QUEUE:
    case CL_INVALID_DEVICE:
    case CL_MISALIGNED_SUB_BUFFER_OFFSET:
    case CL_INVALID_ARG_SIZE:
    case CL_INVALID_ARG_VALUE:
    case CL_INVALID_ARG_INDEX:
    case CL_INVALID_KERNEL_ARGS:
    case CL_INVALID_BINARY:
    case CL_INVALID_KERNEL_NAME: throw LogicError(info);
    case CL_OUT_OF_RESOURCES:
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE:
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: throw LaunchError(info);
    default: throw RuntimeError(info);
  }
}

}  // namespace skein::detail::opencl
