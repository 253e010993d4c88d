// BlockTable: where each rank's block of an all_gather output lives. Either one output buffer
// (block r at base + r * stride; nothing is allocated per call) or one pointer per rank (a list of
// outputs, copied so that the caller's list need not outlive the call).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace smddp::algo {

class BlockTable {
 public:
  BlockTable() = default;
  static BlockTable strided(void* base, size_t stride) {
    BlockTable t;
    t.base_ = static_cast<char*>(base);
    t.stride_ = stride;
    return t;
  }
  static BlockTable perRank(std::vector<void*> blocks) {
    BlockTable t;
    t.list_ = std::move(blocks);
    return t;
  }

  void* operator[](size_t r) const { return list_.empty() ? base_ + r * stride_ : list_[r]; }
  // The per-rank pointers of the list form; nullptr for the strided form.
  void* const* list() const { return list_.empty() ? nullptr : list_.data(); }
  // The output buffer of the strided form; nullptr for the list form.
  void* base() const { return list_.empty() ? base_ : nullptr; }

 private:
  char* base_ = nullptr;
  size_t stride_ = 0;
  std::vector<void*> list_;
};

}  // namespace smddp::algo
