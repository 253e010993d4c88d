// SPDX-License-Identifier: Apache-2.0
// What a process outside the job can do by writing into the job's store (torch's TCPStore admits
// anyone who reaches its port): announce a failure in a rank's name. Without the job secret that
// ends the job (the control: the test can fail); with it the forgery is refused and the job
// trains on with every result right. Also the signed store itself: round trips, tampering,
// another job's secret.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "mp/failure_helpers.h"
#include "mp/fork_ranks.h"
#include "smddp/smddp.h"
#include "store/signed_store.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using namespace failure;
const std::string kSecret = "forged-store-test-secret-0123456789";

// 3 ranks, 20 all_reduces; after the 5th, rank 0 plays an outsider and forges rank 1's failure
// in the raw store. Returns forkRanks' report ("" when every rank finished with right results).
std::string runWithForgery(const std::string& dir, bool signedValues) {
  return test::forkRanks(kRanks, 90s, [&](int rank) {
    auto raw = makeFileStore(dir);
    auto s = signedValues ? store::signWithJobSecret(kSecret, raw) : raw;
    Options opts;
    opts.provider = "shm";
    opts.name = "forged";
    opts.generation = "g1";
    auto c = Communicator::create(s, rank, kRanks, opts);
    for (int k = 0; k < 20; ++k) {
      std::vector<float> a(1000, static_cast<float>(rank + k));
      const Buffer b(a.data(), a.size(), DataType::kFloat32);
      c->allReduce(b, b, ReduceOp::kSum).wait();
      const float want = static_cast<float>(0 + 1 + 2 + 3 * k);
      for (float v : a) {
        if (v != want) return 3;
      }
      if (k == 4) {
        if (rank == 0) {
          raw->set("forged/g1/failure", "1\n4\nforged by a process outside the job");
          raw->add("forged/g1/failures", 1);
        }
        std::this_thread::sleep_for(1500ms);  // three beacon periods: every rank has read it
      }
    }
    return 0;
  });
}

TEST(ForgedStore, AForgedFailureEndsAJobWithoutTheSecret) {
  const std::string dir = test::makeTempDir("smddp_forged");
  const std::string report = runWithForgery(dir, false);
  EXPECT_NE(report, "") << "the forgery went unnoticed: the test below proves nothing";
  test::removeTree(dir);
}

TEST(ForgedStore, AForgedFailureIsRefusedWithTheSecret) {
  const std::string dir = test::makeTempDir("smddp_forged");
  EXPECT_EQ(runWithForgery(dir, true), "");
  test::removeTree(dir);
}

TEST(SignedStore, RoundTripsAndRefusesTampering) {
  const std::string dir = test::makeTempDir("smddp_signed");
  auto raw = makeFileStore(dir);
  auto a = store::signWithJobSecret(kSecret, raw);
  auto other = store::signWithJobSecret("another-jobs-secret-0123456789", raw);
  a->set("k", std::string("bin\0ary", 7));
  EXPECT_EQ(a->get("k", 100ms), std::string("bin\0ary", 7));
  a->set("empty", "");
  EXPECT_EQ(a->get("empty", 100ms), "");
  EXPECT_THROW(other->get("k", 100ms), Error);  // another job's secret
  std::string stored = raw->get("k", 100ms);
  stored[0] ^= 1;
  raw->set("k", stored);
  EXPECT_THROW(a->get("k", 100ms), Error);  // one flipped bit
  raw->set("moved", raw->get("empty", 100ms));
  EXPECT_THROW(a->get("moved", 100ms), Error);  // a signature is bound to its key
  raw->set("plain", "12345");
  try {
    a->get("plain", 100ms);
    FAIL() << "an unsigned value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("store key 'plain' refused"), std::string::npos) << e.what();
  }
  EXPECT_EQ(store::signWithJobSecret("", raw), raw);  // no secret: the store itself
  test::removeTree(dir);
}

}  // namespace
}  // namespace smddp
