// SPDX-License-Identifier: Apache-2.0
// Mailbox: one rank's side of the arena's mailboxes (layout and rules in segment.h): letters it
// writes to each peer and reads from each peer, in order per ordered pair, with no system call
// and no lock. A letter is a whole message of up to Segment::mailPayload() bytes, or only the
// header of a larger one whose payload travels through libfabric (a "carried" letter: its carry
// number, unique per ordered pair, is the libfabric tag). Matching letters to receives is the
// caller's (core/point_to_point.h); this class keeps only the counters.
//
// Threading: one thread at a time (the caller's lock). Bounded: send() never waits (false when
// the peer's mailbox is full) and peek() never waits (false when no letter is there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/arena/segment.h"

namespace smddp::algo::arena {

class Mailbox {
 public:
  explicit Mailbox(Segment& segment);

  // Largest message that travels in a letter (the rest are carried).
  size_t letterBytes() const { return segment_.mailPayload(); }

  // Writes the next letter to `to`: `bytes` of `data` when they fit a letter, else the header of
  // a carried message (returns its carry through `carry`; 0 for a whole one). False, with nothing
  // written, when `to` has not read enough of this rank's letters.
  bool send(int to, uint32_t tag, const void* data, uint64_t bytes, uint32_t& carry);

  struct Letter {
    uint32_t tag = 0;
    uint32_t carry = 0;  // 0: data holds the message
    uint64_t bytes = 0;
    const unsigned char* data = nullptr;  // valid until release(from)
  };
  // The next letter from `from`, if it was written.
  bool peek(int from, Letter& letter);
  // Done with the letter peek(from) returned: its entry may be written again.
  void release(int from);

 private:
  Segment& segment_;
  const int rank_;
  std::vector<uint64_t> sent_;   // per receiver: letters written
  std::vector<uint64_t> room_;   // per receiver: letters it may hold, as last read
  std::vector<uint64_t> read_;   // per sender: letters read
  std::vector<uint32_t> carry_;  // per receiver: carried letters written
};

}  // namespace smddp::algo::arena
