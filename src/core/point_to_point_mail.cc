// SPDX-License-Identifier: Apache-2.0
// PointToPoint (point_to_point.h), the mailbox path: letters written in post order per receiver,
// letters read from every mailbox and matched to the posted receives (the first that fits, in
// post order) or kept as unexpected, and the transport half of carried messages.
#include <cstring>
#include <exception>
#include <iterator>

#include "algorithms/arena/mailbox.h"
#include "core/point_to_point.h"

namespace smddp::core {
namespace {

using transport::OpState;

bool fits(int peer, uint32_t tag, int from, uint64_t wantTag) {
  return (peer == transport::kAnyPeer || peer == from) && wantTag == tag;
}

}  // namespace

bool PointToPoint::sendNow(Pending& p) {
  return queuedLetters_[static_cast<size_t>(p.op.peer)] == 0 &&
         p.op.bytes <= mailbox_->letterBytes() && writeLetter(p);
}

bool PointToPoint::takeNow(Pending& p) {
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (!fits(p.op.peer, it->tag, it->from, p.op.tag)) continue;
    if (it->carry != 0) return false;  // its transport half needs the operation in the list
    deliver(p, it->from, 0, it->bytes, it->data.data());
    unexpected_.erase(it);
    return true;
  }
  return false;
}

void PointToPoint::postLetterSend(Pending& p) {
  p.path = Path::kLetterOut;
  const size_t to = static_cast<size_t>(p.op.peer);
  if (queuedLetters_[to] == 0 && writeLetter(p)) return;
  ++queuedLetters_[to];  // behind earlier letters to the same rank
  ++queuedTotal_;
}

void PointToPoint::postLetterRecv(Pending& p) {
  p.path = Path::kLetterIn;
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (!fits(p.op.peer, it->tag, it->from, p.op.tag)) continue;
    deliver(p, it->from, it->carry, it->bytes, it->data.data());
    unexpected_.erase(it);
    return;
  }
}

bool PointToPoint::writeLetter(Pending& p) {
  uint32_t carry = 0;
  if (!mailbox_->send(p.op.peer, static_cast<uint32_t>(p.op.tag), p.op.buffer, p.op.bytes, carry)) {
    return false;
  }
  if (carry == 0) {
    p.op.state = OpState::kDone;
  } else {
    postCarried(p, p.op.peer, carry);
  }
  return true;
}

bool PointToPoint::pushLetters() {
  bool any = false;
  std::vector<char> full(queuedLetters_.size(), 0);  // receivers found full in this pass
  for (Pending& p : inflight_) {
    if (queuedTotal_ == 0) break;
    if (p.path != Path::kLetterOut || p.op.finished()) continue;
    const size_t to = static_cast<size_t>(p.op.peer);
    if (full[to] != 0) continue;
    if (!writeLetter(p)) {
      full[to] = 1;
      continue;
    }
    --queuedLetters_[to];
    --queuedTotal_;
    any = true;
  }
  return any;
}

bool PointToPoint::readLetters() {
  bool any = false;
  const int size = static_cast<int>(queuedLetters_.size());
  algo::arena::Mailbox::Letter letter;
  for (int from = 0; from < size; ++from) {
    if (from == rank_) continue;
    // At most a mailbox's depth per pass, so that a fast sender cannot keep this loop going.
    for (uint64_t k = 0; k < algo::arena::Segment::kMailDepth && mailbox_->peek(from, letter);
         ++k) {
      any = true;
      auto match = inflight_.begin();
      while (match != inflight_.end() && (match->path != Path::kLetterIn || match->op.finished() ||
                                          !fits(match->op.peer, letter.tag, from, match->op.tag))) {
        ++match;
      }
      if (match != inflight_.end()) {
        deliver(*match, from, letter.carry, letter.bytes, letter.data);
      } else {
        Unexpected& u = unexpected_.emplace_back();
        u.from = from;
        u.tag = letter.tag;
        u.carry = letter.carry;
        u.bytes = letter.bytes;
        if (letter.carry == 0) u.data.assign(letter.data, letter.data + letter.bytes);
      }
      mailbox_->release(from);
    }
  }
  return any;
}

void PointToPoint::deliver(Pending& p, int from, uint32_t carry, uint64_t bytes,
                           const unsigned char* data) {
  p.op.source = from;
  if (carry != 0) {
    postCarried(p, from, carry);
    return;
  }
  // A message of another size is not copied: the receive fails with kMismatch (received()).
  if (bytes == p.op.bytes && bytes > 0) std::memcpy(p.op.buffer, data, bytes);
  p.op.received = bytes;
  p.op.state = OpState::kDone;
}

void PointToPoint::postCarried(Pending& p, int peer, uint32_t carry) {
  p.path = Path::kFabric;
  p.op.peer = peer;
  p.op.tag = carry;
  fabricBusy_ = true;
  try {
    transport_->post(p.op);
  } catch (const std::exception& e) {  // the letter is out: fail this operation, not the post
    p.op.state = OpState::kError;
    p.op.error = e.what();
  }
}

}  // namespace smddp::core
