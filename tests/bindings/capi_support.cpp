// SPDX-License-Identifier: BSD-3-Clause
// capi_support.hpp: the fixture's runtime, queue and communicator, made and destroyed through
// the C API on every rank.
#include "capi_support.hpp"

#include <algorithm>

namespace skein::test::capi {

std::vector<skein_api> apis() {
  std::vector<skein_api> out;
  for (const auto& b : backends()) {
    const skein_api api = b.api == ApiId::cuda ? SKEIN_API_CUDA : SKEIN_API_OPENCL;
    if (std::find(out.begin(), out.end(), api) == out.end()) out.push_back(api);
  }
  return out;
}

void CApi::SetUp() {
  skein_runtime_options options;
  skein_runtime_options_init(&options);
  options.api = GetParam();
  CAPI_OK(skein_runtime_adopt_fortran(static_cast<int>(MPI_Comm_c2f(MPI_COMM_WORLD)), &options,
                                      &s.runtime));
  CAPI_OK(skein_runtime_rank(s.runtime, &s.rank));
  CAPI_OK(skein_runtime_size(s.runtime, &s.size));
  CAPI_OK(skein_queue_create(s.runtime, &s.queue));
  CAPI_OK(skein_communicator_create(s.runtime, nullptr, &s.comm));
  CAPI_OK(skein_communicator_size(s.comm, &s.members));
  CAPI_OK(skein_communicator_local_size(s.comm, &s.local));
}

void CApi::TearDown() {
  EXPECT_EQ(skein_communicator_destroy(s.comm), SKEIN_SUCCESS);
  EXPECT_EQ(skein_queue_destroy(s.queue), SKEIN_SUCCESS);
  EXPECT_EQ(skein_runtime_destroy(s.runtime), SKEIN_SUCCESS);
}

int CApi::member(std::size_t l) const {
  int m = -1;
  EXPECT_EQ(skein_communicator_member(s.comm, l, &m), SKEIN_SUCCESS) << skein_last_error_message();
  return m;
}

}  // namespace skein::test::capi
