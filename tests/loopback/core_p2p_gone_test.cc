// SPDX-License-Identifier: Apache-2.0
// send / recv when the peer is found gone: a message it sent just before it was found gone is
// still received (the receiver keeps polling for transport::kGoneDrain before failing), and a
// receive from a gone peer that sent nothing fails with kPeerFailure naming the rank soon after
// the drain, long before the communicator's timeout. Both paths: messages through the
// transport only, and through mailboxes (letters and larger carried messages).
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "loopback_group.h"
#include "smddp/error.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::expectError;
using testing::makeLoopbackGroup;

constexpr size_t kFabric = 0;    // no mailboxes
constexpr size_t kLetter = 256;  // mailboxes with letters of 256 bytes

class CoreP2pGone : public ::testing::TestWithParam<size_t> {
 protected:
  // n ranks; *p2p: the fabric their send / recv run on.
  std::vector<std::unique_ptr<Communicator>> group(
      int n, std::shared_ptr<transport::LoopbackFabric>* p2p) const {
    Options options;
    options.timeout = 30s;
    return makeLoopbackGroup(n, options, nullptr, GetParam(), nullptr, 0, true, p2p);
  }
};

TEST_P(CoreP2pGone, AMessageSentJustAfterItsSenderWasFoundGoneIsStillReceived) {
  // 4 elements: a letter; 262147: carried by the transport on both paths.
  for (size_t count : {size_t{4}, size_t{262147}}) {
    std::shared_ptr<transport::LoopbackFabric> p2p;
    auto comms = group(2, &p2p);
    std::vector<int32_t> out(count), in(count, -1);
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(i * 7 + 3);
    Request r = comms[0]->recv(Buffer(in.data(), count, DataType::kInt32), 1, 5);
    p2p->kill(1);
    // Rank 0's progress thread sees rank 1 gone within a millisecond; the message comes later,
    // as one a peer sent right before it exited can.
    std::this_thread::sleep_for(20ms);
    Request s = comms[1]->send(Buffer(out.data(), count, DataType::kInt32), 0, 5);
    r.wait();
    s.wait();
    EXPECT_EQ(r.source(), 1);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(in[i], out[i]) << "count " << count << " element " << i;
    }
  }
}

TEST_P(CoreP2pGone, AReceiveFromAGonePeerFailsAfterTheDrainNamingIt) {
  std::shared_ptr<transport::LoopbackFabric> p2p;
  auto comms = group(3, &p2p);
  int32_t x = 0;
  p2p->kill(2);
  const auto t0 = Clock::now();
  const std::string msg =
      expectError([&] { comms[0]->recv(Buffer(&x, 1, DataType::kInt32), 2, 9).wait(); },
                  ErrorCode::kPeerFailure);
  const auto took = Clock::now() - t0;
  EXPECT_NE(msg.find("from rank 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gone"), std::string::npos) << msg;
  EXPECT_GE(took, transport::kGoneDrain);
  EXPECT_LT(took, 10s) << "the 30 s timeout, not the peer's loss, ended it";
  // Ranks 0 and 1 still exchange messages afterwards.
  int32_t y = 42, z = 0;
  Request s = comms[1]->send(Buffer(&y, 1, DataType::kInt32), 0, 11);
  comms[0]->recv(Buffer(&z, 1, DataType::kInt32), 1, 11).wait();
  s.wait();
  EXPECT_EQ(z, 42);
}

INSTANTIATE_TEST_SUITE_P(Paths, CoreP2pGone, ::testing::Values(kFabric, kLetter),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(info.param == kFabric ? "Fabric" : "Mail");
                         });

}  // namespace
}  // namespace smddp
