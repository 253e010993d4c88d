// Keeps provider libraries' fatal-signal handlers out of every process that loads smddp.
// Debian's libfabric links the PSM providers; libinfinipath's and libpsm2's load-time constructors
// install handlers for SIGSEGV, SIGBUS, SIGILL and SIGABRT that print a backtrace and call exit(1)
// (unless IPATH_NO_BACKTRACE / HFI_NO_BACKTRACE is set). They turn a crash into an ordinary error
// exit (no core, no signal status) and, when the fault happens inside exit handlers, into a
// deadlock in exit(). Open MPI sets both variables for the same reason.
// Invariant: once libfabric() (libfabric_api.h) returns, no fatal signal's disposition is a handler
// of a provider library that ends the process any other way than by the signal, and the variables
// the user set are left as they are.
#pragma once

#include <csignal>
#include <string>

namespace smddp::transport::ofi {

// Sets IPATH_NO_BACKTRACE=1 and HFI_NO_BACKTRACE=1 unless the user set them (setenv without
// overwrite: the value is never read here, only its presence matters to the providers).
void suppressProviderBacktraces();

// The dispositions of the fatal signals at construction; the destructor puts back every one that
// changed in between (a library loaded or initialized in that window installed it) and logs which
// library's handler it removed. Handlers of libfabric itself are kept: its shm provider's clean up
// shared-memory files and re-raise with the previous disposition.
class FatalSignalGuard {
 public:
  FatalSignalGuard();
  ~FatalSignalGuard();
  FatalSignalGuard(const FatalSignalGuard&) = delete;
  FatalSignalGuard& operator=(const FatalSignalGuard&) = delete;

  static constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE};
  static constexpr int kCount = sizeof(kSignals) / sizeof(kSignals[0]);

 private:
  struct sigaction saved_[kCount];
  bool valid_[kCount];
};

// For a libfabric that was already in the process before smddp loaded it (linked by the program or
// by another library): a fatal-signal handler that lives in a PSM library (libinfinipath,
// libpsm_infinipath, libpsm2) is reset to the default disposition. Returns how many were reset.
int resetProviderHandlers();

// The file name of the shared object holding the function at `handler` ("" when null or unknown).
std::string handlerLibrary(void* handler);

}  // namespace smddp::transport::ofi
