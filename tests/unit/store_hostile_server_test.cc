// SPDX-License-Identifier: Apache-2.0
// The TCP store server under hostile clients (127.0.0.1 only, bounded in count and time): clients
// that never read, half-header floods, HTTP probes and random bytes, connect-and-close floods,
// stalled frames, parked GETs whose client left, oversized and overflowing requests, running out
// of descriptors. Each asserts the server stays bounded (memory, descriptors, CPU) and serves a
// legitimate client at once; the figures printed are the ones docs/SECURITY.md quotes.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "smddp/error.h"
#include "smddp/store.h"
#include "store/tcp_store_server.h"
#include "unit/store_raw.h"

namespace smddp::store {
namespace {

using namespace std::chrono;
using namespace testing;
const char* kHost = "127.0.0.1";

std::string getFrame(const std::string& key, int64_t timeoutMs) {
  return encodeRequest(WireOp::kGet, key, "", timeoutMs);
}

// Waits until pred() holds, up to `ms`; returns whether it did.
template <typename Pred>
bool eventually(Pred pred, int ms) {
  auto deadline = steady_clock::now() + milliseconds(ms);
  while (!pred()) {
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// Time for a new client to connect, set and get (what "served at once" means below).
milliseconds serveOne(int port) {
  auto start = steady_clock::now();
  auto client = makeTcpStore(kHost, port, false, milliseconds(5000), "");
  client->set("probe", "ok");
  EXPECT_EQ(client->get("probe", milliseconds(1000)), "ok");
  return duration_cast<milliseconds>(steady_clock::now() - start);
}

TEST(StoreHostile, ClientThatNeverReadsCostsOneReference) {
  TcpStoreServer server(kHost, 0);
  {
    auto writer = makeTcpStore(kHost, server.port(), false, milliseconds(5000), "");
    writer->set("big", std::string(32 << 20, 'v'));
  }
  const size_t before = residentBytes();
  int fd = rawReady(server.port());
  ASSERT_GE(fd, 0);
  std::string frames;
  for (int i = 0; i < 64; ++i) frames += getFrame("big", 0);
  ASSERT_TRUE(sendRaw(fd, frames));  // 64 GETs of 32 MiB, never read
  std::this_thread::sleep_for(milliseconds(500));
  const size_t grown = residentBytes() > before ? residentBytes() - before : 0;
  std::printf("[ figures ] never-reading client, 64 GETs of 32 MiB: server grew %.1f MiB, %zu B queued\n",
              grown / 1048576.0, server.stats().queuedBytes);
  EXPECT_LT(grown, size_t{64} << 20) << "one unread reply at a time, sharing the stored value";
  EXPECT_LT(serveOne(server.port()), milliseconds(1000));
  ::close(fd);
}

// The server process has 1024 descriptors (a common default), the flood more connections than
// that: smddp 0.2's server locked every new client out here.
TEST(StoreHostile, HalfHeaderFloodLocksNobodyOut) {
  rlimit saved{};
  ::getrlimit(RLIMIT_NOFILE, &saved);
  rlimit limited{std::min<rlim_t>(1024, saved.rlim_cur), saved.rlim_max};
  ::setrlimit(RLIMIT_NOFILE, &limited);
  TcpStoreServer server(kHost, 0);
  const int fdsBefore = openDescriptors();
  const int kFlood = 1100;
  pid_t child = ::fork();
  if (child == 0) {  // the attacker: 1100 connections that each send two bytes, held for 3 s
    ::setrlimit(RLIMIT_NOFILE, &saved);
    std::vector<int> held;
    for (int i = 0; i < kFlood; ++i) {
      int fd = rawConnect(server.port());
      if (fd >= 0 && sendRaw(fd, "\x01\x05")) held.push_back(fd);
    }
    ::sleep(3);
    ::_exit(0);
  }
  std::this_thread::sleep_for(milliseconds(300));
  const auto served = serveOne(server.port());
  const auto peak = server.stats();
  std::printf("[ figures ] %d half-header connections: new client served in %lld ms, %zu connections held\n",
              kFlood, static_cast<long long>(served.count()), peak.connections);
  EXPECT_LT(served, milliseconds(1000));
  EXPECT_LE(peak.handshaking, ServerLimits{}.maxHandshaking + 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(eventually([&] { return server.stats().connections == 0; }, 3000));
  EXPECT_TRUE(eventually([&] { return openDescriptors() <= fdsBefore; }, 1000))
      << openDescriptors() << " descriptors, " << fdsBefore << " before";
  ::setrlimit(RLIMIT_NOFILE, &saved);
}

TEST(StoreHostile, ProbesAndGarbageAreClosedAtOnce) {
  TcpStoreServer server(kHost, 0);
  const std::vector<std::string> probes = {
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: scraper\r\n\r\n",
      std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + std::string(40, '\x55'),
      encodeRequest(WireOp::kGet, "smddp/key", "", 0) + std::string(32, '\0'),  // a 0.1 client
  };
  for (const auto& probe : probes) {
    int fd = rawConnect(server.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(sendRaw(fd, probe));
    bool closed = false;
    auto start = steady_clock::now();
    EXPECT_EQ(recvSome(fd, 1, 1000, &closed), "");
    EXPECT_TRUE(closed) << "probe not closed: " << probe.substr(0, 16);
    EXPECT_LT(steady_clock::now() - start, milliseconds(500));
    ::close(fd);
  }
  for (int i = 0; i < 2000; ++i) {  // connect-and-close flood
    int fd = rawConnect(server.port());
    if (fd >= 0) ::close(fd);
  }
  EXPECT_LT(serveOne(server.port()), milliseconds(1000));
  EXPECT_TRUE(eventually([&] { return server.stats().connections == 0; }, 2000));
}

TEST(StoreHostile, SilentAndStalledConnectionsAreClosed) {
  ServerLimits limits;
  limits.handshake = milliseconds(200);
  limits.stall = milliseconds(200);
  limits.idle = milliseconds(400);
  TcpStoreServer server(kHost, 0, "", limits);
  int silent = rawConnect(server.port());
  int stalled = rawReady(server.port());
  ASSERT_GE(silent, 0);
  ASSERT_GE(stalled, 0);
  ASSERT_TRUE(sendRaw(stalled, encodeRequest(WireOp::kSet, "k", "value", 0).substr(0, 20)));
  bool closed = false;
  recvSome(silent, 1, 2000, &closed);
  EXPECT_TRUE(closed) << "no handshake within the deadline: closed";
  recvSome(stalled, 1, 2000, &closed);
  EXPECT_TRUE(closed) << "a frame that stopped arriving: closed";
  // An idle legitimate client is closed too, and reconnects by itself on its next request.
  auto client = makeTcpStore(kHost, server.port(), false, milliseconds(2000), "");
  client->set("k", "v");
  ASSERT_TRUE(eventually([&] { return server.stats().connections == 0; }, 2000));
  EXPECT_EQ(client->get("k", milliseconds(500)), "v");
  ::close(silent);
  ::close(stalled);
}

TEST(StoreHostile, ParkedGetOfAGoneClientIsReleased) {
  TcpStoreServer server(kHost, 0);
  int fd = rawReady(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(sendRaw(fd, getFrame("never", INT64_MAX)));  // the largest timeout the wire holds
  ASSERT_TRUE(eventually([&] { return server.stats().parked == 1; }, 1000));
  ::close(fd);
  EXPECT_TRUE(eventually([&] { return server.stats().parked == 0 && server.stats().connections == 0; }, 500));
}

TEST(StoreHostile, OverflowsAndCapsAreErrors) {
  ServerLimits limits;
  limits.maxStoredBytes = 1 << 20;
  limits.maxKeys = 100;
  TcpStoreServer server(kHost, 0, "", limits);
  auto client = makeTcpStore(kHost, server.port(), false, milliseconds(2000), "");
  client->add("n", INT64_MAX);
  try {
    client->add("n", 1);
    FAIL() << "an overflowing add succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overflows"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client->add("n", 0), INT64_MAX);
  EXPECT_THROW(client->set("huge", std::string(2 << 20, 'x')), Error);
  for (int i = 0; i < 99; ++i) client->set("k" + std::to_string(i), "v");
  try {
    client->set("one-too-many", "v");
    FAIL() << "the key cap did not hold";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the store is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client->get("k7", milliseconds(100)), "v");  // the store still serves
}

// In a child out of descriptors: a flood must neither spin the server nor stop it for good.
TEST(StoreHostile, OutOfDescriptorsBacksOff) {
  int toChild[2];
  ASSERT_EQ(::pipe(toChild), 0);
  pid_t child = ::fork();
  if (child == 0) {
    rlimit lim{64, 64};
    ::setrlimit(RLIMIT_NOFILE, &lim);
    TcpStoreServer server(kHost, 0);
    int port = server.port();
    // The rest of the process takes every descriptor but one: accept() meets EMFILE.
    std::vector<int> hog;
    for (int fd; (fd = ::open("/dev/null", O_RDONLY)) >= 0;) hog.push_back(fd);
    ::close(hog.back());
    hog.pop_back();
    (void)!::write(toChild[1], &port, sizeof(port));
    ::sleep(3);
    for (int fd : hog) ::close(fd);  // descriptors back: the server serves again
    ::sleep(2);
    ::_exit(0);
  }
  int port = 0;
  ASSERT_EQ(::read(toChild[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  std::vector<int> held;
  for (int i = 0; i < 200; ++i) {
    int fd = rawConnect(port);
    if (fd >= 0) held.push_back(fd);
  }
  auto cpu = [child] {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", child);
    FILE* f = std::fopen(path, "r");
    unsigned long utime = 0, stime = 0;
    if (f != nullptr) {
      (void)!std::fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime);
      std::fclose(f);
    }
    return (utime + stime) * 1000.0 / ::sysconf(_SC_CLK_TCK);
  };
  const double start = cpu();
  std::this_thread::sleep_for(milliseconds(1500));
  const double used = cpu() - start;
  std::printf("[ figures ] 200 connections to a server with 64 descriptors: %.0f ms CPU in 1.5 s\n", used);
  EXPECT_LT(used, 500.0) << "the server spins when accept() runs out of descriptors";
  for (int fd : held) ::close(fd);
  EXPECT_LT(serveOne(port), milliseconds(4000));
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(toChild[0]);
  ::close(toChild[1]);
}

}  // namespace
}  // namespace smddp::store
