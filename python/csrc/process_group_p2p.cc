// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp's point-to-point: send, recv, recv from any source (the Work's sourceRank
// says who sent), and monitored_barrier built on them. Each is one engine send or recv of the
// (staged) tensor; tags are torch's (0 .. 2^31 - 1), matched in order per (peer, tag).
#include <c10/util/Exception.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "process_group.h"
#include "smddp/error.h"
#include "tensor_map.h"

namespace smddp::torch_shim {

using ::c10d::OpType;

namespace {

// monitored_barrier's messages: a tag no torch call can use (torch's tags are non-negative ints).
constexpr uint32_t kMonitorTag = 0xFFFF0001u;

uint32_t checkTag(int tag, const char* what) {
  TORCH_CHECK(tag >= 0, "smddp: ", what, ": the tag must be >= 0, got ", tag);
  return static_cast<uint32_t>(tag);
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::send(Tensors& tensors, int dstRank, int tag) {
  const char* what = "send";
  checkSingle(tensors, what);
  const uint32_t t = checkTag(tag, what);
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  at::Tensor in = staging.stage(tensors[0], /*copyIn=*/true, /*copyBack=*/false);
  staging.keepAlive(tensors[0]);
  SmddpWork::Requests requests;
  requests.push_back(c.send(toBuffer(in, what), dstRank, t));
  return finish(OpType::SEND, std::move(requests), {}, std::move(staging), ::c10d::kUnsetTimeout);
}

// One engine recv into the (staged) tensor from srcRank, or from any rank.
c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::receive(Tensors& tensors, int srcRank, int tag,
                                                            OpType opType, const char* what) {
  checkSingle(tensors, what);
  const uint32_t t = checkTag(tag, what);
  const CommUse use = enter();
  Communicator& c = use.comm();
  Staging staging;
  at::Tensor out = staging.stage(tensors[0], /*copyIn=*/false, /*copyBack=*/true);
  SmddpWork::Requests requests;
  requests.push_back(c.recv(toBuffer(out, what), srcRank, t));
  return finish(opType, std::move(requests), tensors, std::move(staging), ::c10d::kUnsetTimeout);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::recv(Tensors& tensors, int srcRank, int tag) {
  return receive(tensors, srcRank, tag, OpType::RECV, "recv");
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::recvAnysource(Tensors& tensors, int tag) {
  return receive(tensors, Communicator::kAnySource, tag, OpType::RECVANYSOURCE,
                 "recv (any source)");
}

// As gloo's: every rank reports to rank 0, which waits for each (bounded by the timeout) and
// releases them all; a rank that does not report in time is named (all of them with
// waitAllRanks). The other ranks wait for rank 0's release under the same bound. The errors use
// gloo's words ("Rank 1 failed to pass monitoredBarrier", "Rank 0 timed out in
// monitoredBarrier", "Rank 2 successfully reached monitoredBarrier, but received errors while
// waiting for send/recv from rank 0"), so that what matches gloo's errors matches these.
void ProcessGroupSmddp::monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) {
  const auto bound = compat::effectiveTimeout(opts.timeout, timeout());
  const auto deadline = std::chrono::steady_clock::now() + bound;
  const CommUse use = enter();
  Communicator& c = use.comm();
  uint8_t token = 0;
  const Buffer buf(&token, 1, DataType::kUInt8);
  auto left = [&deadline] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  if (rank_ != 0) {
    c.send(buf, 0, kMonitorTag).wait(left());
    try {
      c.recv(buf, 0, kMonitorTag).wait(left());
    } catch (const Error& e) {
      TORCH_CHECK(false, "smddp: monitored_barrier: Rank ", rank_,
                  " successfully reached monitoredBarrier, but received errors while waiting for "
                  "send/recv from rank 0 (not released within ",
                  bound.count(), " ms): ", e.what());
    }
    return;
  }
  std::vector<Request> arrivals;
  for (int r = 1; r < size_; ++r) arrivals.push_back(c.recv(buf, r, kMonitorTag));
  std::vector<int> missing;
  for (int r = 1; r < size_; ++r) {
    auto& arrival = arrivals[static_cast<size_t>(r - 1)];
    if (!arrival.test() && std::chrono::steady_clock::now() >= deadline) {
      TORCH_CHECK(false, "smddp: monitored_barrier: Rank 0 timed out in monitoredBarrier after ",
                  bound.count(), " ms (waiting for rank ", r, ")");
    }
    try {
      arrival.wait(left());
    } catch (const Error&) {
      missing.push_back(r);
      if (!waitAllRanks) break;
    }
  }
  if (!missing.empty()) {
    std::string ranks;
    for (int r : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    TORCH_CHECK(false, "smddp: monitored_barrier: Rank", missing.size() > 1 ? "s " : " ", ranks,
                " failed to pass monitoredBarrier in ", bound.count(), " ms");
  }
  std::vector<Request> releases;
  for (int r = 1; r < size_; ++r) releases.push_back(c.send(buf, r, kMonitorTag));
  for (auto& rel : releases) rel.wait(left());
}

}  // namespace smddp::torch_shim
