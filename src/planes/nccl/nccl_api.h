// SPDX-License-Identifier: Apache-2.0
// The NCCL library, loaded at run time (dlopen): this wing (src/planes/nccl/) is the only place of
// smddp that includes nccl.h. Which library, first found wins:
//   1. SMDDP_NCCL_LIBRARY (a path);
//   2. the libnccl.so.2 this process already loaded: torch's, from the nvidia-nccl package, so
//      torch and smddp agree on the version;
//   3. libnccl.so.2 through the loader's search path.
// Its version must be at least kMinNcclVersion. The calls newer NCCLs added (ncclCommShrink,
// ncclCommRevoke, ncclMemAlloc, windows) are looked up and stay null where the library lacks
// them. On the fake device only smddp's test NCCL (tests/nccl) runs: it exports
// smddpTestNcclAttach and takes the fake device's hooks (device/fake/fake_hooks.h); on a real
// device that library is refused.
// Invariant: loaded at most once per process and never unloaded (NCCL's own threads outlive any
// handle); a failure is remembered with its reason and never retried.
#pragma once

#include <nccl.h>

#include <string>

namespace smddp::planes::nccl {

constexpr int kMinNcclVersion = 21800;  // 2.18.0: non-blocking communicators, ncclCommFinalize

// "2.30.7" from NCCL_VERSION_CODE's two encodings (2.8 and older: 2800 + patch).
std::string versionText(int code);

struct NcclApi {
  std::string path;  // the file that was loaded
  int version = 0;   // its NCCL_VERSION_CODE
  bool test = false;  // smddp's test NCCL, on the fake device

  ncclResult_t (*getUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*commInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
  ncclResult_t (*commFinalize)(ncclComm_t) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*commAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  const char* (*getErrorString)(ncclResult_t) = nullptr;
  const char* (*getLastError)(ncclComm_t) = nullptr;
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int,
                         ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*allGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*reduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t,
                       cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;

  // Optional: null where the library lacks them.
  ncclResult_t (*commShrink)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int) = nullptr;
  ncclResult_t (*commRevoke)(ncclComm_t, int) = nullptr;
  ncclResult_t (*memAlloc)(void**, size_t) = nullptr;
  ncclResult_t (*memFree)(void*) = nullptr;
  ncclResult_t (*commWindowRegister)(ncclComm_t, void*, size_t, void**, int) = nullptr;
  ncclResult_t (*commWindowDeregister)(ncclComm_t, void*) = nullptr;

  // "ncclRemoteError (remote process exited or there was a network error): <last error>".
  std::string describe(ncclResult_t result, ncclComm_t comm) const;
  // "NCCL 2.30.7 (/path/libnccl.so.2)".
  std::string name() const;
};

// The process's NCCL for a device named `device` ("cuda" or "fake"); null when none is usable,
// with the reason in *why ("SMDDP_NCCL_LIBRARY=/x: cannot load it: ...", "NCCL 2.16.5 ... is
// older than 2.18.0", "the fake device runs only smddp's test NCCL ...").
const NcclApi* ncclApi(const std::string& device, std::string* why);

}  // namespace smddp::planes::nccl
