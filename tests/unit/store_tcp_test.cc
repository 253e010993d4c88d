// SPDX-License-Identifier: Apache-2.0
// TcpStore unit tests (127.0.0.1 only): set/get/add with binary values, bounded get, 8 concurrent
// clients, clients started before the server (forked processes, exact add total), clients that
// disconnect or send garbage, and a clean, prompt failure once the server is gone (the hostile
// clients are store_hostile_*_test.cc).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "mp/fork_ranks.h"
#include "smddp/error.h"
#include "smddp/store.h"
#include "unit/store_raw.h"

namespace smddp {
namespace {

using std::chrono::milliseconds;
const char* kHost = "127.0.0.1";

// A port that was free a moment ago (the tests that need a port before the server exists).
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) return -1;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

using store::testing::rawConnect;

TEST(TcpStoreTest, SetGetAddBinary) {
  auto server = makeTcpStore(kHost, 0, true, milliseconds(5000));
  int port = tcpStorePort(*server);
  ASSERT_GT(port, 0);
  auto client = makeTcpStore(kHost, port, false, milliseconds(5000));
  EXPECT_EQ(tcpStorePort(*client), port);
  EXPECT_EQ(tcpStorePort(*makePrefixStore("p", client)), port);
  std::string value;
  for (int i = 0; i < 1000; ++i) value += static_cast<char>((i * 7) & 0xff);  // NULs included
  server->set(std::string("k\0ey", 4), value);
  EXPECT_EQ(client->get(std::string("k\0ey", 4), milliseconds(100)), value);
  client->set("empty", "");
  EXPECT_EQ(server->get("empty", milliseconds(100)), "");
  EXPECT_EQ(client->add("n", 5), 5);
  EXPECT_EQ(server->add("n", -2), 3);
  EXPECT_EQ(client->get("n", milliseconds(100)), "3");
  server->set("text", "abc");
  EXPECT_THROW(client->add("text", 1), Error);
  EXPECT_EQ(client->add("n", 1), 4);  // the client reconnected after the failed add
}

TEST(TcpStoreTest, GetTimesOutWithKeyAndDuration) {
  auto server = makeTcpStore(kHost, 0, true, milliseconds(5000));
  auto start = std::chrono::steady_clock::now();
  try {
    server->get("never", milliseconds(150));
    FAIL() << "get of an absent key returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kStore);
    EXPECT_NE(std::string(e.what()).find("key 'never' not set after 150 ms"), std::string::npos)
        << e.what();
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, milliseconds(150));
  EXPECT_LT(elapsed, milliseconds(3000));
  server->set("after", "ok");  // the connection is still usable
  EXPECT_EQ(server->get("after", milliseconds(100)), "ok");
}

TEST(TcpStoreTest, EightConcurrentClients) {
  constexpr int kClients = 8;
  auto server = makeTcpStore(kHost, 0, true, milliseconds(5000));
  int port = tcpStorePort(*server);
  std::vector<std::string> errors(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      try {
        auto store = makeTcpStore(kHost, port, false, milliseconds(5000));
        // Each client waits for the next one's key before it has been set: parked GETs.
        std::string want = "v" + std::to_string((c + 1) % kClients);
        store->set("k" + std::to_string(c), "v" + std::to_string(c));
        std::string got = store->get("k" + std::to_string((c + 1) % kClients), milliseconds(10000));
        if (got != want) errors[c] = "client " + std::to_string(c) + " got " + got;
        for (int i = 0; i < 20; ++i) store->add("total", c + 1);
      } catch (const std::exception& e) {
        errors[c] = "client " + std::to_string(c) + ": " + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(errors[c], "") << "client " << c;
  EXPECT_EQ(server->add("total", 0), 20 * kClients * (kClients + 1) / 2);
}

TEST(TcpStoreTest, ServerStartedAfterForkedClients) {
  constexpr int kProcs = 5, kAdds = 20;  // rank 0 is the late server, ranks 1..4 clients
  int port = freePort();
  ASSERT_GT(port, 0);
  std::string report = test::forkRanks(kProcs, milliseconds(30000), [port](int rank) {
    if (rank == 0) {
      std::this_thread::sleep_for(milliseconds(300));
      auto server = makeTcpStore(kHost, port, true, milliseconds(5000));
      server->get("all-done", milliseconds(20000));  // serve until every client finished
      int64_t total = server->add("counter", 0);
      const int64_t expected = kAdds * (1 + 2 + 3 + 4);
      if (total != expected) {
        std::fprintf(stderr, "rank 0: counter %lld, expected %lld\n",
                     static_cast<long long>(total), static_cast<long long>(expected));
        return 1;
      }
      return 0;
    }
    auto client = makeTcpStore(kHost, port, false, milliseconds(10000));
    for (int i = 0; i < kAdds; ++i) client->add("counter", rank);
    if (client->add("finished", 1) == kProcs - 1) client->set("all-done", "");
    return 0;
  });
  EXPECT_EQ(report, "");
}

TEST(TcpStoreTest, SurvivesMisbehavingClients) {
  auto server = makeTcpStore(kHost, 0, true, milliseconds(5000));
  int port = tcpStorePort(*server);
  // 1: two bytes, then gone.  2: a frame of the headerless 0.2 protocol claiming a 4 GiB key and
  // more bytes than a handshake: closed at once.  3: a parked GET after the handshake, then gone.
  int a = rawConnect(port);
  ASSERT_GE(a, 0);
  ASSERT_EQ(::send(a, "\x01\x05", 2, MSG_NOSIGNAL), 2);
  ::close(a);
  int b = rawConnect(port);
  ASSERT_GE(b, 0);
  char bad[40] = {1, '\xff', '\xff', '\xff', '\xff'};
  ASSERT_EQ(::send(b, bad, sizeof(bad), MSG_NOSIGNAL), 40);
  char c = 0;
  EXPECT_LE(::recv(b, &c, 1, 0), 0) << "the server should drop a client without a handshake";  // FIN or RST
  ::close(b);
  int d = store::testing::rawReady(port);
  ASSERT_GE(d, 0);
  ASSERT_TRUE(store::testing::sendRaw(d, store::encodeRequest(store::WireOp::kGet, "zzz", "", 10000)));
  std::this_thread::sleep_for(milliseconds(20));
  ::close(d);
  server->set("zzz", "still serving");
  auto client = makeTcpStore(kHost, port, false, milliseconds(5000));
  EXPECT_EQ(client->get("zzz", milliseconds(1000)), "still serving");
}

TEST(TcpStoreTest, ClientFailsPromptlyOnceServerIsGone) {
  auto server = makeTcpStore(kHost, 0, true, milliseconds(5000));
  auto client = makeTcpStore(kHost, tcpStorePort(*server), false, milliseconds(200));
  client->set("x", "1");
  server.reset();  // stops the listener thread and closes every connection
  auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(client->get("x", milliseconds(60000)), Error);
  EXPECT_THROW(client->set("y", "2"), Error);  // reconnect is refused within the 200 ms bound
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
}

TEST(TcpStoreTest, NoServerMeansBoundedConnectError) {
  int port = freePort();
  auto start = std::chrono::steady_clock::now();
  try {
    makeTcpStore(kHost, port, false, milliseconds(200));
    FAIL() << "connected to nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kStore);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
}

}  // namespace
}  // namespace smddp
