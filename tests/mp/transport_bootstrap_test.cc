// SPDX-License-Identifier: Apache-2.0
// The bootstrap reads what the store holds as untrusted: a peer's address entry that is truncated,
// oversized or of the wrong shape, and a host entry with a bad pid, host name or CPU list, are
// clear errors naming the peer's rank and what is wrong (for addresses: the length found and the
// provider's), never handed to libfabric, never a crash. Rank 1's entries are forged here; rank 0
// is this process. And the simplest bootstraps: an unknown provider is a clear error, and one
// rank talks to itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/logging.h"
#include "mp/fork_ranks.h"
#include "mp/transport_helpers.h"
#include "smddp/error.h"
#include "transport/peer_liveness.h"

namespace smddp::test {
namespace {

std::string validHostEntry() {
  return hostName() + "\n" + std::to_string(::getpid()) + "\n" + transport::processNamespace() +
         "\n0";
}

// What opening rank 0 of 2 throws when rank 1 published `host` and `addr` ("" when it opens).
std::string bootstrapError(const std::string& provider, const std::string& host,
                           const std::string& addr) {
  const std::string dir = makeTempDir("smddp-tp");
  std::string what;
  {
    auto store = makeFileStore(dir);
    store->set("tp/host/1", host);
    store->set("tp/addr/1", addr);
    try {
      auto t = openTransport(*store, 0, 2, provider);
    } catch (const Error& e) {
      what = e.what();
    }
  }
  removeTree(dir);
  return what;
}

void expectNamed(const std::string& what, const std::vector<std::string>& words) {
  EXPECT_FALSE(what.empty()) << "the forged entry was accepted";
  for (const std::string& w : words) EXPECT_NE(what.find(w), std::string::npos) << what;
}

std::string withProvider(const std::string& provider, const std::string& addr) {
  return provider + std::string(1, '\0') + addr;
}

TEST(TransportBootstrap, ForgedTcpAddressIsAClearError) {
  const std::string prov = "tcp;ofi_rxm";
  expectNamed(bootstrapError("tcp", validHostEntry(), withProvider(prov, "short")),
              {"rank 0", "rank 1", "5 bytes", "16 bytes"});
  expectNamed(bootstrapError("tcp", validHostEntry(), withProvider(prov, std::string(1000, 'A'))),
              {"rank 1", "1000 bytes", "16 bytes"});
  expectNamed(bootstrapError("tcp", validHostEntry(), withProvider(prov, std::string(16, 'A'))),
              {"rank 1", "address family"});
}

TEST(TransportBootstrap, ForgedShmAddressIsAClearError) {
  expectNamed(bootstrapError("shm", validHostEntry(), withProvider("shm", "")),
              {"rank 0", "rank 1", "0 bytes", "256 bytes"});
  expectNamed(bootstrapError("shm", validHostEntry(), withProvider("shm", std::string(1000, 'A'))),
              {"rank 1", "1000 bytes", "256 bytes"});
  std::string garbage(20, '\x01');
  garbage.back() = '\0';
  expectNamed(bootstrapError("shm", validHostEntry(), withProvider("shm", garbage)),
              {"rank 1", "not printable"});
}

TEST(TransportBootstrap, ForgedHostEntryIsAClearError) {
  const std::string addr = withProvider("shm", "fi_shm://nobody");
  const std::string host = hostName();
  const std::string ns = "\n" + transport::processNamespace() + "\n";
  for (const std::string& entry : std::vector<std::string>{
           "no-newline", host + "\nnot-a-pid" + ns + "0", host + "\n-5" + ns + "0",
           host + "\n99999999999" + ns + "0", host + "\n0" + ns + "0", "two words\n1" + ns + "0",
           host + "\n1", host + "\n1" + ns + "0\nextra", host + "\n1\nNOT A NAMESPACE\n0",
           host + "\n1\n" + std::string(1000, '1') + "\n0",
           host + "\n1" + ns + "0-65535,0-65535,0-65535", host + "\n1" + ns + "not-cpus",
           host + "\n1" + ns + std::string(100000, '1')}) {
    SCOPED_TRACE(entry.substr(0, 60));
    expectNamed(bootstrapError("shm", entry, addr), {"rank 0", "rank 1", "host entry"});
  }
}

constexpr uint64_t kSelfTag = 0x0abc000000000042ull;

TEST(TransportBootstrap, UnknownProviderIsAClearError) {
  std::string dir = makeTempDir("smddp-tp");
  auto store = makeFileStore(dir);
  try {
    openTransport(*store, 0, 1, "no-such-provider");
    FAIL() << "a transport opened on a provider that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTransport);
    EXPECT_NE(std::string(e.what()).find("no-such-provider"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
  removeTree(dir);
}

TEST(TransportBootstrap, SingleRankTalksToItself) {
  std::string dir = makeTempDir("smddp-tp");
  auto store = makeFileStore(dir);
  auto t = openTransport(*store, 0, 1, "shm");
  EXPECT_EQ(t->name(), "shm");
  std::vector<unsigned char> out(300), in(300, 0xEE);
  fillPattern(out, 0, 0, 5);
  Op r = makeOp(OpKind::kRecv, 0, kSelfTag, in.data(), in.size());
  Op s = makeOp(OpKind::kSend, 0, kSelfTag, out.data(), out.size());
  t->post(r);
  t->post(s);
  EXPECT_EQ(waitAll(*t, {&r, &s}), "");
  EXPECT_EQ(checkPattern(in, in.size(), 0, 0, 5), "");
  removeTree(dir);
}

}  // namespace
}  // namespace smddp::test
