// SPDX-License-Identifier: Apache-2.0
// The TCP store client against servers that are not what they claim (an HTTP server on the port,
// a server with malformed or oversized replies), and the job secret: who is served, who is
// refused, what each side is told, and what the handshake costs.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "common/auth.h"
#include "smddp/error.h"
#include "smddp/store.h"
#include "store/tcp_store_server.h"
#include "unit/store_raw.h"

namespace smddp::store {
namespace {

using namespace std::chrono;
using namespace testing;
const char* kHost = "127.0.0.1";
const std::string kSecret = "0123456789abcdef0123456789abcdef";

// A one-thread server that runs `script` on each accepted connection (until `connections`).
class FakeServer {
 public:
  FakeServer(int connections, std::function<void(int fd, int index)> script) {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    ::bind(listen_, reinterpret_cast<sockaddr*>(&addr), len);
    ::listen(listen_, 16);
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, connections, script] {
      for (int i = 0; i < connections; ++i) {
        int fd = ::accept(listen_, nullptr, nullptr);
        if (fd < 0) return;
        ++accepted_;
        script(fd, i);
        ::close(fd);
      }
    });
  }
  ~FakeServer() {
    ::shutdown(listen_, SHUT_RDWR);
    thread_.join();
    ::close(listen_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int listen_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// The server's half of a handshake without a secret.
void acceptHello(int fd) {
  recvSome(fd, kClientHello, 2000);
  ServerHello hello;
  sendRaw(fd, encodeServerHello(hello));
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StoreClientHostile, RefusesAnHttpServer) {
  FakeServer http(1, [](int fd, int) {
    recvSome(fd, kClientHello, 2000);
    sendRaw(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 757000000\r\nServer: x\r\n\r\n");
  });
  const size_t before = residentBytes();
  auto what = errorOf([&] { makeTcpStore(kHost, http.port(), false, milliseconds(2000), ""); });
  EXPECT_NE(what.find("not an smddp store handshake (first bytes 'HTTP/1.1')"), std::string::npos)
      << what;
  EXPECT_LT(residentBytes(), before + (size_t{16} << 20)) << "allocated what the bytes claimed";
}

TEST(StoreClientHostile, ValidatesRepliesAndNeverReusesAStream) {
  // Connection 0: a GET answered with 757 MiB claimed; 1: unknown status; 2: a SET answered with
  // an extra stale byte; 3: answers properly.
  FakeServer bad(4, [](int fd, int index) {
    acceptHello(fd);
    std::string request = recvSome(fd, kRequestHeader + 3, 2000);
    std::string reply;
    if (index == 0) reply = std::string(1, '\0') + std::string("\x00\x00\x20\x2d", 4);
    if (index == 1) reply = encodeReply(static_cast<WireStatus>(7), "");
    if (index == 2) reply = encodeReply(WireStatus::kOk, "") + "X";
    if (index == 3) reply = encodeReply(WireStatus::kOk, "fine");
    sendRaw(fd, reply);
    if (index == 2) {  // the client must not read the stale byte as its next answer
      recvSome(fd, 1, 300);
    }
    recvSome(fd, 1, 500);
  });
  auto client = makeTcpStore(kHost, bad.port(), false, milliseconds(2000), "");
  const size_t before = residentBytes();
  auto what = errorOf([&] { client->get("key", milliseconds(500)); });
  EXPECT_NE(what.find("malformed reply (a GET answered with status 0 with 757071872 B"),
            std::string::npos) << what;
  EXPECT_LT(residentBytes(), before + (size_t{16} << 20));
  what = errorOf([&] { client->get("key", milliseconds(500)); });
  EXPECT_NE(what.find("unknown reply status 7"), std::string::npos) << what;
  client->set("key", "v");  // connection 2: the reply is fine, a stale byte follows it
  EXPECT_EQ(client->get("key", milliseconds(500)), "fine");  // on connection 3, not the stale byte
  EXPECT_EQ(bad.accepted(), 4);
}

TEST(StoreSecret, OnlyHoldersOfTheSecretAreServed) {
  TcpStoreServer server(kHost, 0, kSecret);
  auto member = makeTcpStore(kHost, server.port(), false, milliseconds(2000), kSecret);
  member->set("state", "secret-protected");
  EXPECT_EQ(member->get("state", milliseconds(500)), "secret-protected");

  auto what = errorOf([&] { makeTcpStore(kHost, server.port(), false, milliseconds(1000), ""); });
  EXPECT_NE(what.find("requires the job secret, which this process lacks"), std::string::npos) << what;
  what = errorOf([&] {
    makeTcpStore(kHost, server.port(), false, milliseconds(1000), "another-job-secret-0123456789");
  });
  EXPECT_NE(what.find("does not hold this job's secret"), std::string::npos) << what;

  // A raw client that skips the proof gets nothing: its request is never answered.
  int fd = rawConnect(server.port());
  ClientHello hello;
  hello.flags = kFlagSecret;  // claims a secret, sends no proof
  hello.nonce = std::string(kNonce, 'x');
  ASSERT_TRUE(sendRaw(fd, encodeClientHello(hello)));
  ASSERT_EQ(recvSome(fd, kServerHello, 1000).size(), kServerHello);
  ASSERT_TRUE(sendRaw(fd, std::string(kProof, 'p') + encodeRequest(WireOp::kGet, "state", "", 0)));
  bool closed = false;
  std::string got = recvSome(fd, 4096, 1000, &closed);
  EXPECT_EQ(got, std::string(1, static_cast<char>(HelloVerdict::kBadProof)));
  EXPECT_TRUE(closed);
  ::close(fd);
  // Counted by the server: the client without a secret and the wrong proof (the client with
  // another job's secret refused the server itself).
  auto deadline = steady_clock::now() + milliseconds(1000);
  while (server.stats().refused < 2 && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(server.stats().refused, 2u);
  EXPECT_EQ(member->get("state", milliseconds(500)), "secret-protected");
}

TEST(StoreSecret, AMemberRefusesAServerWithoutTheSecret) {
  TcpStoreServer open(kHost, 0);
  auto what = errorOf([&] { makeTcpStore(kHost, open.port(), false, milliseconds(1000), kSecret); });
  EXPECT_NE(what.find("the server does not ask for one"), std::string::npos) << what;
}

TEST(StoreSecret, AnotherProtocolVersionIsNamed) {
  TcpStoreServer server(kHost, 0);
  int fd = rawConnect(server.port());
  ClientHello hello;
  hello.version = 3;
  hello.nonce = std::string(kNonce, 'v');
  ASSERT_TRUE(sendRaw(fd, encodeClientHello(hello)));
  std::string answer = recvSome(fd, kServerHello, 1000);
  ASSERT_EQ(answer.size(), kServerHello);
  ServerHello decoded;
  std::string why;
  ASSERT_TRUE(decodeServerHello(answer.data(), decoded, why)) << why;
  EXPECT_EQ(decoded.verdict, HelloVerdict::kVersion);
  EXPECT_EQ(decoded.version, kProtocolVersion);
  ::close(fd);
}

// The secret's cost at group creation, world 8: eight ranks connect to the store at once (as at
// rendezvous), each through the handshake, then set and get. Per rank, with and without.
TEST(StoreSecret, HandshakeCostAtWorldEight) {
  TcpStoreServer plain(kHost, 0);
  TcpStoreServer authed(kHost, 0, kSecret);
  // The best of 10 rounds: the machine's other work (thread starts on 2 cores) is noise here.
  auto perRank = [](int port, const std::string& secret) {
    const int kWorld = 8, kRounds = 10;
    double best = 1e18;
    for (int round = 0; round < kRounds; ++round) {
      auto start = steady_clock::now();
      std::vector<std::thread> ranks;
      for (int r = 0; r < kWorld; ++r) {
        ranks.emplace_back([port, &secret, r] {
          auto s = makeTcpStore(kHost, port, false, milliseconds(5000), secret);
          s->set("rank" + std::to_string(r), "addr");
          s->get("rank" + std::to_string((r + 1) % kWorld), milliseconds(5000));
        });
      }
      for (auto& t : ranks) t.join();
      best = std::min(best, duration<double, std::micro>(steady_clock::now() - start).count());
    }
    return best;
  };
  perRank(plain.port(), "");  // warm
  const double without = perRank(plain.port(), "");
  const double with = perRank(authed.port(), kSecret);
  std::printf("[ figures ] 8 ranks connect, set and get at once: %.0f us without the secret, "
              "%.0f us with it (best of 10 rounds)\n", without, with);
  EXPECT_LT(with - without, 5000.0);  // the goal: under 5 ms per rank at world 8
}

TEST(JobSecret, LoadingRefusesWeakOrExposedSecrets) {
  EXPECT_EQ(auth::loadJobSecret("", ""), "");
  EXPECT_EQ(auth::loadJobSecret(kSecret, "/nonexistent"), kSecret);  // the variable wins
  EXPECT_NE(errorOf([] { auth::loadJobSecret("short", ""); }).find("16 to 4096 bytes"), std::string::npos);
  char path[] = "/tmp/smddp-secret-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(sendRaw(fd, kSecret + "\n") || ::write(fd, (kSecret + "\n").data(), kSecret.size() + 1) > 0);
  ::close(fd);
  ::chmod(path, 0600);
  EXPECT_EQ(auth::loadJobSecret("", path), kSecret);
  ::chmod(path, 0644);
  EXPECT_NE(errorOf([&] { auth::loadJobSecret("", path); }).find("readable or writable by group or others (mode 644)"),
            std::string::npos);
  ::unlink(path);
  EXPECT_NE(errorOf([&] { auth::loadJobSecret("", path); }).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace smddp::store
