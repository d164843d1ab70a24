// SPDX-License-Identifier: BSD-3-Clause
// File in a build without HDF5 (or without MPI, without which there are no distributed arrays):
// every call raises RuntimeError saying how to get HDF5 I/O.
#include <skein/config.hpp>

#if !(SKEIN_HAS_HDF5 && SKEIN_HAS_MPI)
#include "skein/detail/errors.hpp"
#include "skein/error.hpp"
#include "skein/hdf5.hpp"

namespace skein::hdf5 {

namespace {
[[noreturn]] void raise_unavailable(const std::string& call) {
  detail::raise_in<RuntimeError>(
      SKEIN_HERE, call,
      "Rebuild Skein with HDF5 and MPI (SKEIN_WITH_HDF5=ON, SKEIN_WITH_MPI=ON; on Debian the "
      "packages libhdf5-openmpi-dev or libhdf5-dev).",
      "this build of Skein has no HDF5 I/O ({})", SKEIN_HAS_HDF5 ? "no MPI" : "no HDF5 library");
}
}  // namespace

struct File::Impl {};

bool available() { return false; }
bool parallel_available() { return false; }
std::string library_description() {
  return SKEIN_HAS_HDF5 ? "HDF5 present but unused: this build has no MPI"
                        : "no HDF5 in this build";
}

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;
File File::create(Communicator&, const std::string&, FileOptions) {
  raise_unavailable("hdf5::File::create");
}
File File::open(Communicator&, const std::string&, Access, FileOptions) {
  raise_unavailable("hdf5::File::open");
}
#if SKEIN_HAS_MPI
File File::create(MPI_Comm, const std::string&, FileOptions) {
  raise_unavailable("hdf5::File::create");
}
File File::open(MPI_Comm, const std::string&, Access, FileOptions) {
  raise_unavailable("hdf5::File::open");
}
#endif
File::Impl& File::checked(const char* call) const { raise_unavailable(call); }
const std::string& File::path() const {
  static const std::string none;
  return none;
}
bool File::is_open() const { return false; }
bool File::parallel() const { return false; }
int File::rank() const { return 0; }
int File::ranks() const { return 0; }
void File::write(const std::string&, const DistArray&, const WriteOptions&) {
  raise_unavailable("hdf5::File::write");
}
void File::read(const std::string&, const DistArray&) { raise_unavailable("hdf5::File::read"); }
void File::write(const std::string&, const GridArray&, const WriteOptions&) {
  raise_unavailable("hdf5::File::write");
}
void File::read(const std::string&, const GridArray&) { raise_unavailable("hdf5::File::read"); }
void File::write(const std::string&, const ReplicatedArray&, const WriteOptions&) {
  raise_unavailable("hdf5::File::write");
}
void File::read(const std::string&, const ReplicatedArray&) {
  raise_unavailable("hdf5::File::read");
}
void File::write_host(const std::string&, std::span<const std::byte>, const std::optional<Shape>&,
                      Dtype, int, const WriteOptions&) {
  raise_unavailable("hdf5::File::write_host");
}
std::vector<std::byte> File::read_host_bytes(const std::string&) {
  raise_unavailable("hdf5::File::read_host");
}
std::vector<std::byte> File::read_host_bytes_as(const std::string&, std::optional<Dtype>) {
  raise_unavailable("hdf5::File::read_host");
}
DatasetInfo File::info(const std::string&) { raise_unavailable("hdf5::File::info"); }
bool File::exists(const std::string&) { raise_unavailable("hdf5::File::exists"); }
std::vector<std::string> File::datasets(const std::string&) {
  raise_unavailable("hdf5::File::datasets");
}
void File::set_attribute(const std::string&, const std::string&, const AttributeValue&) {
  raise_unavailable("hdf5::File::set_attribute");
}
Attributes File::attributes(const std::string&) { raise_unavailable("hdf5::File::attributes"); }
std::optional<AttributeValue> File::attribute(const std::string&, const std::string&) {
  raise_unavailable("hdf5::File::attribute");
}
void File::flush() { raise_unavailable("hdf5::File::flush"); }
void File::close() {}

}  // namespace skein::hdf5

#endif
