// SPDX-License-Identifier: Apache-2.0
// Which peers' pids are watched (peer_liveness.h): only those published from our host and our pid
// namespace (boot id and namespace identity), never an unknown one, never a pid of another
// namespace; a watched peer that exits is found dead.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/logging.h"
#include "transport/peer_liveness.h"

namespace smddp::transport {
namespace {

PeerInfo peer(const std::string& host, int pid, const std::string& ns) {
  PeerInfo p;
  p.host = host;
  p.pid = pid;
  p.pidNamespace = ns;
  return p;
}

TEST(PeerLiveness, ThisProcessKnowsItsNamespace) {
  const std::string ns = processNamespace();
  ASSERT_FALSE(ns.empty()) << "/proc/sys/kernel/random/boot_id or /proc/self/ns/pid unreadable";
  EXPECT_EQ(ns.find('/'), 36u) << "a boot id first: " << ns;
  EXPECT_NE(ns.find(':'), std::string::npos) << ns;
  EXPECT_EQ(processNamespace(), ns);
}

TEST(PeerLiveness, OnlyPidsOfOurNamespaceOnOurHostAreWatchable) {
  const std::string ns = "76db360e-e586-4d71-aa3a-8399477aca84/4:4026531836";
  const std::string other = "76db360e-e586-4d71-aa3a-8399477aca84/4:4026532174";
  const std::string otherKernel = "11111111-e586-4d71-aa3a-8399477aca84/4:4026531836";
  EXPECT_TRUE(pidWatchable(peer("h", 42, ns), "h", ns));
  EXPECT_FALSE(pidWatchable(peer("h", 42, other), "h", ns)) << "another pid namespace";
  EXPECT_FALSE(pidWatchable(peer("h", 42, otherKernel), "h", ns)) << "another kernel";
  EXPECT_FALSE(pidWatchable(peer("h", 42, ""), "h", ns)) << "unknown namespace";
  EXPECT_FALSE(pidWatchable(peer("h", 42, ""), "h", "")) << "ours unknown too";
  EXPECT_FALSE(pidWatchable(peer("g", 42, ns), "h", ns)) << "another host";
  EXPECT_FALSE(pidWatchable(peer("h", 0, ns), "h", ns)) << "no pid";
}

TEST(PeerLiveness, WatchesOurNamespacesPeersAndFindsThemDead) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  const std::string ns = processNamespace();
  const std::vector<PeerInfo> peers = {
      peer(hostName(), ::getpid(), ns),   // rank 0: this process
      peer(hostName(), child, ns),        // rank 1: watched
      peer(hostName(), child, ns + "0"),  // rank 2: same pid, another namespace
      peer(hostName(), child, ""),        // rank 3: namespace unknown
  };
  PeerLiveness liveness(peers, 0);
  EXPECT_FALSE(liveness.watches(0));
  EXPECT_TRUE(liveness.watches(1));
  EXPECT_FALSE(liveness.watches(2));
  EXPECT_FALSE(liveness.watches(3));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  int dead = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (dead < 0 && std::chrono::steady_clock::now() < deadline) {
    dead = liveness.check();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(dead, 1);
  EXPECT_EQ(liveness.check(), -1) << "each dead peer once; the others were never watched";
}

}  // namespace
}  // namespace smddp::transport
