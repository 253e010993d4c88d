// SPDX-License-Identifier: Apache-2.0
// Argument checks of all_to_all and all_to_allv (validate.h). Outputs never alias inputs: a
// piece received may arrive before the piece that shares its memory was sent.
#include <algorithm>
#include <string>
#include <vector>

#include "core/validate.h"
#include "core/validate_detail.h"

namespace smddp::core {
namespace {

using namespace check;

struct Span {
  uintptr_t begin;
  uintptr_t end;
  bool output;
  size_t index;  // rank of the piece
};

// Outputs overlap nothing (another output or any input); inputs may overlap each other. One sort
// and a sweep: among spans sorted by start, one that begins before the furthest end seen so far
// overlaps the span holding that end.
void checkDisjointOutputs(const CallSite& at, CollectiveKind kind, const std::vector<Buffer>& sends,
                          const std::vector<Buffer>& recvs) {
  std::vector<Span> spans;
  spans.reserve(sends.size() + recvs.size());
  auto add = [&spans](const std::vector<Buffer>& list, bool output) {
    for (size_t r = 0; r < list.size(); ++r) {
      const auto b = reinterpret_cast<uintptr_t>(list[r].data);
      if (list[r].bytes() > 0) spans.push_back({b, b + list[r].bytes(), output, r});
    }
  };
  add(sends, false);
  add(recvs, true);
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  const Span* furthest = nullptr;
  for (const Span& s : spans) {
    if (furthest != nullptr && s.begin < furthest->end && (s.output || furthest->output)) {
      auto name = [](const Span& x) {
        return std::string(x.output ? "recv piece " : "send piece ") + std::to_string(x.index);
      };
      fail(at, kind, ErrorCode::kInvalidArgument,
           name(*furthest) + " and " + name(s) + " overlap (outputs must not share memory)");
    }
    if (furthest == nullptr || s.end > furthest->end) furthest = &s;
  }
}

}  // namespace

algo::CollectiveArgs checkAllToAll(const CallSite& at, const Buffer& send, const Buffer& recv) {
  const auto kind = CollectiveKind::kAllToAll;
  checkBuffer(at, kind, "send", send);
  checkBuffer(at, kind, "recv", recv);
  checkSameType(at, kind, send, recv);
  const auto n = static_cast<size_t>(at.size);
  if (send.count != recv.count || send.count % n != 0) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         describe("send", send) + " and " + describe("recv", recv) +
             " must have one count, a multiple of the group size " + std::to_string(n) +
             " (use all_to_allv for uneven blocks)");
  }
  if (overlaps(send.data, send.bytes(), recv.data, recv.bytes())) {
    fail(at, kind, ErrorCode::kInvalidArgument, "send and recv overlap (no in place form)");
  }
  algo::CollectiveArgs args(Call::of(kind, send.dtype, send.count / n), send.data, recv.data);
  setMemory(at, kind, args, {&send, &recv});
  return args;
}

algo::CollectiveArgs checkAllToAllV(const CallSite& at, const std::vector<Buffer>& sends,
                                    const std::vector<Buffer>& recvs) {
  const auto kind = CollectiveKind::kAllToAllV;
  const auto n = static_cast<size_t>(at.size);
  if (sends.size() != n || recvs.size() != n) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         "got " + std::to_string(sends.size()) + " send and " + std::to_string(recvs.size()) +
             " recv pieces for " + std::to_string(n) + " ranks");
  }
  algo::CollectiveArgs args(Call::of(kind, sends[0].dtype, 0), nullptr, nullptr);
  args.blocks.resize(2 * n);
  args.counts.resize(2 * n);
  for (size_t r = 0; r < n; ++r) {
    const std::string s = "send piece " + std::to_string(r);
    const std::string v = "recv piece " + std::to_string(r);
    checkBuffer(at, kind, s.c_str(), sends[r]);
    checkBuffer(at, kind, v.c_str(), recvs[r]);
    checkSameType(at, kind, sends[0], sends[r]);
    checkSameType(at, kind, sends[0], recvs[r]);
    args.blocks[r] = sends[r].data;
    args.blocks[n + r] = recvs[r].data;
    args.counts[r] = sends[r].count;
    args.counts[n + r] = recvs[r].count;
  }
  const size_t self = static_cast<size_t>(at.rank);
  if (sends[self].count != recvs[self].count) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         "this rank sends itself " + std::to_string(sends[self].count) + " elements but expects " +
             std::to_string(recvs[self].count));
  }
  checkDisjointOutputs(at, kind, sends, recvs);
  setMemory(at, kind, args, sends, &recvs[0]);
  setMemory(at, kind, args, recvs, &sends[0]);
  return args;
}

std::vector<Buffer> piecesOf(const CallSite& at, const char* name, const Buffer& whole,
                             const std::vector<size_t>& counts,
                             const std::vector<size_t>& offsets) {
  const auto kind = CollectiveKind::kAllToAllV;
  const auto n = static_cast<size_t>(at.size);
  checkBuffer(at, kind, name, whole);
  if (counts.size() != n || offsets.size() != n) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         std::string(name) + ": got " + std::to_string(counts.size()) + " counts and " +
             std::to_string(offsets.size()) + " offsets for " + std::to_string(n) + " ranks");
  }
  std::vector<Buffer> pieces;
  pieces.reserve(n);
  const size_t es = dataTypeSize(whole.dtype);
  for (size_t r = 0; r < n; ++r) {
    if (offsets[r] > whole.count || counts[r] > whole.count - offsets[r]) {
      fail(at, kind, ErrorCode::kInvalidArgument,
           std::string(name) + " piece " + std::to_string(r) + " [" + std::to_string(offsets[r]) +
               ", +" + std::to_string(counts[r]) + ") lies outside " + describe(name, whole));
    }
    pieces.emplace_back(static_cast<unsigned char*>(whole.data) + offsets[r] * es, counts[r],
                        whole.dtype, whole.memory, whole.device, whole.stream);
  }
  return pieces;
}

}  // namespace smddp::core
