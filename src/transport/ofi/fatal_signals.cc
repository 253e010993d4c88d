// SPDX-License-Identifier: Apache-2.0
// See fatal_signals.h. dladdr tells which shared object a handler lives in; only handlers of the
// known offenders (the PSM libraries) are removed when smddp did not load them itself.
#include "transport/ofi/fatal_signals.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>

#include "common/logging.h"

namespace smddp::transport::ofi {
namespace {

// The address of a disposition's function (nullptr for SIG_DFL / SIG_IGN), whichever member holds it.
void* handlerOf(const struct sigaction& action) {
  if (action.sa_flags & SA_SIGINFO) return reinterpret_cast<void*>(action.sa_sigaction);
  if (action.sa_handler == SIG_DFL || action.sa_handler == SIG_IGN) return nullptr;
  return reinterpret_cast<void*>(action.sa_handler);
}

bool sameDisposition(const struct sigaction& a, const struct sigaction& b) {
  return handlerOf(a) == handlerOf(b) && a.sa_handler == b.sa_handler &&
         (a.sa_flags & SA_SIGINFO) == (b.sa_flags & SA_SIGINFO);
}

const char* baseName(const std::string& path) {
  const char* base = std::strrchr(path.c_str(), '/');
  return base ? base + 1 : path.c_str();
}

bool startsWithAny(const char* base, std::initializer_list<const char*> prefixes) {
  for (const char* prefix : prefixes) {
    if (std::strncmp(base, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

// The PSM libraries: their handlers print a backtrace and exit(1).
bool isProviderLibrary(const std::string& path) {
  return startsWithAny(baseName(path), {"libinfinipath", "libpsm_infinipath", "libpsm2", "libpsm."});
}

// libfabric's own handlers (the shm provider's) clean up its shared-memory files, put the previous
// disposition back and re-raise: the crash stays a crash, so they are left alone. Providers built
// as separate libraries are named lib<provider>-fi.so.
bool isLibfabric(const std::string& path) {
  const std::string base = baseName(path);
  const std::string plugin = "-fi.so";
  return startsWithAny(base.c_str(), {"libfabric."}) ||
         (base.size() > plugin.size() && base.compare(base.size() - plugin.size(), plugin.size(),
                                                      plugin) == 0);
}

std::mutex& guardMutex() {
  static std::mutex m;
  return m;
}

std::set<std::string> loadedObjects() {
  std::set<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::set<std::string>*>(out)->insert(info->dlpi_name);
        }
        return 0;
      },
      &names);
  return names;
}

}  // namespace

void suppressProviderBacktraces() {
  // overwrite = 0: a value the user set (even "0": the providers test presence only) stays.
  ::setenv("IPATH_NO_BACKTRACE", "1", 0);
  ::setenv("HFI_NO_BACKTRACE", "1", 0);
}

std::string handlerLibrary(void* handler) {
  Dl_info info{};
  if (handler == nullptr || dladdr(handler, &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}

FatalSignalGuard::FatalSignalGuard() {
  guardMutex().lock();  // unlocked by the destructor: one guard's window at a time
  loadedBefore_ = loadedObjects();
  for (int i = 0; i < kCount; ++i) valid_[i] = sigaction(kSignals[i], nullptr, &saved_[i]) == 0;
}

FatalSignalGuard::~FatalSignalGuard() {
  std::lock_guard<std::mutex> unlock(guardMutex(), std::adopt_lock);
  std::set<std::string> loadedNow;
  bool listed = false;
  for (int i = 0; i < kCount; ++i) {
    struct sigaction now {};
    if (!valid_[i] || sigaction(kSignals[i], nullptr, &now) != 0) continue;
    if (sameDisposition(now, saved_[i])) continue;
    if (!listed) {
      loadedNow = loadedObjects();
      listed = true;
    }
    std::string lib = handlerLibrary(handlerOf(now));
    // Undone: a PSM library's, or one of a library loaded in this window that is not libfabric.
    // Kept: anything code already loaded installed meanwhile (another thread's handler).
    const bool newlyLoaded = loadedNow.count(lib) != 0 && loadedBefore_.count(lib) == 0;
    if (!isProviderLibrary(lib) && !(newlyLoaded && !isLibfabric(lib))) continue;
    sigaction(kSignals[i], &saved_[i], nullptr);
    SMDDP_INFO(-1, "libfabric: removed the " << strsignal(kSignals[i]) << " handler that "
                                             << (lib.empty() ? "a library" : lib)
                                             << " installed while loading; the previous one is back");
  }
}

int resetProviderHandlers() {
  int reset = 0;
  for (int sig : FatalSignalGuard::kSignals) {
    struct sigaction now {};
    if (sigaction(sig, nullptr, &now) != 0) continue;
    std::string lib = handlerLibrary(handlerOf(now));
    if (lib.empty() || !isProviderLibrary(lib)) continue;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    ++reset;
    SMDDP_WARN(-1, "libfabric was loaded before smddp with " << lib << "'s " << strsignal(sig)
                                                             << " handler, which turns a crash "
                                                                "into exit(1); reset to the "
                                                                "default (set IPATH_NO_BACKTRACE=1 "
                                                                "and HFI_NO_BACKTRACE=1 to avoid it)");
  }
  return reset;
}

}  // namespace smddp::transport::ofi
