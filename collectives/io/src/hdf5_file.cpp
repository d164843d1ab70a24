// SPDX-License-Identifier: BSD-3-Clause
// HDF5 files: opening and creating them on every rank together (the agreement on the path to the
// file: MPI-IO or through rank 0), closing and flushing them, and what a File says about itself.
// See hdf5_support.hpp's neighbours for the rest of File, and <skein/hdf5.hpp> for what it does.
//
// How the ranks stay in step:
//   - Each public call starts with an agreement: every rank hashes its call (name, shape, dtype,
//     options) and the ranks compare the hashes (detail::Agreement, agreement.hpp: non-blocking
//     MPI under SKEIN_COLLECTIVE_TIMEOUT). Different calls would otherwise meet in MPI-IO's
//     collectives and hang, or write a file nobody asked for; a rank that never arrives makes the
//     others raise TimeoutError naming the call and the ranks. Every exchange of Skein's own
//     (failures, results, the rows through rank 0) goes through the same Agreement and deadline;
//     only HDF5's MPI-IO collectives inside one call have none (a rank that dies inside them is
//     ended with the job by mpirun or srun).
//   - HDF5 work runs on the *file ranks*: every rank on the parallel path, rank 0 only through
//     rank 0. Whatever fails there is caught, and share_failure() tells every rank (the lowest
//     failing rank's message travels), so all raise together and none waits in a collective.
//   - Inside a transfer loop a rank that failed keeps taking part (empty selections, empty
//     messages) until the loop ends: collective calls and messages must pair up.
//   - Results read from the file on rank 0 alone (through rank 0) are broadcast as JSON.
#include "skein/hdf5.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "skein/communicator.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include "hdf5_impl.hpp"
#include "skein/detail/env.hpp"
#include "skein/detail/log.hpp"

namespace skein::hdf5 {

namespace {

// SKEIN_HDF5_SERIAL: through rank 0 even where HDF5 has MPI-IO (default: no).
bool serial_from_environment() {
  return detail::env_flag("SKEIN_HDF5_SERIAL", false, "hdf5::File",
                          "read and write HDF5 files through rank 0");
}

std::unique_ptr<File::Impl> make_impl(MPI_Comm comm, const std::string& path,
                                      const FileOptions& options, const std::string& call) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    detail::raise_in(SKEIN_HERE, call, "Create a skein::Runtime first, or call MPI_Init.",
                     "MPI is not initialised");
  }
  if (comm == MPI_COMM_NULL) {
    detail::raise_in(SKEIN_HERE, call, "Pass the arrays' communicator (e.g. runtime.comm()).",
                     "the MPI communicator is MPI_COMM_NULL");
  }
  auto impl = std::make_unique<File::Impl>();
  impl->path = path;
  impl->options = options;
  impl->agreement =
      detail::Agreement(comm, fmt::format("HDF5 file '{}'", path),
                        "Make every rank call the same File operations in the same order with the "
                        "same arguments (names, shapes, dtypes, options, attribute values).",
                        call);
  impl->comm = impl->agreement.comm();
  impl->rank = impl->agreement.rank();
  impl->size = impl->agreement.size();

  // The same on every rank: the environment is the job's, the options are checked just below.
  std::exception_ptr failure;
  bool serial_env = false;
  try {
    serial_env = serial_from_environment();
    if (path.empty()) {
      detail::raise_in(SKEIN_HERE, call, "Pass the path of the HDF5 file.",
                       "the file path is empty");
    }
    if (options.max_bytes_per_call == 0) {
      detail::raise_in(SKEIN_HERE, call,
                       "Pass a positive FileOptions::max_bytes_per_call (the "
                       "default is 256 MiB).",
                       "FileOptions::max_bytes_per_call is 0");
    }
  } catch (...) {
    failure = std::current_exception();
  }
  impl->share_failure(failure, call);
  // MPI message counts are ints: pieces stay below 1 GiB.
  impl->options.max_bytes_per_call =
      std::min<std::size_t>(options.max_bytes_per_call, std::size_t{1} << 30);

  bool parallel = false;
#ifdef H5_HAVE_PARALLEL
  parallel = !(options.serial || serial_env);
#else
  (void)serial_env;  // only one way without MPI-IO (the variable was still checked above)
#endif
  impl->parallel = parallel;
  impl->agree_on_call(
      call, fmt::format("{} '{}' through {} in pieces of {} bytes", call, path,
                        parallel ? "MPI-IO" : kRankZeroTag, impl->options.max_bytes_per_call));
  if (!parallel) {
    // Once per process, and the same on every rank (the options and the environment are agreed
    // on): rank 0 says it.
    static std::once_flag once;
    std::call_once(once, [&] {
#ifdef H5_HAVE_PARALLEL
      const char* why = options.serial ? "FileOptions::serial is set" : "SKEIN_HDF5_SERIAL=1";
#else
      const char* why = "this HDF5 library has no parallel (MPI-IO) support";
#endif
      detail::log(LogLevel::warning, LogScope::collective,
                  "HDF5 files are read and written through rank 0 ({}); this is correct but slower "
                  "than MPI-IO",
                  why);
    });
  }
  return impl;
}

Handle file_access_list(const File::Impl& f) {
  Handle fapl(SKEIN_H5_CHECK(H5Pcreate, (H5P_FILE_ACCESS), f.path), H5Pclose);
#ifdef H5_HAVE_PARALLEL
  if (f.parallel) SKEIN_H5_CHECK(H5Pset_fapl_mpio, (fapl.get(), f.comm, MPI_INFO_NULL), f.path);
#endif
  return fapl;
}

}  // namespace

// ---- File -------------------------------------------------------------------------------------

bool available() { return true; }

bool parallel_available() {
#ifdef H5_HAVE_PARALLEL
  return true;
#else
  return false;
#endif
}

std::string library_description() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return fmt::format("HDF5 {}.{}.{} ({})", major, minor, release,
                     parallel_available() ? "parallel, MPI-IO" : "serial: files go through rank 0");
}

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    try {
      if (impl_ && impl_->comm != MPI_COMM_NULL) close();
    } catch (const std::exception& e) {
      detail::log(LogLevel::error, LogScope::rank, "closing HDF5 file failed: {}", e.what());
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}

File::~File() {
  if (!impl_ || impl_->comm == MPI_COMM_NULL) return;
  try {
    close();
  } catch (const std::exception& e) {
    detail::log(LogLevel::error, LogScope::rank, "closing HDF5 file '{}' failed: {}", impl_->path,
                e.what());
  }
}

File File::create(Communicator& comm, const std::string& path, FileOptions options) {
  return create(comm.mpi_comm(), path, options);
}

File File::open(Communicator& comm, const std::string& path, Access access, FileOptions options) {
  return open(comm.mpi_comm(), path, access, options);
}

File File::create(MPI_Comm comm, const std::string& path, FileOptions options) {
  const std::string call = "hdf5::File::create";
  auto impl = make_impl(comm, path, options, call);
  impl->writable = true;
  File::Impl& f = *impl;
  f.on_file_ranks(call, [&] {
    Handle fapl = file_access_list(f);
    f.file =
        Handle(SKEIN_H5_CHECK(H5Fcreate, (path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                              fmt::format("creating HDF5 file '{}'", path)),
               H5Fclose);
    Handle root = f.open_object("/");
    write_attribute(root.get(), "/", "skein_version", std::string(SKEIN_VERSION_STRING));
    write_attribute(root.get(), "/", "skein_format_version", format_version);
    return std::string();
  });
  return File(std::move(impl));
}

File File::open(MPI_Comm comm, const std::string& path, Access access, FileOptions options) {
  const std::string call = "hdf5::File::open";
  auto impl = make_impl(comm, path, options, call);
  impl->writable = access == Access::read_write;
  File::Impl& f = *impl;
  // HDF5 says "unable to open file" for any reason; a missing file deserves plainer words. Checked
  // before the open, which is collective on the parallel path.
  std::exception_ptr missing;
  if (f.rank == 0 && !std::filesystem::exists(path)) {
    try {
      detail::raise_in<RuntimeError>(SKEIN_HERE, call,
                                     "Check the path (relative paths are from the "
                                     "working directory of rank 0).",
                                     "HDF5 file '{}' does not exist", path);
    } catch (...) {
      missing = std::current_exception();
    }
  }
  f.share_failure(missing, call);
  f.on_file_ranks(call, [&] {
    Handle fapl = file_access_list(f);
    f.file =
        Handle(SKEIN_H5_CHECK(
                   H5Fopen, (path.c_str(), f.writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get()),
                   fmt::format("opening HDF5 file '{}'", path)),
               H5Fclose);
    return std::string();
  });
  return File(std::move(impl));
}

File::Impl& File::checked(const char* call) const {
  if (!impl_ || impl_->comm == MPI_COMM_NULL) {
    detail::raise_in(SKEIN_HERE, call, "Open or create a file first (File::open, File::create).",
                     "the File is closed (or was moved from)");
  }
  return *impl_;
}

const std::string& File::path() const {
  static const std::string none;
  return impl_ ? impl_->path : none;
}
bool File::is_open() const { return impl_ && impl_->comm != MPI_COMM_NULL; }
bool File::parallel() const { return impl_ && impl_->parallel; }
int File::rank() const { return impl_ ? impl_->rank : 0; }
int File::ranks() const { return impl_ ? impl_->size : 0; }

void File::close() {
  if (!impl_ || impl_->comm == MPI_COMM_NULL) return;
  Impl& f = *impl_;
  const std::string call = "hdf5::File::close";
  // Without the other ranks, the file is closed where that needs no one else: on rank 0 through
  // rank 0; on the parallel path H5Fclose is collective, and the handle is left open instead.
  auto close_alone = [&] {
    if (f.file.valid()) {
      QuietHdf5Errors quiet;
      if (f.parallel) {
        (void)f.file.release();
      } else {
        H5Fclose(f.file.release());
      }
    }
    impl_.reset();
  };
  if (!f.agreement.broken().empty()) {  // the error was raised by the step that timed out
    close_alone();
    return;
  }
  try {
    f.agree_on_call(call, "close");  // a rank that never closes: a timeout, not a hang in H5Fclose
  } catch (...) {
    close_alone();
    throw;
  }
  std::exception_ptr failure;
  if (f.file.valid()) {
    QuietHdf5Errors quiet;
    // Released first: a failed close must not be retried by the handle's destructor.
    const hid_t id = f.file.release();
    if (H5Fclose(id) < 0) {
      try {
        raise_hdf5("H5Fclose", fmt::format("closing HDF5 file '{}'", f.path), __FILE__, __LINE__);
      } catch (...) {
        failure = std::current_exception();
      }
    }
  }
  std::unique_ptr<Impl> keep = std::move(impl_);
  keep->share_failure(failure, call);
}

void File::flush() {
  Impl& f = checked("hdf5::File::flush");
  const std::string call = "hdf5::File::flush";
  f.agree_on_call(call, call);
  f.on_file_ranks(call, [&] {
    SKEIN_H5_CHECK(H5Fflush, (f.file.get(), H5F_SCOPE_GLOBAL),
                   fmt::format("flushing HDF5 file '{}'", f.path));
    return std::string();
  });
}

}  // namespace skein::hdf5

#endif
