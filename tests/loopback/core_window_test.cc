// SPDX-License-Identifier: Apache-2.0
// Windows (smddp/window.h) over loopback ranks: every rank puts into every rank's window (its own
// too) at random offsets and sizes from 4 B, of windows of different sizes, then signals; after
// waiting for every signal each window holds exactly what was put. Both paths: shareable memory
// on one host (mapped: copies and shared counters) and ordinary memory or other hosts (messages).
// Also: signal / wait ordering over 30 rounds of one place, mapped() contents, 16 MiB puts, an
// out-of-range put refused naming the rank and the window with the group still usable, a wait
// that times out named, the windows' tags refused to send/recv.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "loopback/loopback_group.h"
#include "smddp/window.h"

namespace smddp::testing {
namespace {

using std::chrono::milliseconds;

enum class Memory { kShared, kOrdinary };

// This rank's window memory: from the shareable pool or the heap.
struct WindowMemory {
  std::shared_ptr<void> shared;
  std::vector<unsigned char> heap;
  unsigned char* data = nullptr;
  WindowMemory(Communicator& c, Memory m, size_t bytes) {
    if (m == Memory::kShared) {
      shared = c.allocateShared(bytes);
      data = static_cast<unsigned char*>(shared.get());
    } else {
      heap.resize(bytes);
      data = heap.data();
    }
    std::memset(data, 0xEE, bytes);
  }
};

size_t windowBytes(int rank, size_t base) { return base + 1000 * static_cast<size_t>(rank); }
unsigned char byteOf(int from, int to, size_t i) {
  return static_cast<unsigned char>((from * 31 + to * 7 + i) % 251);
}
// Origin `from`'s region of `to`'s window (n regions), and the put it makes there.
struct Put {
  size_t offset, bytes;
};
Put putOf(int from, int to, int n, size_t toBytes) {
  const size_t region = toBytes / n;
  std::mt19937_64 rng(1000 * from + to);
  const size_t bytes = std::max<size_t>(4, rng() % region);
  const size_t offset = from * region + rng() % (region - bytes + 1);
  return {offset, bytes};
}

// expectMapped: whether the peers' windows are mapped here (-1: some are; not checked).
void allToAllPuts(std::vector<std::unique_ptr<Communicator>>& comms, Memory memory, size_t base,
                  int expectMapped) {
  const int n = static_cast<int>(comms.size());
  runRanks(comms, [&](int rank, Communicator& c) {
    WindowMemory mem(c, memory, windowBytes(rank, base));
    auto w = c.createWindow(mem.data, windowBytes(rank, base));
    for (int to = 0; to < n; ++to) {
      ASSERT_EQ(w->bytes(to), windowBytes(to, base));
      if (to != rank && expectMapped >= 0) {
        EXPECT_EQ(w->mapped(to) != nullptr, expectMapped == 1) << to;
      }
    }
    for (int k = 0; k < n; ++k) {  // rotated, so ranks do not all target one peer at once
      const int to = (rank + k) % n;
      const Put p = putOf(rank, to, n, windowBytes(to, base));
      std::vector<unsigned char> src(p.bytes);
      for (size_t i = 0; i < p.bytes; ++i) src[i] = byteOf(rank, to, i);
      w->put(src.data(), p.bytes, to, p.offset).wait();
      w->signal(to).wait();
    }
    for (int from = 0; from < n; ++from) w->waitSignal(from, milliseconds(20000));
    const size_t mine = windowBytes(rank, base);
    std::vector<unsigned char> want(mine, 0xEE);
    for (int from = 0; from < n; ++from) {
      const Put p = putOf(from, rank, n, mine);
      for (size_t i = 0; i < p.bytes; ++i) want[p.offset + i] = byteOf(from, rank, i);
    }
    EXPECT_EQ(std::memcmp(want.data(), mem.data, mine), 0) << "rank " << rank;
    c.barrierBlocking();  // no window goes while a peer still writes into it
  });
}

TEST(Window, EveryRankPutsIntoEveryRankMapped) {
  for (int n : {1, 2, 3, 5}) {
    auto comms = makeLoopbackGroup(n);
    allToAllPuts(comms, Memory::kShared, 8192, 1);
  }
}

TEST(Window, EveryRankPutsIntoEveryRankByMessage) {
  for (int n : {2, 3, 5}) {
    auto comms = makeLoopbackGroup(n);
    allToAllPuts(comms, Memory::kOrdinary, 8192, 0);
  }
  auto hosts = makeLoopbackHosts({0, 0, 1, 1, 2});  // shareable memory, other hosts: messages
  const int n = 5;
  runRanks(hosts, [&](int rank, Communicator& c) {
    WindowMemory mem(c, Memory::kShared, 4096);
    auto w = c.createWindow(mem.data, 4096);
    for (int to = 0; to < n; ++to) {
      const bool sameHost = to / 2 == rank / 2;
      EXPECT_EQ(w->mapped(to) != nullptr, sameHost || to == rank) << rank << "->" << to;
    }
    c.barrierBlocking();
  });
  allToAllPuts(hosts, Memory::kShared, 8192, -1);
}

TEST(Window, SixteenMiBPuts) {
  for (Memory m : {Memory::kShared, Memory::kOrdinary}) {
    auto comms = makeLoopbackGroup(2);
    allToAllPuts(comms, m, 32u << 20, m == Memory::kShared ? 1 : 0);
  }
}

TEST(Window, PutsBeforeASignalAreSeenAfterTheWait) {
  for (Memory m : {Memory::kShared, Memory::kOrdinary}) {
    auto comms = makeLoopbackGroup(2);
    runRanks(comms, [&](int rank, Communicator& c) {
      WindowMemory mem(c, m, 4096);
      auto w = c.createWindow(mem.data, 4096);
      for (uint32_t round = 1; round <= 30; ++round) {
        if (rank == 0) {  // many puts, then the signal; the next round after the ack
          for (uint32_t slot = 0; slot < 64; ++slot) {
            const uint32_t v = round * 1000 + slot;
            w->put(&v, sizeof v, 1, slot * sizeof v);
          }
          w->signal(1);
          w->waitSignal(1, milliseconds(20000));
        } else {
          w->waitSignal(0, milliseconds(20000));
          for (uint32_t slot = 0; slot < 64; ++slot) {
            uint32_t got;
            std::memcpy(&got, mem.data + slot * sizeof got, sizeof got);
            ASSERT_EQ(got, round * 1000 + slot) << "round " << round;
          }
          w->signal(0);
        }
      }
    });
  }
}

TEST(Window, MappedPeersShowTheirWindows) {
  auto comms = makeLoopbackGroup(3);
  runRanks(comms, [&](int rank, Communicator& c) {
    WindowMemory mem(c, Memory::kShared, 1024);
    std::memset(mem.data, rank + 1, 1024);
    EXPECT_EQ(c.memoryStats().at("windows"), 0u);
    auto w = c.createWindow(mem.data, 1024);
    EXPECT_EQ(c.memoryStats().at("windows"), 1024u);
    c.barrierBlocking();
    for (int r = 0; r < 3; ++r) {
      const auto* p = static_cast<const unsigned char*>(w->mapped(r));
      ASSERT_NE(p, nullptr);
      for (int i = 0; i < 1024; ++i) ASSERT_EQ(p[i], r + 1);
    }
    c.barrierBlocking();
    w.reset();
    EXPECT_EQ(c.memoryStats().at("windows"), 0u);
  });
}

TEST(Window, BadCallsAreNamedAndLeaveTheGroupUsable) {
  for (Memory m : {Memory::kShared, Memory::kOrdinary}) {
    auto comms = makeLoopbackGroup(3);
    runRanks(comms, [&](int rank, Communicator& c) {
      WindowMemory mem(c, m, 1024);
      auto w = c.createWindow(mem.data, 1024);
      uint32_t v = 7;
      const std::string range = expectError(
          [&] { w->put(&v, sizeof v, (rank + 1) % 3, 1022); }, ErrorCode::kInvalidArgument);
      EXPECT_NE(range.find("rank " + std::to_string(rank) + ": window 0: put of 4 B at offset "
                           "1022 into rank " + std::to_string((rank + 1) % 3) +
                           "'s window of 1024 B: out of range"),
                std::string::npos)
          << range;
      expectError([&] { w->put(&v, sizeof v, 3, 0); }, ErrorCode::kInvalidArgument);
      const std::string late = expectError([&] { w->waitSignal((rank + 1) % 3, milliseconds(50)); },
                                           ErrorCode::kTimeout);
      EXPECT_NE(late.find("rank " + std::to_string(rank) + ": window 0: waitSignal"),
                std::string::npos)
          << late;
      expectError([&] { c.send(Buffer(&v, 1, DataType::kUInt32), (rank + 1) % 3, 0xFFFE0001u); },
                  ErrorCode::kInvalidArgument);
      std::vector<int32_t> x(5, rank), out(5);
      c.allReduceBlocking(Buffer(x.data(), 5, DataType::kInt32),
                          Buffer(out.data(), 5, DataType::kInt32), ReduceOp::kSum);
      for (int32_t o : out) EXPECT_EQ(o, 3);
    });
  }
}

}  // namespace
}  // namespace smddp::testing

namespace smddp::testing {
namespace {

TEST(Window, NoMemoryFailsEveryRankAndEstimatesRefuseWindows) {
  auto comms = makeLoopbackGroup(3);
  runRanks(comms, [&](int rank, Communicator& c) {
    std::vector<unsigned char> mem(64);
    // Rank 1 registers a null pointer: every rank fails, naming it, none waits for the others.
    const std::string why = expectError(
        [&] { c.createWindow(rank == 1 ? nullptr : mem.data(), 64); },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(why.find("rank 1 registered no memory"), std::string::npos) << why;
    auto w = c.createWindow(mem.data(), 64);
    c.beginEstimate();
    const uint32_t v = 1;
    const std::string est = expectError([&] { w->put(&v, sizeof v, 0, 0); },
                                        ErrorCode::kInvalidArgument);
    EXPECT_NE(est.find("during a time estimate"), std::string::npos) << est;
    expectError([&] { w->signal(0); }, ErrorCode::kInvalidArgument);
    c.endEstimate();
    w->put(&v, sizeof v, (rank + 1) % 3, 0);
    w->signal((rank + 1) % 3);
    w->waitSignal((rank + 2) % 3, std::chrono::milliseconds(20000));
    uint32_t got;
    std::memcpy(&got, mem.data(), sizeof got);
    EXPECT_EQ(got, 1u);
    c.barrierBlocking();
  });
}

}  // namespace
}  // namespace smddp::testing
