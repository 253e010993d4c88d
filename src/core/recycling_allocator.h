// SPDX-License-Identifier: Apache-2.0
// RecyclingAllocator: an allocator for std::allocate_shared that keeps freed blocks of one size in
// a small per-thread list, so a collective's RequestState (with its control block) costs no
// malloc/free on the synchronous path: the thread that posts and waits frees the block it takes
// next. A block freed on another thread (a torch callback thread dropping a handle) joins that
// thread's list, so lists stay per-thread and need no atomics.
// Invariants: at most kKeep blocks per thread and size are kept (the rest go back to the heap);
// a thread's kept blocks are freed when it exits; a block freed during or after that exit goes
// straight back to the heap.
#pragma once

#include <cstddef>
#include <new>

namespace smddp::core {

namespace recycling {

struct FreeBlock {
  FreeBlock* next;
};

// One list per block size and thread. The list itself is trivially destructible, so reaching it
// costs no per-access initialisation check; a Reaper, touched once per thread when the list
// first keeps a block, frees the kept blocks at thread exit and marks the list exited.
template <size_t Bytes>
struct ThreadList {
  static constexpr size_t kKeep = 32;
  FreeBlock* head;
  size_t kept;
  bool reaping;  // a Reaper is registered for this thread
  bool exited;

  struct Reaper {
    bool armed = false;
    ~Reaper() {
      ThreadList& l = list;
      l.exited = true;
      while (l.head != nullptr) {
        FreeBlock* b = l.head;
        l.head = b->next;
        ::operator delete(b);
      }
      l.kept = 0;
    }
  };
  static thread_local ThreadList list;
  static thread_local Reaper reaper;
};

template <size_t Bytes>
thread_local ThreadList<Bytes> ThreadList<Bytes>::list{nullptr, 0, false, false};
template <size_t Bytes>
thread_local typename ThreadList<Bytes>::Reaper ThreadList<Bytes>::reaper;

}  // namespace recycling

template <class T>
struct RecyclingAllocator {
  using value_type = T;
  static_assert(sizeof(T) >= sizeof(recycling::FreeBlock), "a block must hold a list link");
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "over-aligned types are not kept");
  using List = recycling::ThreadList<sizeof(T)>;

  RecyclingAllocator() = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>&) {}  // NOLINT: rebinding converts implicitly

  T* allocate(size_t n) {
    if (n == 1 && List::list.head != nullptr) {
      recycling::FreeBlock* b = List::list.head;
      List::list.head = b->next;
      --List::list.kept;
      return reinterpret_cast<T*>(b);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }

  void deallocate(T* p, size_t n) {
    List& l = List::list;
    if (n == 1 && !l.exited && l.kept < List::kKeep) {
      if (!l.reaping) {
        l.reaping = true;
        List::reaper.armed = true;  // constructs it, which registers its destructor
      }
      auto* b = reinterpret_cast<recycling::FreeBlock*>(p);
      b->next = l.head;
      l.head = b;
      ++l.kept;
      return;
    }
    ::operator delete(p);
  }

  template <class U>
  bool operator==(const RecyclingAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const RecyclingAllocator<U>&) const {
    return false;
  }
};

}  // namespace smddp::core
