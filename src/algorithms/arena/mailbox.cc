// SPDX-License-Identifier: Apache-2.0
// Mailbox (mailbox.h): writing and reading letters by the rules of segment.h.
#include "algorithms/arena/mailbox.h"

#include <atomic>
#include <cstring>

namespace smddp::algo::arena {

Mailbox::Mailbox(Segment& segment)
    : segment_(segment),
      rank_(segment.rank()),
      sent_(static_cast<size_t>(segment.size()), 0),
      room_(static_cast<size_t>(segment.size()), Segment::kMailDepth),
      read_(static_cast<size_t>(segment.size()), 0),
      carry_(static_cast<size_t>(segment.size()), 0) {}

bool Mailbox::send(int to, uint32_t tag, const void* data, uint64_t bytes, uint32_t& carry) {
  const size_t t = static_cast<size_t>(to);
  const uint64_t letter = sent_[t];
  if (letter >= room_[t]) {  // look again how far `to` has read
    room_[t] = segment_.mailRead(to, rank_).load(std::memory_order_acquire) + Segment::kMailDepth;
    if (letter >= room_[t]) return false;
  }
  Segment::MailHeader& h = segment_.mailHeader(rank_, to, letter);
  const bool whole = bytes <= letterBytes();
  carry = 0;
  if (whole) {
    if (bytes > 0) std::memcpy(segment_.mailData(rank_, to, letter), data, bytes);
  } else {
    carry = ++carry_[t];
    if (carry == 0) carry = ++carry_[t];  // 0 means "whole"; wraps after 2^32 carried letters
  }
  h.bytes.store(bytes, std::memory_order_relaxed);
  h.tag.store(tag, std::memory_order_relaxed);
  h.carry.store(carry, std::memory_order_relaxed);
  h.stamp.store(letter + 1, std::memory_order_release);
  sent_[t] = letter + 1;
  return true;
}

bool Mailbox::peek(int from, Letter& out) {
  const uint64_t letter = read_[static_cast<size_t>(from)];
  Segment::MailHeader& h = segment_.mailHeader(from, rank_, letter);
  if (h.stamp.load(std::memory_order_acquire) != letter + 1) return false;
  out.bytes = h.bytes.load(std::memory_order_relaxed);
  out.tag = h.tag.load(std::memory_order_relaxed);
  out.carry = h.carry.load(std::memory_order_relaxed);
  out.data = segment_.mailData(from, rank_, letter);
  return true;
}

void Mailbox::release(int from) {
  const uint64_t done = ++read_[static_cast<size_t>(from)];
  segment_.mailRead(rank_, from).store(done, std::memory_order_release);
}

}  // namespace smddp::algo::arena
