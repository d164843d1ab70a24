// SPDX-License-Identifier: BSD-3-Clause
// The Communicator's environment variables under mpirun: SKEIN_BACKEND chooses for an automatic
// backend (an explicit choice in the code wins), invalid values of it, SKEIN_COLLECTIVE_TIMEOUT and
// SKEIN_CHECK_COLLECTIVES raise naming the variable, and NCCL forced on devices that are not CUDA's
// names them.
#include <gtest/gtest.h>

#include "collectives_support.hpp"
#include "scoped_env.hpp"

namespace skein::test::collectives_test {
namespace {

using ScopedEnv = ::skein::test::ScopedEnv;

TEST(CollectivesEnvironment, BackendVariableChoosesForAutomatic) {
  const auto devices = pocl_devices();
  if (devices.empty()) GTEST_SKIP() << "needs an OpenCL platform";
  const Context context = Context::from_devices(devices[0]);
  {
    ScopedEnv backend("SKEIN_BACKEND", "mpi");
    Communicator c(MPI_COMM_WORLD, context);
    EXPECT_EQ(c.backend(), CollectiveBackend::mpi);
  }
  {
    ScopedEnv backend("SKEIN_BACKEND", "");  // empty: unset
    Communicator c(MPI_COMM_WORLD, context);
    EXPECT_EQ(c.backend(), CollectiveBackend::mpi);  // OpenCL devices
  }
  {
    ScopedEnv backend("SKEIN_BACKEND", "nccl");
    try {
      Communicator c(MPI_COMM_WORLD, context);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_BACKEND"), std::string::npos) << e.what();
    }
    // An explicit choice in the code wins over the variable.
    Communicator c(MPI_COMM_WORLD, context, {}, CollectiveBackend::mpi);
    EXPECT_EQ(c.backend(), CollectiveBackend::mpi);
  }
  {
    ScopedEnv backend("SKEIN_BACKEND", "NCCL2");
    try {
      Communicator c(MPI_COMM_WORLD, context);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_BACKEND='NCCL2'"), std::string::npos) << e.what();
    }
  }
}

TEST(CollectivesEnvironment, InvalidVariablesRaiseNamingThem) {
  const auto devices = pocl_devices();
  if (devices.empty()) GTEST_SKIP() << "needs an OpenCL platform with 2 devices";
  const Context context = Context::from_devices(devices[0]);
  {
    // Empty is unset, for every variable: the defaults.
    ScopedEnv timeout("SKEIN_COLLECTIVE_TIMEOUT", "");
    ScopedEnv check("SKEIN_CHECK_COLLECTIVES", "");
    EXPECT_NO_THROW(Communicator(MPI_COMM_WORLD, context));
  }
  {
    ScopedEnv bad("SKEIN_COLLECTIVE_TIMEOUT", "abc");
    try {
      Communicator c(MPI_COMM_WORLD, context);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_COLLECTIVE_TIMEOUT"), std::string::npos)
          << e.what();
    }
  }
  {
    ScopedEnv bad("SKEIN_CHECK_COLLECTIVES", "maybe");
    try {
      Communicator c(MPI_COMM_WORLD, context);
      ADD_FAILURE() << "no LogicError";
    } catch (const LogicError& e) {
      EXPECT_NE(std::string(e.what()).find("SKEIN_CHECK_COLLECTIVES"), std::string::npos)
          << e.what();
    }
  }
}

TEST(CollectivesEnvironment, ForcedNcclOnNonCudaDevicesNamesThem) {
  const auto devices = pocl_devices();
  if (devices.empty()) GTEST_SKIP() << "needs an OpenCL platform with 2 devices";
  const Context context = Context::from_devices(devices[0]);
  try {
    Communicator c(MPI_COMM_WORLD, context, {}, CollectiveBackend::nccl);
    ADD_FAILURE() << "no LogicError";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NCCL"), std::string::npos) << what;
#if SKEIN_HAS_NCCL
    EXPECT_NE(what.find(devices[0].description()), std::string::npos) << what;
#endif
  }
  // MPI forced works on any device.
  Communicator c(MPI_COMM_WORLD, context, {}, CollectiveBackend::mpi);
  EXPECT_EQ(c.backend(), CollectiveBackend::mpi);
}

}  // namespace
}  // namespace skein::test::collectives_test
