// SPDX-License-Identifier: BSD-3-Clause
// The backend-neutral half of the IPC handles (skein/memory.hpp): the header fields every handle
// carries (magic, version, exporting process and host, checksum), filled by seal() and checked by
// check_ipc_handle() before a backend opens one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "skein/export.hpp"
#include "skein/memory.hpp"

namespace skein::detail {

inline constexpr std::uint32_t kIpcMemoryMagic = 0x4d494b53;  // "SKIM" in little-endian bytes
inline constexpr std::uint32_t kIpcEventMagic = 0x45494b53;   // "SKIE"
inline constexpr std::uint32_t kIpcVersion = 1;

// FNV-1a, 64 bits.
SKEIN_EXPORT std::uint64_t ipc_checksum(const void* data, std::size_t size);

// Fills magic, version, process, host, `device` (the exporting device's identifier: its PCI bus
// id) and the checksum, once every other field is set.
SKEIN_EXPORT void seal(IpcMemoryHandle& handle, std::string_view device);
SKEIN_EXPORT void seal(IpcEventHandle& handle, std::string_view device);

// What a backend says of the device that exported a handle (its PCI bus id): empty when the
// device being opened on can use it, else why not ("which this process does not see").
using IpcDeviceCheck = std::function<std::string(std::string_view exporter)>;

// LogicError naming `call` and `description` (the device the handle is opened on) for a handle
// that is malformed (magic, version, checksum), from another host, of a device that `device_check`
// refuses, or exported by this very process.
SKEIN_EXPORT void check_ipc_handle(const IpcMemoryHandle& handle,
                                   const IpcDeviceCheck& device_check, const char* call,
                                   const std::string& description);
SKEIN_EXPORT void check_ipc_handle(const IpcEventHandle& handle, const IpcDeviceCheck& device_check,
                                   const char* call, const std::string& description);

}  // namespace skein::detail
