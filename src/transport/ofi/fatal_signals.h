// SPDX-License-Identifier: Apache-2.0
// Keeps provider libraries' fatal-signal handlers out of every process that loads smddp.
// Debian's libfabric links the PSM libraries; libinfinipath's load-time constructor installs
// handlers for SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGINT and SIGTERM that print a backtrace and
// call exit(1), unless IPATH_NO_BACKTRACE is set (some libpsm2 builds have the same behind
// HFI_NO_BACKTRACE; others only opt in, with HFI_BACKTRACE). They turn a crash into an ordinary
// error exit (no core, no signal status), Ctrl-C into exit(1), and a fault inside exit handlers
// into a deadlock in exit(). Open MPI sets both variables for the same reason.
// Invariant: once libfabric() (libfabric_api.h) returns, no disposition of those signals is a
// handler installed by a provider library while smddp loaded or initialized it, nor a PSM
// library's handler, and the variables the user set are left as they are.
#pragma once

#include <csignal>
#include <set>
#include <string>

namespace smddp::transport::ofi {

// Sets IPATH_NO_BACKTRACE=1 and HFI_NO_BACKTRACE=1 unless the user set them (setenv without
// overwrite: the providers test presence only).
void suppressProviderBacktraces();

// The dispositions of the signals at construction, and the shared objects loaded then; the
// destructor puts back every disposition that changed in between to a handler of a PSM library
// or of a library loaded in between (a provider loaded or initialized in that window), and logs
// which. Kept: libfabric's own handlers (its shm provider's clean up shared-memory files, put the
// previous disposition back and re-raise), and handlers that code already loaded installed
// meanwhile (another thread's, e.g. Python's faulthandler). Guards are serialized process-wide.
class FatalSignalGuard {
 public:
  FatalSignalGuard();
  ~FatalSignalGuard();
  FatalSignalGuard(const FatalSignalGuard&) = delete;
  FatalSignalGuard& operator=(const FatalSignalGuard&) = delete;

  static constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE, SIGINT, SIGTERM};
  static constexpr int kCount = sizeof(kSignals) / sizeof(kSignals[0]);

 private:
  struct sigaction saved_[kCount];
  bool valid_[kCount];
  std::set<std::string> loadedBefore_;
};

// For a libfabric that was already in the process before smddp loaded it (linked by the program or
// by another library): a handler of those signals that lives in a PSM library (libinfinipath,
// libpsm_infinipath, libpsm2) is reset to the default disposition. Returns how many were reset.
int resetProviderHandlers();

// The file name of the shared object holding the function at `handler` ("" when null or unknown).
std::string handlerLibrary(void* handler);

}  // namespace smddp::transport::ofi
