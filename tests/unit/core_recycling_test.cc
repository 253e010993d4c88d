// SPDX-License-Identifier: Apache-2.0
// RecyclingAllocator: freed blocks come back to the same thread's next allocation, at most kKeep
// are kept, blocks freed on another thread join that thread's list, and shared_ptrs built with it
// behave like make_shared's (construction, destruction, custom sizes).
#include "core/recycling_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

namespace smddp::core {
namespace {

struct Item {
  static std::atomic<int> live;
  int value;
  char pad[120];
  explicit Item(int v) : value(v) { ++live; }
  ~Item() { --live; }
};
std::atomic<int> Item::live{0};

std::shared_ptr<Item> make(int v) {
  return std::allocate_shared<Item>(RecyclingAllocator<Item>(), v);
}

TEST(RecyclingAllocator, ReusesTheBlockThisThreadFreed) {
  const void* first = nullptr;
  {
    auto a = make(1);
    first = a.get();
  }
  auto b = make(2);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(b->value, 2);
  EXPECT_EQ(Item::live, 1);
  b.reset();
  EXPECT_EQ(Item::live, 0);
}

TEST(RecyclingAllocator, KeepsAtMostKKeepBlocks) {
  using Raw = RecyclingAllocator<std::array<char, 200>>;
  Raw alloc;
  std::vector<std::array<char, 200>*> blocks;
  const size_t keep = Raw::List::kKeep;
  for (size_t i = 0; i < keep + 10; ++i) blocks.push_back(alloc.allocate(1));
  const size_t before = Raw::List::list.kept;
  for (auto* b : blocks) alloc.deallocate(b, 1);
  EXPECT_EQ(Raw::List::list.kept, keep);
  EXPECT_EQ(before, 0u) << "the allocations drained the kept blocks";
  // The kept ones come back, distinct, and the list drains to empty.
  std::set<void*> again;
  for (size_t i = 0; i < keep; ++i) again.insert(alloc.allocate(1));
  EXPECT_EQ(again.size(), keep);
  EXPECT_EQ(Raw::List::list.kept, 0u);
  for (void* b : again) alloc.deallocate(static_cast<std::array<char, 200>*>(b), 1);
}

TEST(RecyclingAllocator, ArraysBypassTheList) {
  RecyclingAllocator<std::array<char, 72>> alloc;
  auto* many = alloc.allocate(4);
  many[3][71] = 'x';  // the whole span is usable
  const size_t kept = decltype(alloc)::List::list.kept;
  alloc.deallocate(many, 4);
  EXPECT_EQ(decltype(alloc)::List::list.kept, kept);
}

TEST(RecyclingAllocator, BlocksFreedOnAnotherThreadStayThere) {
  using Block = std::array<char, 136>;
  RecyclingAllocator<Block> alloc;
  using List = RecyclingAllocator<Block>::List;
  std::vector<Block*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(alloc.allocate(1));
  const size_t keptHere = List::list.kept;
  size_t keptThere = 0;
  Block* servedThere = nullptr;
  std::thread other([&] {
    for (Block* b : blocks) alloc.deallocate(b, 1);  // the other thread's list takes them
    keptThere = List::list.kept;
    servedThere = alloc.allocate(1);  // and serves them back there
    alloc.deallocate(servedThere, 1);
  });
  other.join();
  EXPECT_EQ(keptThere, 8u);
  EXPECT_EQ(List::list.kept, keptHere);
  EXPECT_NE(std::find(blocks.begin(), blocks.end(), servedThere), blocks.end());
}

TEST(RecyclingAllocator, ManyThreadsAllocateAndExit) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      std::vector<std::shared_ptr<Item>> mine;
      for (int i = 0; i < 100; ++i) mine.push_back(make(t * 1000 + i));
      for (int i = 0; i < 100; ++i) EXPECT_EQ(mine[static_cast<size_t>(i)]->value, t * 1000 + i);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(Item::live, 0);
}

}  // namespace
}  // namespace smddp::core
