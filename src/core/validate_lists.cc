// SPDX-License-Identifier: Apache-2.0
// Argument checks of the list forms (validate.h): all_gather into per-rank outputs, gather into
// per-rank outputs on the root, scatter from per-rank inputs on the root. The algorithms address
// block r through args.blocks, so these forms move no more than the contiguous ones.
#include <string>
#include <vector>

#include "core/validate.h"
#include "core/validate_detail.h"

namespace smddp::core {
namespace {

using namespace check;

// `list` holds one buffer per rank, each like `one`; entry `mine` may be `one` itself (in place),
// no other overlaps it; outputs (the list, or `one` when the list is the input) overlap nothing.
// Returns the entries' addresses.
std::vector<void*> checkBlockList(const CallSite& at, CollectiveKind kind, const Buffer& one,
                                  const char* oneName, const std::vector<Buffer>& list,
                                  bool listIsOutput, int mine) {
  const char* role = listIsOutput ? "output" : "input";
  if (list.size() != static_cast<size_t>(at.size)) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         "got " + std::to_string(list.size()) + " " + role + " buffers for " +
             std::to_string(at.size) + " ranks");
  }
  std::vector<void*> blocks;
  blocks.reserve(list.size());
  for (size_t r = 0; r < list.size(); ++r) {
    const std::string name = std::string(role) + " " + std::to_string(r);
    checkBuffer(at, kind, name.c_str(), list[r]);
    checkSameType(at, kind, one, list[r]);
    if (list[r].count != one.count) {
      fail(at, kind, ErrorCode::kInvalidArgument,
           describe(name.c_str(), list[r]) + " differs in size from " + describe(oneName, one));
    }
    const bool inPlace = r == static_cast<size_t>(mine) && list[r].data == one.data;
    if (!inPlace && overlaps(one.data, one.bytes(), list[r].data, list[r].bytes())) {
      fail(at, kind, ErrorCode::kInvalidArgument, std::string(oneName) + " overlaps " + name);
    }
    for (size_t q = 0; listIsOutput && q < r; ++q) {
      if (overlaps(list[q].data, list[q].bytes(), list[r].data, list[r].bytes())) {
        fail(at, kind, ErrorCode::kInvalidArgument,
             "output " + std::to_string(q) + " and " + name + " overlap");
      }
    }
    blocks.push_back(const_cast<void*>(list[r].data));
  }
  return blocks;
}

}  // namespace

algo::CollectiveArgs checkAllGatherList(const CallSite& at, const Buffer& send,
                                        const std::vector<Buffer>& recvs) {
  const auto kind = CollectiveKind::kAllGather;
  checkBuffer(at, kind, "send", send);
  algo::CollectiveArgs args(Call::of(kind, send.dtype, send.count), send.data, nullptr);
  args.blocks = checkBlockList(at, kind, send, "send", recvs, true, at.rank);
  setMemory(at, kind, args, recvs, &send);
  return args;
}

algo::CollectiveArgs checkGatherList(const CallSite& at, const Buffer& send,
                                     const std::vector<Buffer>& recvs, int root) {
  const auto kind = CollectiveKind::kGather;
  checkRoot(at, kind, root);
  checkBuffer(at, kind, "send", send);
  algo::CollectiveArgs args(Call::of(kind, send.dtype, send.count, ReduceOp::kSum, root), send.data,
                            nullptr);
  if (at.rank == root) {
    args.blocks = checkBlockList(at, kind, send, "send", recvs, true, root);
    setMemory(at, kind, args, recvs, &send);
  } else {
    setMemory(at, kind, args, {&send});
  }
  return args;
}

algo::CollectiveArgs checkScatterList(const CallSite& at, const std::vector<Buffer>& sends,
                                      const Buffer& recv, int root) {
  const auto kind = CollectiveKind::kScatter;
  checkRoot(at, kind, root);
  checkBuffer(at, kind, "recv", recv);
  algo::CollectiveArgs args(Call::of(kind, recv.dtype, recv.count, ReduceOp::kSum, root), nullptr,
                            recv.data);
  if (at.rank == root) {
    args.blocks = checkBlockList(at, kind, recv, "recv", sends, false, root);
    setMemory(at, kind, args, sends, &recv);
  } else {
    setMemory(at, kind, args, {&recv});
  }
  return args;
}

}  // namespace smddp::core
