// SPDX-License-Identifier: Apache-2.0
// The liveness port and its probe (watch/liveness_probe.h): a process's port accepts while it
// lives and is refused once it is gone (a forked child that exits); a closed port is "gone", a
// listening one "alive"; loopback and unspecified addresses are never probed across hosts; the
// drained port keeps accepting however often it is probed.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "watch/liveness_probe.h"

namespace smddp::watch {
namespace {

using namespace std::chrono_literals;

int closedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(Liveness, ThisProcessIsAliveAClosedPortIsGone) {
  const int port = livenessPort();
  ASSERT_GT(port, 0);
  EXPECT_EQ(livenessPort(), port) << "one port per process";
  EXPECT_EQ(probeLiveness("127.0.0.1", port, 500ms), Liveness::kAlive);
  EXPECT_EQ(probeLiveness("127.0.0.1", closedPort(), 500ms), Liveness::kGone);
  EXPECT_EQ(probeLiveness("not an address", port, 500ms), Liveness::kUnknown);
  EXPECT_EQ(probeLiveness("127.0.0.1", 0, 500ms), Liveness::kUnknown);
}

TEST(Liveness, ADeadProcessIsGoneAndAForkedChildHasItsOwnPort) {
  const int mine = livenessPort();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const int port = livenessPort();  // its own, not the parent's inherited one
    (void)!::write(fds[1], &port, sizeof(port));
    ::pause();  // until killed
    ::_exit(0);
  }
  int port = 0;
  ASSERT_EQ(::read(fds[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  EXPECT_NE(port, mine);
  EXPECT_EQ(probeLiveness("127.0.0.1", port, 500ms), Liveness::kAlive);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(probeLiveness("127.0.0.1", port, 500ms), Liveness::kGone);
  EXPECT_EQ(probeLiveness("127.0.0.1", mine, 500ms), Liveness::kAlive);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Liveness, ThePortKeepsAcceptingWhenDrained) {
  const int port = livenessPort();
  for (int i = 0; i < 600; ++i) {
    ASSERT_EQ(probeLiveness("127.0.0.1", port, 500ms), Liveness::kAlive) << "probe " << i;
    if (i % 50 == 49) drainLivenessPort();
  }
}

TEST(Liveness, OnlyAnotherHostsRealAddressIsProbed) {
  for (const char* ip : {"", "127.0.0.1", "127.0.1.1", "0.0.0.0", "::1", "::", "::ffff:10.0.0.1",
                         "node-a"}) {
    EXPECT_FALSE(probeableAddress(ip)) << ip;
  }
  for (const char* ip : {"192.0.2.101", "10.0.0.7", "2001:db8::5"}) {
    EXPECT_TRUE(probeableAddress(ip)) << ip;
  }
}

}  // namespace
}  // namespace smddp::watch
