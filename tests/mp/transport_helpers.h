// SPDX-License-Identifier: Apache-2.0
// Helpers of the multi-process transport tests: open a libfabric transport (through the factory)
// for one forked rank (file store in the test's temp dir), drive ops to completion with a bound, a store barrier, and
// the byte pattern every exchange checks. Invariant: every wait here ends by its deadline.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "smddp/store.h"
#include "mp/fork_ranks.h"
#include "transport/factory.h"
#include "transport/transport.h"

namespace smddp::test {

using transport::Op;
using transport::OpKind;
using transport::Transport;
using Clock = std::chrono::steady_clock;

// A parameterized transport test with a fresh temp directory (its ranks' file store) per case.
template <typename Param>
class TempDirTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    dir_ = makeTempDir("smddp-tp");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { removeTree(dir_); }
  std::string dir_;
};

constexpr std::chrono::milliseconds kRankLimit{60000};   // one forked rank, whole test case
constexpr std::chrono::milliseconds kWaitLimit{20000};   // one batch of ops

inline std::unique_ptr<Transport> openTransport(Store& store, int rank, int size,
                                                const std::string& provider) {
  Config config = Config::fromMap({{"SMDDP_TIMEOUT_MS", "20000"}});
  transport::TransportRequest request;
  request.store = &store;
  request.prefix = "tp";
  request.rank = rank;
  request.size = size;
  request.config = &config;
  request.provider = provider;
  request.timeout = std::chrono::milliseconds(config.timeoutMs);
  return transport::createTransport(request);
}

// The byte at `index` of message `msg` from `sender` to `receiver`: every pair, message and
// offset differ, so a misrouted or shifted message is seen.
inline unsigned char patternByte(int sender, int receiver, int msg, size_t index) {
  return static_cast<unsigned char>((index * 131 + sender * 17 + receiver * 29 + msg * 7) % 251);
}

inline void fillPattern(std::vector<unsigned char>& buf, int sender, int receiver, int msg) {
  for (size_t j = 0; j < buf.size(); ++j) buf[j] = patternByte(sender, receiver, msg, j);
}

// "" when right, else what is wrong at the first bad byte.
inline std::string checkPattern(const std::vector<unsigned char>& buf, size_t bytes, int sender,
                                int receiver, int msg) {
  for (size_t j = 0; j < bytes; ++j) {
    if (buf[j] != patternByte(sender, receiver, msg, j)) {
      return "message " + std::to_string(msg) + " from rank " + std::to_string(sender) +
             " to rank " + std::to_string(receiver) + ": byte " + std::to_string(j) + " is " +
             std::to_string(buf[j]) + ", expected " +
             std::to_string(patternByte(sender, receiver, msg, j));
    }
  }
  return "";
}

// Progresses until every op finished. Returns "" or the first failure / a timeout report.
inline std::string waitAll(Transport& t, const std::vector<Op*>& ops,
                           std::chrono::milliseconds limit = kWaitLimit) {
  auto deadline = Clock::now() + limit;
  for (;;) {
    t.progress();
    size_t finished = 0;
    for (Op* op : ops) {
      if (op->failed()) return "rank " + std::to_string(t.rank()) + ": op failed: " + op->error;
      if (op->done()) ++finished;
    }
    if (finished == ops.size()) return "";
    if (Clock::now() > deadline) {
      return "rank " + std::to_string(t.rank()) + ": " + std::to_string(ops.size() - finished) +
             " of " + std::to_string(ops.size()) + " ops unfinished after " +
             std::to_string(limit.count()) + " ms";
    }
    std::this_thread::yield();  // ranks outnumber cores on small machines
  }
}

// All `size` ranks arrive before any leaves (so no rank tears its endpoint down early).
inline void storeBarrier(Store& store, const std::string& name, int size) {
  if (store.add(name + "/count", 1) == size) store.set(name + "/open", "");
  store.get(name + "/open", kWaitLimit);
}

inline Op makeOp(OpKind kind, int peer, uint64_t tag, void* buffer, size_t bytes) {
  Op op;
  op.kind = kind;
  op.peer = peer;
  op.tag = tag;
  op.buffer = buffer;
  op.bytes = bytes;
  return op;
}

// Runs the gtest parameter's rank count; prints the failure of a rank to stderr, returns its code.
inline int report(int rank, const std::string& failure) {
  if (failure.empty()) return 0;
  std::fprintf(stderr, "rank %d: %s\n", rank, failure.c_str());
  return 1;
}

}  // namespace smddp::test
