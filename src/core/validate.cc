// SPDX-License-Identifier: Apache-2.0
// Argument checks. Overlap rule: a collective is either exactly in place (the documented aliasing)
// or its input and output do not overlap at all; partial overlap would silently corrupt data.
#include "core/validate.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/logging.h"
#include "core/validate_detail.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::core::check {

void fail(const CallSite& at, CollectiveKind kind, ErrorCode code, const std::string& what) {
  throw Error(code, errorHead(at.rank, at.size, hostName()) + ": " + toString(kind) + ": " + what);
}

std::string describe(const char* name, const Buffer& b) {
  return std::string(name) + " (" + toString(b.dtype) + " x " + std::to_string(b.count) + ")";
}

void rejectBuffer(const CallSite& at, CollectiveKind kind, const char* name, const Buffer& b) {
  if (b.data == nullptr && b.count > 0) {
    fail(at, kind, ErrorCode::kInvalidArgument, std::string(name) + " is a null pointer with " +
                                                    std::to_string(b.count) + " elements");
  }
  if (static_cast<int>(b.dtype) >= kNumDataTypes) {
    fail(at, kind, ErrorCode::kInvalidArgument, std::string(name) + " has an invalid dtype");
  }
  if (static_cast<unsigned>(b.memory) > static_cast<unsigned>(MemoryType::kCuda)) {
    fail(at, kind, ErrorCode::kInvalidArgument, std::string(name) + " has an invalid memory kind");
  }
  fail(at, kind, ErrorCode::kInternal, std::string(name) + " failed a check that names no reason");
}

namespace {

std::string whereIs(const Buffer& b) {
  if (b.memory == MemoryType::kHost) return "host memory";
  char stream[32];
  std::snprintf(stream, sizeof(stream), "%p", b.stream);
  return "CUDA memory of device " + std::to_string(b.device) + " on stream " + stream;
}

bool sameMemory(const Buffer& a, const Buffer& b) {
  return a.memory == b.memory &&
         (a.memory == MemoryType::kHost || (a.device == b.device && a.stream == b.stream));
}

}  // namespace

void setMemory(const CallSite& at, CollectiveKind kind, algo::CollectiveArgs& args,
               std::initializer_list<const Buffer*> used) {
  const Buffer* first = nullptr;
  int index = 0;
  for (const Buffer* b : used) {
    if (first == nullptr) {
      first = b;
    } else if (!sameMemory(*first, *b)) {
      fail(at, kind, ErrorCode::kInvalidArgument,
           "buffer " + std::to_string(index) + " is " + whereIs(*b) + " but buffer 0 is " +
               whereIs(*first) + ": one call uses one kind of memory, one device, one stream");
    }
    ++index;
  }
  if (first != nullptr && first->memory == MemoryType::kCuda) {
    args.memory = MemoryType::kCuda;
    args.device = first->device;
    args.stream = first->stream;
  }
}

void setMemory(const CallSite& at, CollectiveKind kind, algo::CollectiveArgs& args,
               const std::vector<Buffer>& list, const Buffer* also) {
  const Buffer& first = also != nullptr ? *also : list.front();
  for (size_t i = 0; i < list.size(); ++i) {
    if (!sameMemory(first, list[i])) {
      fail(at, kind, ErrorCode::kInvalidArgument,
           "list entry " + std::to_string(i) + " is " + whereIs(list[i]) + " but " +
               (also != nullptr ? "the other buffer" : "entry 0") + " is " + whereIs(first) +
               ": one call uses one kind of memory, one device, one stream");
    }
  }
  setMemory(at, kind, args, {&first});
}

void checkSameType(const CallSite& at, CollectiveKind kind, const Buffer& send, const Buffer& recv) {
  if (send.dtype != recv.dtype) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         "send is " + std::string(toString(send.dtype)) + " but recv is " + toString(recv.dtype));
  }
}

void checkRoot(const CallSite& at, CollectiveKind kind, int root) {
  if (root < 0 || root >= at.size) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         "root " + std::to_string(root) + " is out of range [0, " + std::to_string(at.size) + ")");
  }
}

}  // namespace smddp::core::check

namespace smddp::core {
namespace {

using namespace check;

// One input and one output (each already checked) of the same shape: in place (same pointer) or
// disjoint.
[[gnu::cold, gnu::noinline]] void rejectSendRecvPair(const CallSite& at, CollectiveKind kind,
                                                     const Buffer& send, const Buffer& recv) {
  checkSameType(at, kind, send, recv);
  if (send.count != recv.count) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         describe("send", send) + " and " + describe("recv", recv) + " differ in size");
  }
  fail(at, kind, ErrorCode::kInvalidArgument, "send and recv overlap without being the same buffer");
}

inline void checkSendRecvPair(const CallSite& at, CollectiveKind kind, const Buffer& send,
                              const Buffer& recv) {
  const bool valid = send.dtype == recv.dtype && send.count == recv.count &&
                     (send.data == recv.data ||
                      !overlaps(send.data, send.bytes(), recv.data, recv.bytes()));
  if (!valid) rejectSendRecvPair(at, kind, send, recv);
}

// `whole` holds size blocks of `block`'s shape; `block` is either the block of rank `rank` in
// it (in place) or disjoint from it.
void checkBlockOf(const CallSite& at, CollectiveKind kind, const char* wholeName,
                  const Buffer& whole, const char* blockName, const Buffer& block) {
  if (whole.dtype != block.dtype) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         std::string(blockName) + " is " + toString(block.dtype) + " but " + wholeName + " is " +
             toString(whole.dtype));
  }
  const size_t n = static_cast<size_t>(at.size);
  if (whole.count != block.count * n) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         describe(wholeName, whole) + " must hold size x " + blockName +
             " count = " + std::to_string(n) + " x " + std::to_string(block.count) + " elements");
  }
  const void* mine =
      static_cast<const unsigned char*>(whole.data) + block.bytes() * static_cast<size_t>(at.rank);
  if (block.data != mine && overlaps(whole.data, whole.bytes(), block.data, block.bytes())) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         std::string(blockName) + " overlaps " + wholeName +
             " but is not this rank's block of it (in place means " + blockName +
             " == " + wholeName + " + rank * " + blockName + " bytes)");
  }
}

void checkOp(const CallSite& at, CollectiveKind kind, DataType dtype, ReduceOp op) {
  if (static_cast<int>(op) >= kNumReduceOps) {
    fail(at, kind, ErrorCode::kInvalidArgument, "invalid reduction op");
  }
  if (!reduce::supported(dtype, op)) {
    fail(at, kind, ErrorCode::kUnsupported,
         std::string("op ") + toString(op) + " is not supported for " + toString(dtype) + " (" +
             reductionRefusal(dtype, op) + ")");
  }
}

}  // namespace

algo::CollectiveArgs checkAllReduce(const CallSite& at, const Buffer& send, const Buffer& recv,
                                    ReduceOp op) {
  const auto kind = CollectiveKind::kAllReduce;
  checkBuffer(at, kind, "send", send);
  checkBuffer(at, kind, "recv", recv);
  checkSendRecvPair(at, kind, send, recv);
  checkOp(at, kind, send.dtype, op);
  algo::CollectiveArgs args(Call::of(kind, send.dtype, send.count, op), send.data, recv.data);
  setMemory(at, kind, args, {&send, &recv});
  return args;
}

algo::CollectiveArgs checkBroadcast(const CallSite& at, const Buffer& send, const Buffer& recv,
                                    int root) {
  const auto kind = CollectiveKind::kBroadcast;
  checkRoot(at, kind, root);
  checkBuffer(at, kind, "recv", recv);
  if (at.rank == root) {
    checkBuffer(at, kind, "send", send);
    checkSendRecvPair(at, kind, send, recv);
  }
  algo::CollectiveArgs args(Call::of(kind, recv.dtype, recv.count, ReduceOp::kSum, root),
                            at.rank == root ? send.data : recv.data, recv.data);
  if (at.rank == root) {
    setMemory(at, kind, args, {&send, &recv});
  } else {
    setMemory(at, kind, args, {&recv});
  }
  return args;
}

algo::CollectiveArgs checkAllGather(const CallSite& at, const Buffer& send, const Buffer& recv) {
  const auto kind = CollectiveKind::kAllGather;
  checkBuffer(at, kind, "send", send);
  checkBuffer(at, kind, "recv", recv);
  checkBlockOf(at, kind, "recv", recv, "send", send);
  algo::CollectiveArgs args(Call::of(kind, send.dtype, send.count), send.data, recv.data);
  setMemory(at, kind, args, {&send, &recv});
  return args;
}

algo::CollectiveArgs checkReduceScatter(const CallSite& at, const Buffer& send, const Buffer& recv,
                                        ReduceOp op) {
  const auto kind = CollectiveKind::kReduceScatter;
  checkBuffer(at, kind, "send", send);
  checkBuffer(at, kind, "recv", recv);
  checkBlockOf(at, kind, "send", send, "recv", recv);
  checkOp(at, kind, send.dtype, op);
  algo::CollectiveArgs args(Call::of(kind, recv.dtype, recv.count, op), send.data, recv.data);
  setMemory(at, kind, args, {&send, &recv});
  return args;
}

algo::CollectiveArgs checkReduce(const CallSite& at, const Buffer& send, const Buffer& recv,
                                 ReduceOp op, int root) {
  const auto kind = CollectiveKind::kReduce;
  checkRoot(at, kind, root);
  checkBuffer(at, kind, "send", send);
  if (at.rank == root) {
    checkBuffer(at, kind, "recv", recv);
    checkSendRecvPair(at, kind, send, recv);
  }
  checkOp(at, kind, send.dtype, op);
  algo::CollectiveArgs args(Call::of(kind, send.dtype, send.count, op, root), send.data,
                            at.rank == root ? recv.data : nullptr);
  if (at.rank == root) {
    setMemory(at, kind, args, {&send, &recv});
  } else {
    setMemory(at, kind, args, {&send});
  }
  return args;
}

algo::CollectiveArgs checkGather(const CallSite& at, const Buffer& send, const Buffer& recv,
                                 int root) {
  const auto kind = CollectiveKind::kGather;
  checkRoot(at, kind, root);
  checkBuffer(at, kind, "send", send);
  if (at.rank == root) {
    checkBuffer(at, kind, "recv", recv);
    checkBlockOf(at, kind, "recv", recv, "send", send);
  }
  algo::CollectiveArgs args(Call::of(kind, send.dtype, send.count, ReduceOp::kSum, root),
                            send.data, at.rank == root ? recv.data : nullptr);
  if (at.rank == root) {
    setMemory(at, kind, args, {&send, &recv});
  } else {
    setMemory(at, kind, args, {&send});
  }
  return args;
}

algo::CollectiveArgs checkScatter(const CallSite& at, const Buffer& send, const Buffer& recv,
                                  int root) {
  const auto kind = CollectiveKind::kScatter;
  checkRoot(at, kind, root);
  checkBuffer(at, kind, "recv", recv);
  if (at.rank == root) {
    checkBuffer(at, kind, "send", send);
    checkBlockOf(at, kind, "send", send, "recv", recv);
  }
  algo::CollectiveArgs args(Call::of(kind, recv.dtype, recv.count, ReduceOp::kSum, root),
                            at.rank == root ? send.data : nullptr, recv.data);
  if (at.rank == root) {
    setMemory(at, kind, args, {&send, &recv});
  } else {
    setMemory(at, kind, args, {&recv});
  }
  return args;
}

}  // namespace smddp::core
