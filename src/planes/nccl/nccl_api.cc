// SPDX-License-Identifier: Apache-2.0
// Loading NCCL (nccl_api.h): dlopen, the version check, the symbol table.
#include "planes/nccl/nccl_api.h"

#include <dlfcn.h>
#include <link.h>

#include <memory>
#include <mutex>

#include "common/config.h"
#include "device/fake/fake_hooks.h"

namespace smddp::planes::nccl {
namespace {

std::string loadedPath(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

// Opens the library by the rules of nccl_api.h; null with *why when none could be opened.
void* openLibrary(std::string* path, std::string* why) {
  const std::string& configured = Config::global().ncclLibrary;
  if (!configured.empty()) {
    void* h = dlopen(configured.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      *why = "SMDDP_NCCL_LIBRARY=" + configured + ": cannot load it: " + dlerror();
      return nullptr;
    }
    *path = loadedPath(h, configured);
    return h;
  }
  if (void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD)) {  // torch's copy
    *path = loadedPath(h, "libnccl.so.2");
    return h;
  }
  if (void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL)) {
    *path = loadedPath(h, "libnccl.so.2");
    return h;
  }
  *why = "no NCCL library found (libnccl.so.2: " + std::string(dlerror()) +
         "); install nvidia-nccl or set SMDDP_NCCL_LIBRARY";
  return nullptr;
}

template <class Fn>
bool bind(void* handle, const char* symbol, Fn& fn, std::string* missing) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (fn == nullptr && missing != nullptr) *missing += (missing->empty() ? "" : ", ") + std::string(symbol);
  return fn != nullptr;
}

std::unique_ptr<NcclApi> load(const std::string& device, std::string* why) {
  std::string path;
  void* h = openLibrary(&path, why);
  if (h == nullptr) return nullptr;
  auto api = std::make_unique<NcclApi>();
  api->path = path;
  ncclResult_t (*getVersion)(int*) = nullptr;
  std::string missing;
  bind(h, "ncclGetVersion", getVersion, &missing);
  bind(h, "ncclGetUniqueId", api->getUniqueId, &missing);
  bind(h, "ncclCommInitRankConfig", api->commInitRankConfig, &missing);
  bind(h, "ncclCommFinalize", api->commFinalize, &missing);
  bind(h, "ncclCommDestroy", api->commDestroy, &missing);
  bind(h, "ncclCommAbort", api->commAbort, &missing);
  bind(h, "ncclCommGetAsyncError", api->commGetAsyncError, &missing);
  bind(h, "ncclGetErrorString", api->getErrorString, &missing);
  bind(h, "ncclGetLastError", api->getLastError, &missing);
  bind(h, "ncclAllReduce", api->allReduce, &missing);
  bind(h, "ncclBroadcast", api->broadcast, &missing);
  bind(h, "ncclReduce", api->reduce, &missing);
  bind(h, "ncclAllGather", api->allGather, &missing);
  bind(h, "ncclReduceScatter", api->reduceScatter, &missing);
  bind(h, "ncclSend", api->send, &missing);
  bind(h, "ncclRecv", api->recv, &missing);
  bind(h, "ncclGroupStart", api->groupStart, &missing);
  bind(h, "ncclGroupEnd", api->groupEnd, &missing);
  if (getVersion == nullptr || getVersion(&api->version) != ncclSuccess) {
    *why = path + " does not say its NCCL version (ncclGetVersion)";
    return nullptr;
  }
  if (api->version < kMinNcclVersion) {
    *why = api->name() + " is older than " + versionText(kMinNcclVersion) +
           ", the oldest the NCCL plane runs on";
    return nullptr;
  }
  if (!missing.empty()) {
    *why = api->name() + " lacks " + missing;
    return nullptr;
  }
  bind(h, "ncclCommShrink", api->commShrink, nullptr);
  bind(h, "ncclCommRevoke", api->commRevoke, nullptr);
  bind(h, "ncclMemAlloc", api->memAlloc, nullptr);
  bind(h, "ncclMemFree", api->memFree, nullptr);
  bind(h, "ncclCommWindowRegister", api->commWindowRegister, nullptr);
  bind(h, "ncclCommWindowDeregister", api->commWindowDeregister, nullptr);
  if (api->memAlloc == nullptr || api->memFree == nullptr) api->memAlloc = nullptr;

  SmddpTestNcclAttachFn attach = nullptr;
  bind(h, device::kTestNcclAttachSymbol, attach, nullptr);
  api->test = attach != nullptr;
  if (device == "fake") {
    if (attach == nullptr) {
      *why = "the fake device (SMDDP_DEVICE=fake) runs only smddp's test NCCL "
             "(SMDDP_NCCL_LIBRARY=<build>/tests/nccl/libsmddp_test_nccl.so), not " + api->name();
      return nullptr;
    }
    if (attach(device::fakeDeviceHooks()) != 0) {
      *why = api->name() + " refused the fake device's hooks (a version it does not know)";
      return nullptr;
    }
  } else if (attach != nullptr) {
    *why = api->path + " is smddp's test NCCL, which runs only on the fake device "
           "(SMDDP_DEVICE=fake), not on " + device + " devices";
    return nullptr;
  }
  return api;
}

}  // namespace

std::string versionText(int code) {
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string NcclApi::name() const { return "NCCL " + versionText(version) + " (" + path + ")"; }

std::string NcclApi::describe(ncclResult_t result, ncclComm_t comm) const {
  std::string text = getErrorString != nullptr ? getErrorString(result) : "";
  static const char* const kNames[] = {"ncclSuccess",        "ncclUnhandledCudaError",
                                       "ncclSystemError",    "ncclInternalError",
                                       "ncclInvalidArgument", "ncclInvalidUsage",
                                       "ncclRemoteError",    "ncclInProgress"};
  const int r = static_cast<int>(result);
  std::string out = r >= 0 && r < 8 ? kNames[r] : "ncclResult " + std::to_string(r);
  if (!text.empty()) out += " (" + text + ")";
  const char* last = getLastError != nullptr ? getLastError(comm) : nullptr;
  if (last != nullptr && last[0] != '\0') out += ": " + std::string(last);
  return out;
}

const NcclApi* ncclApi(const std::string& device, std::string* why) {
  // One attempt per device kind: a process uses one of them (SMDDP_DEVICE).
  static std::mutex mutex;
  static std::unique_ptr<NcclApi> api;
  static bool tried = false;
  static std::string reason;
  static std::string triedFor;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried) {
    tried = true;
    triedFor = device;
    api = load(device, &reason);
  } else if (triedFor != device) {
    if (why != nullptr) *why = "NCCL was loaded for " + triedFor + " devices, not " + device;
    return nullptr;
  }
  if (!api && why != nullptr) *why = reason;
  return api.get();
}

}  // namespace smddp::planes::nccl
