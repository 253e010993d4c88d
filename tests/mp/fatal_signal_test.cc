// SPDX-License-Identifier: Apache-2.0
// A crash must stay a crash in a process that uses smddp: after libfabric is loaded (and with it
// the PSM provider libraries, whose constructors install backtrace-and-exit(1) handlers), SIGSEGV,
// SIGABRT, SIGBUS, SIGINT and SIGTERM still end the process by that signal, with a core where
// cores are enabled.
// Also: a libfabric the program loaded itself before smddp gets its providers' handlers removed,
// and IPATH_NO_BACKTRACE / HFI_NO_BACKTRACE that the user set are left as they are.
// Each case runs in a forked child whose stderr goes to a file; the parent reads its wait status.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>

#include "fork_ranks.h"
#include "smddp/smddp.h"
#include "transport/ofi/fatal_signals.h"

extern char** environ;

namespace smddp {
namespace {

using namespace std::chrono_literals;
constexpr int kSkip = 77;  // the child found no PSM library to test against

struct Child {
  int status = -1;
  bool finished = false;
  std::string stderrText;
};

// Runs body in a forked child (stderr to a file, cwd = dir) and reaps it within 60 s.
Child runChild(const std::string& dir, const std::function<int()>& body) {
  const std::string errPath = dir + "/stderr";
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) ::dup2(fd, 2);
    if (::chdir(dir.c_str()) != 0) ::_exit(103);
    int code = 104;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child threw: %s\n", e.what());
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  Child c;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &c.status, WNOHANG) == pid) {
      c.finished = true;
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  if (!c.finished) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  std::ifstream in(errPath);
  c.stderrText.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return c;
}

// The environment as the process sees it now (setenv included); "" when unset.
std::string envValue(const std::string& name) {
  const std::string prefix = name + "=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) == 0) return *e + prefix.size();
  }
  return "";
}

bool isPsm(const std::string& lib) {
  return lib.find("psm") != std::string::npos || lib.find("infinipath") != std::string::npos;
}

std::string segvHandlerLibrary() {
  struct sigaction now {};
  sigaction(SIGSEGV, nullptr, &now);
  void* fn = (now.sa_flags & SA_SIGINFO) ? reinterpret_cast<void*>(now.sa_sigaction)
             : (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN)
                 ? nullptr
                 : reinterpret_cast<void*>(now.sa_handler);
  return transport::ofi::handlerLibrary(fn);
}

// A world-1 communicator over libfabric's shm provider and one all_reduce: libfabric is loaded.
void useSmddp(const std::string& dir) {
  Options opts;
  opts.provider = "shm";
  opts.sharedMemory = false;  // through libfabric itself
  opts.timeout = 20s;
  auto c = Communicator::create(makeFileStore(dir + "/store"), 0, 1, opts);
  float x = 2.f;
  const Buffer b(&x, 1, DataType::kFloat32);
  c->allReduce(b, b, ReduceOp::kSum).wait();
  if (x != 2.f) std::_Exit(105);
}

void dieBy(int sig) {
  if (sig == SIGABRT) std::abort();  // the real abort path: raise + reset + raise
  std::raise(sig);
}

class FatalSignal : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { dir_ = test::makeTempDir("smddp_crash"); }
  void TearDown() override { test::removeTree(dir_); }
  std::string dir_;
};

TEST_P(FatalSignal, KillsByTheSignalAfterLibfabricIsLoaded) {
  const int sig = GetParam();
  const bool cores = sig == SIGABRT;  // one case with cores on, the others without a core file
  Child c = runChild(dir_, [&] {
    ::unsetenv("IPATH_NO_BACKTRACE");
    ::unsetenv("HFI_NO_BACKTRACE");
    rlimit core{cores ? RLIM_INFINITY : 0, cores ? RLIM_INFINITY : 0};
    ::setrlimit(RLIMIT_CORE, &core);
    useSmddp(dir_);
    std::ifstream maps("/proc/self/maps");
    const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    if (text.find("libinfinipath") != std::string::npos) std::ofstream(dir_ + "/psm") << 1;
    dieBy(sig);
    return 106;
  });
  ASSERT_TRUE(c.finished) << "child still running after 60 s (a hang in a signal handler?)";
  ASSERT_TRUE(WIFSIGNALED(c.status))
      << strsignal(sig) << ": child exited with status " << WEXITSTATUS(c.status)
      << " instead of dying by the signal; its stderr:\n"
      << c.stderrText;
  EXPECT_EQ(WTERMSIG(c.status), sig) << c.stderrText;
  EXPECT_EQ(c.stderrText.find("terminated with signal"), std::string::npos) << c.stderrText;
  if (!std::ifstream(dir_ + "/psm")) {
    GTEST_SKIP() << "this libfabric loads no PSM library: the signal status above is all it shows";
  }
  if (cores) {
    std::ifstream pattern("/proc/sys/kernel/core_pattern");
    std::string p;
    std::getline(pattern, p);
    if (!p.empty() && p[0] != '|') {
      EXPECT_TRUE(WCOREDUMP(c.status)) << "no core dumped with RLIMIT_CORE unlimited, pattern " << p;
    }
  }
}

// SIGINT and SIGTERM too: libinfinipath hooks them as well (Ctrl-C would become exit(1)).
INSTANTIATE_TEST_SUITE_P(Signals, FatalSignal,
                         ::testing::Values(SIGSEGV, SIGABRT, SIGBUS, SIGINT, SIGTERM),
                         [](const auto& info) { return std::string(sigabbrev_np(info.param)); });

class ProviderHandlers : public FatalSignal {};

// The program loaded libfabric itself (without the variables): PSM's handlers are in place before
// smddp runs; creating a communicator removes them.
TEST_F(ProviderHandlers, PreloadedLibfabricLosesThemWhenSmddpStarts) {
  Child c = runChild(dir_, [&] {
    ::unsetenv("IPATH_NO_BACKTRACE");
    ::unsetenv("HFI_NO_BACKTRACE");
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
    if (dlopen("libfabric.so.1", RTLD_NOW | RTLD_GLOBAL) == nullptr) return kSkip;
    const std::string before = segvHandlerLibrary();
    std::fprintf(stderr, "SIGSEGV handler after the program's own dlopen: %s\n", before.c_str());
    if (!isPsm(before)) return kSkip;  // this libfabric links no PSM library
    useSmddp(dir_);
    // libfabric's own shm provider may add a handler that cleans up and re-raises: not PSM's
    if (isPsm(segvHandlerLibrary())) {
      std::fprintf(stderr, "SIGSEGV handler left: %s\n", segvHandlerLibrary().c_str());
      return 107;
    }
    std::raise(SIGSEGV);
    return 106;
  });
  ASSERT_TRUE(c.finished) << c.stderrText;
  if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == kSkip) {
    GTEST_SKIP() << "no PSM handler installed by this libfabric: " << c.stderrText;
  }
  ASSERT_TRUE(WIFSIGNALED(c.status)) << "exit status " << WEXITSTATUS(c.status) << ":\n"
                                     << c.stderrText;
  EXPECT_EQ(WTERMSIG(c.status), SIGSEGV) << c.stderrText;
}

TEST_F(ProviderHandlers, VariablesTheUserSetAreKept) {
  Child c = runChild(dir_, [&] {
    ::setenv("IPATH_NO_BACKTRACE", "users-own", 1);
    ::unsetenv("HFI_NO_BACKTRACE");
    useSmddp(dir_);
    if (envValue("IPATH_NO_BACKTRACE") != "users-own") return 10;
    if (envValue("HFI_NO_BACKTRACE") != "1") return 11;  // unset by the user: smddp set it
    if (!isPsm(segvHandlerLibrary())) return 0;
    std::fprintf(stderr, "SIGSEGV handler left: %s\n", segvHandlerLibrary().c_str());
    return 12;
  });
  ASSERT_TRUE(c.finished && WIFEXITED(c.status)) << c.stderrText;
  EXPECT_EQ(WEXITSTATUS(c.status), 0)
      << "10: IPATH_NO_BACKTRACE changed, 11: HFI_NO_BACKTRACE not set, 12: a handler installed\n"
      << c.stderrText;
}

void markingHandler(int) {}

void* busHandler() {
  struct sigaction now {};
  sigaction(SIGBUS, nullptr, &now);
  return reinterpret_cast<void*>(now.sa_handler);
}

// The guard undoes a handler that a library loaded in its scope installed, and keeps one that
// code loaded before installed meanwhile (another thread's, say).
TEST(FatalSignalGuard, UndoesWhatALibraryLoadedInItsScopeInstalled) {
  struct sigaction before {};
  sigaction(SIGBUS, nullptr, &before);
  void* lib = nullptr;
  {
    transport::ofi::FatalSignalGuard guard;
    lib = dlopen(SMDDP_FAKE_PROVIDER, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    EXPECT_NE(busHandler(), reinterpret_cast<void*>(before.sa_handler))
        << "the stand-in library installed nothing";
  }
  EXPECT_EQ(busHandler(), reinterpret_cast<void*>(before.sa_handler));
  {
    transport::ofi::FatalSignalGuard guard;
    struct sigaction mine {};
    mine.sa_handler = markingHandler;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGBUS, &mine, nullptr);
  }
  EXPECT_EQ(busHandler(), reinterpret_cast<void*>(&markingHandler));
  sigaction(SIGBUS, &before, nullptr);
  dlclose(lib);
}

}  // namespace
}  // namespace smddp
