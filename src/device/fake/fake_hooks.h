// SPDX-License-Identifier: Apache-2.0
// The fake device as a library loaded beside smddp reaches it: a plain C table of functions over
// the process's fake device (device::fakeDevice()). smddp's test NCCL (tests/nccl) takes it when
// the NCCL plane loads it (smddpTestNcclAttach), so its collectives run on the fake device's
// streams and read and write its memory as a real NCCL does a GPU's.
// Invariant: C types only, versioned; a field is only ever appended.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

struct SmddpFakeDeviceHooks {
  uint32_t version;  // kFakeDeviceHooksVersion
  // Runs fn(arg) on `stream` (null: the default stream) after the work queued there before.
  void (*enqueue)(void* stream, void (*fn)(void*), void* arg);
  // The host-accessible address of [p, p + bytes) when that range lies in one live device
  // allocation; else null, and why in error[0..errorBytes).
  void* (*resolve)(const void* p, size_t bytes, char* error, size_t errorBytes);
  // Device memory of device 0 (null when it cannot be had), and its release.
  void* (*alloc)(size_t bytes);
  void (*release)(void* p);
};

// What a test NCCL exports; the NCCL plane calls it once, before any other call, when it loads
// a library on the fake device. Returns 0 when the library accepts the table.
typedef int (*SmddpTestNcclAttachFn)(const SmddpFakeDeviceHooks* hooks);
}

namespace smddp::device {

constexpr uint32_t kFakeDeviceHooksVersion = 1;
constexpr const char* kTestNcclAttachSymbol = "smddpTestNcclAttach";

// The table over device::fakeDevice().
const SmddpFakeDeviceHooks* fakeDeviceHooks();

}  // namespace smddp::device
