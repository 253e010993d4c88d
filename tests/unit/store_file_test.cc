// SPDX-License-Identifier: Apache-2.0
// FileStore unit tests: set/get, bounded get with a clear timeout message, binary values and odd
// keys, and add() atomic across threads and across forked processes (exact closed-form totals).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "mp/fork_ranks.h"
#include "smddp/error.h"
#include "smddp/store.h"

namespace smddp {
namespace {

using std::chrono::milliseconds;

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::makeTempDir("smddp-store");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { test::removeTree(dir_); }
  std::string dir_;
};

TEST_F(FileStoreTest, SetGetOverwrite) {
  auto store = makeFileStore(dir_ + "/nested/dir");
  store->set("a", "1");
  EXPECT_EQ(store->get("a", milliseconds(100)), "1");
  store->set("a", "two");
  EXPECT_EQ(store->get("a", milliseconds(100)), "two");
  store->set("empty", "");
  EXPECT_EQ(store->get("empty", milliseconds(100)), "");
  // A second store object on the same directory (another rank) sees the same keys.
  EXPECT_EQ(makeFileStore(dir_ + "/nested/dir")->get("a", milliseconds(100)), "two");
}

TEST_F(FileStoreTest, GetTimesOutWithKeyAndDuration) {
  auto store = makeFileStore(dir_);
  auto start = std::chrono::steady_clock::now();
  try {
    store->get("missing/key", milliseconds(120));
    FAIL() << "get of an absent key returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kStore);
    EXPECT_NE(std::string(e.what()).find("key 'missing/key' not set after 120 ms"),
              std::string::npos)
        << e.what();
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, milliseconds(120));
  EXPECT_LT(elapsed, milliseconds(2000));
}

TEST_F(FileStoreTest, GetWaitsForALateSet) {
  auto store = makeFileStore(dir_);
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    store->set("late", "value");
  });
  EXPECT_EQ(store->get("late", milliseconds(5000)), "value");
  writer.join();
}

TEST_F(FileStoreTest, BinaryValuesAndOddKeys) {
  auto store = makeFileStore(dir_);
  std::string value;
  for (int i = 0; i < 512; ++i) value += static_cast<char>(i & 0xff);  // includes NULs
  const std::vector<std::string> keys = {"a/b/c", ".", "..", "%41", "A", "with space",
                                         std::string("nul\0in", 6)};
  for (size_t i = 0; i < keys.size(); ++i) store->set(keys[i], value + std::to_string(i));
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(store->get(keys[i], milliseconds(100)), value + std::to_string(i)) << "key " << i;
  }
}

TEST_F(FileStoreTest, AddFromManyThreadsIsExact) {
  auto store = makeFileStore(dir_);
  constexpr int kThreads = 8, kAdds = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAdds; ++i) store->add("counter", t + 1);
    });
  }
  for (auto& th : threads) th.join();
  // sum over t of kAdds * (t + 1)
  EXPECT_EQ(store->add("counter", 0), kAdds * kThreads * (kThreads + 1) / 2);
  EXPECT_EQ(store->get("counter", milliseconds(100)), std::to_string(kAdds * 36));
  EXPECT_EQ(store->add("fresh", -5), -5);
}

TEST_F(FileStoreTest, AddFromForkedProcessesIsExact) {
  constexpr int kProcs = 4, kAdds = 50;
  std::string dir = dir_;
  std::string report = test::forkRanks(kProcs, milliseconds(30000), [dir](int rank) {
    auto store = makeFileStore(dir);
    for (int i = 0; i < kAdds; ++i) store->add("counter", rank + 1);
    return 0;
  });
  ASSERT_EQ(report, "");
  EXPECT_EQ(makeFileStore(dir_)->add("counter", 0), kAdds * kProcs * (kProcs + 1) / 2);
}

// add(key, 0) reads without the lock: while another thread adds, every poll sees a whole value,
// never less than the one before and never more than the adds so far.
TEST_F(FileStoreTest, PolledReadsSeeWholeGrowingValues) {
  auto store = makeFileStore(dir_);
  constexpr int kAdds = 300;
  std::atomic<int64_t> added{0};
  std::thread adder([&] {
    for (int i = 0; i < kAdds; ++i) added.store(store->add("counter", 1));
  });
  int64_t last = 0;
  int polls = 0;
  // ADD_FAILURE and break, not ASSERT: the adder must be joined. Bounded: a lost add fails here.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (last < kAdds) {
    const int64_t seen = store->add("counter", 0);
    const int64_t bound = added.load() + 1;
    if (seen < last || seen > bound) {
      ADD_FAILURE() << "after " << polls << " polls: read " << seen << ", before " << last
                    << ", at most " << bound << " expected";
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the polled value stopped at " << seen << " of " << kAdds;
      break;
    }
    last = seen;
    ++polls;
  }
  adder.join();
  EXPECT_EQ(store->add("absent", 0), 0);  // a missing key is created as 0
  EXPECT_EQ(store->get("absent", milliseconds(100)), "0");
}

TEST_F(FileStoreTest, AddOnNonIntegerFails) {
  auto store = makeFileStore(dir_);
  store->set("text", "abc");
  EXPECT_THROW(store->add("text", 1), Error);
  EXPECT_THROW(store->add("text", 0), Error);  // the lock-free read checks it too
}

TEST_F(FileStoreTest, FileStoreHasNoTcpPort) { EXPECT_EQ(tcpStorePort(*makeFileStore(dir_)), -1); }

}  // namespace
}  // namespace smddp
