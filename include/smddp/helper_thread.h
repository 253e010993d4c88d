// SPDX-License-Identifier: Apache-2.0
// How smddp starts its helper threads (engine, progress beacon, store server, the torch backend's
// completion thread): named "smddp-<what>" and started with every asynchronous signal blocked, so
// that a signal sent to the process (SIGINT, SIGTERM, ...) is taken by one of the application's
// threads. Python runs its handlers only on its main thread: a SIGINT that a helper thread took
// first could reach the interpreter after the script had ended, and the KeyboardInterrupt was
// lost. Faults a thread raises itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS)
// are directed at that thread and stay unblocked.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <string>
#include <thread>
#include <utility>

namespace smddp {

template <class F>
std::thread startHelperThread(const char* name, F&& body) {
  sigset_t blocked, previous;
  sigfillset(&blocked);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) {
    sigdelset(&blocked, sig);
  }
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);  // the new thread inherits this mask
  std::thread thread(std::forward<F>(body));
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // Named from here, so the name is there once this returns (not when the thread first runs).
  pthread_setname_np(thread.native_handle(), std::string(name).substr(0, 15).c_str());
  return thread;
}

}  // namespace smddp
