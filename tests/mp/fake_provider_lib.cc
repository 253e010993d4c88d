// SPDX-License-Identifier: Apache-2.0
// A stand-in for a provider library with a load-time signal handler (as libinfinipath's): its
// constructor installs a SIGBUS handler. fatal_signal_test loads it inside a FatalSignalGuard.
#include <csignal>

namespace {

void fakeProviderHandler(int) {}

__attribute__((constructor)) void installOnLoad() {
  struct sigaction action {};
  action.sa_handler = fakeProviderHandler;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, nullptr);
}

}  // namespace
