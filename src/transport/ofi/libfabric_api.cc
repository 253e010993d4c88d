// SPDX-License-Identifier: Apache-2.0
// See libfabric_api.h. The library is opened RTLD_GLOBAL, as linking it would: providers built as
// separate libraries resolve libfabric's symbols from the global scope.
#include "transport/ofi/libfabric_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "common/logging.h"
#include "smddp/error.h"
#include "transport/ofi/fatal_signals.h"

#ifndef SMDDP_LIBFABRIC_PATH
#define SMDDP_LIBFABRIC_PATH ""
#endif
// The default symbol versions of the libfabric built against (src/transport/sources.cmake); ""
// when unknown: then the run-time library's default is taken.
#ifndef SMDDP_FI_GETINFO_VERSION
#define SMDDP_FI_GETINFO_VERSION ""
#endif
#ifndef SMDDP_FI_FREEINFO_VERSION
#define SMDDP_FI_FREEINFO_VERSION ""
#endif
#ifndef SMDDP_FI_DUPINFO_VERSION
#define SMDDP_FI_DUPINFO_VERSION ""
#endif
#ifndef SMDDP_FI_FABRIC_VERSION
#define SMDDP_FI_FABRIC_VERSION ""
#endif
#ifndef SMDDP_FI_STRERROR_VERSION
#define SMDDP_FI_STRERROR_VERSION ""
#endif

namespace smddp::transport::ofi {
namespace {

constexpr const char* kSoname = "libfabric.so.1";

// The symbol at the version this build was compiled against when the library has it (a newer
// libfabric keeps the old versions for old binaries), else the library's default.
template <typename Fn>
bool resolve(void* handle, const char* name, const char* version, Fn& fn, std::string& error) {
  void* sym = version[0] != '\0' ? dlvsym(handle, name, version) : nullptr;
  if (sym == nullptr) sym = dlsym(handle, name);
  fn = reinterpret_cast<Fn>(sym);
  if (fn == nullptr) error += std::string(error.empty() ? "" : "; ") + "no symbol " + name;
  return fn != nullptr;
}

std::string lastDlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

void* openLibrary(std::string& error) {
  // Already in the process (linked by the program or loaded by another library): its providers'
  // constructors ran before smddp could set the variables, so their handlers are removed instead.
  if (void* loaded = dlopen(kSoname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD)) {
    resetProviderHandlers();
    return loaded;
  }
  suppressProviderBacktraces();
  FatalSignalGuard guard;  // belt and braces: any handler installed while loading is undone
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_GLOBAL);
  if (handle != nullptr) return handle;
  error = lastDlError();
  const std::string fallback = SMDDP_LIBFABRIC_PATH;
  if (!fallback.empty() && fallback != kSoname) {
    handle = dlopen(fallback.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle != nullptr) return handle;
    error += "; " + lastDlError();
  }
  return nullptr;
}

struct Loaded {
  LibfabricApi api;
  std::string error;  // empty when api is complete
};

Loaded load() {
  Loaded out;
  void* handle = openLibrary(out.error);
  if (handle == nullptr) {
    out.error = "cannot load libfabric (" + out.error +
                "): install libfabric1 (Debian) or the EFA installer, or add its directory to "
                "LD_LIBRARY_PATH";
    return out;
  }
  std::string missing;
  LibfabricApi& a = out.api;
  bool ok = resolve(handle, "fi_getinfo", SMDDP_FI_GETINFO_VERSION, a.getinfoRaw, missing) &
            resolve(handle, "fi_freeinfo", SMDDP_FI_FREEINFO_VERSION, a.freeinfo, missing) &
            resolve(handle, "fi_dupinfo", SMDDP_FI_DUPINFO_VERSION, a.dupinfo, missing) &
            resolve(handle, "fi_fabric", SMDDP_FI_FABRIC_VERSION, a.fabric, missing) &
            resolve(handle, "fi_strerror", SMDDP_FI_STRERROR_VERSION, a.strerror, missing);
  if (!ok) {
    out.error = "libfabric loaded but incomplete (" + missing + ")";
    out.api = LibfabricApi{};
  } else {
    SMDDP_INFO(-1, "libfabric loaded at run time (built against headers " << FI_MAJOR_VERSION
                                                                           << "." << FI_MINOR_VERSION
                                                                           << ")");
  }
  return out;
}

// At load time of whatever links smddp (a program, torch_smddp._C), usually before it starts
// threads: setenv then cannot race a getenv of another thread. openLibrary() sets them again,
// harmlessly, for a library loaded some other way.
__attribute__((constructor)) void setVariablesAtLoad() { suppressProviderBacktraces(); }

}  // namespace

int LibfabricApi::getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
                          const fi_info* hints, fi_info** info) const {
  FatalSignalGuard guard;
  return getinfoRaw(version, node, service, flags, hints, info);
}

const LibfabricApi& libfabric() {
  static const Loaded loaded = load();  // C++11: initialized once, thread-safe
  if (!loaded.error.empty()) throw Error(ErrorCode::kTransport, "smddp: " + loaded.error);
  return loaded.api;
}

}  // namespace smddp::transport::ofi
