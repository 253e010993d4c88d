// SPDX-License-Identifier: Apache-2.0
// NcclPairs (nccl_pairs.h). Store key of a pair's NCCL id: <prefix>/nccl/p2p/<sender>-<receiver>/
// <generation> (a new generation after each failure of the pair).
#include "planes/nccl/nccl_pairs.h"

#include <algorithm>
#include <utility>

#include "planes/nccl/nccl_api.h"
#include "planes/nccl/nccl_plane.h"

namespace smddp::planes::nccl {

struct NcclPairs::Pair {
  enum class State { kIdle, kForming, kReady, kFailed };
  int sender = 0;
  int receiver = 0;
  device::Stream stream = nullptr;
  std::mutex mutex;  // guards what follows
  State state = State::kIdle;
  uint64_t generation = 0;
  std::shared_ptr<NcclComm> comm;
  struct Held {
    std::shared_ptr<NcclWork> work;
    algo::CollectiveArgs args;
  };
  std::deque<Held> held;                          // posted while forming
  std::vector<std::weak_ptr<NcclWork>> inflight;  // enqueued
  std::thread helper;                             // the last formation
  bool closing = false;
};

NcclPairs::NcclPairs(const NcclApi& api, device::Device& device, int ordinal, int rank,
                     std::shared_ptr<Store> store, std::string prefix, StopReason stop, Fail fail)
    : api_(api),
      device_(device),
      ordinal_(ordinal),
      rank_(rank),
      store_(std::move(store)),
      prefix_(std::move(prefix)),
      stop_(std::move(stop)),
      fail_(std::move(fail)) {}

NcclPairs::~NcclPairs() {
  abortAll();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, pair] : pairs_) {
    if (pair->helper.joinable()) pair->helper.join();
    pair->comm.reset();
    device_.destroyStream(pair->stream);
  }
}

NcclPairs::Pair& NcclPairs::pairFor(CollectiveKind kind, int peer) {
  const bool sends = kind == CollectiveKind::kSend;
  const std::pair<int, int> key = sends ? std::make_pair(rank_, peer) : std::make_pair(peer, rank_);
  auto& slot = pairs_[key];
  if (!slot) {
    auto pair = std::make_unique<Pair>();
    pair->sender = key.first;
    pair->receiver = key.second;
    pair->stream = device_.createStream(ordinal_);
    slot = std::move(pair);
  }
  return *slot;
}

device::Stream NcclPairs::streamFor(CollectiveKind kind, int peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  return pairFor(kind, peer).stream;
}

void NcclPairs::post(const std::shared_ptr<NcclWork>& work, const algo::CollectiveArgs& args,
                     int peer) {
  Pair* pair;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pair = &pairFor(args.kind, peer);
  }
  work->pair = int64_t{pair->sender} * 65536 + pair->receiver;
  std::vector<std::pair<std::shared_ptr<NcclWork>, std::string>> failed;
  {
    std::lock_guard<std::mutex> lock(pair->mutex);
    if (pair->closing) {
      failed.emplace_back(work, "the plane is shutting down");
    } else if (pair->state == Pair::State::kIdle || pair->state == Pair::State::kFailed) {
      if (pair->helper.joinable()) pair->helper.join();  // the last formation ended
      pair->state = Pair::State::kForming;
      pair->held.push_back({work, args});
      const auto deadline = work->deadline();
      pair->helper = std::thread([this, pair, deadline] { form(*pair, deadline); });
    } else if (pair->state == Pair::State::kForming) {
      pair->held.push_back({work, args});
    } else {
      std::string why;
      if (!enqueue(*pair, work, args, &why)) failed.emplace_back(work, why);
    }
  }
  for (auto& [w, why] : failed) fail_(*w, ErrorCode::kInternal, why);
}

void NcclPairs::form(Pair& pair, Clock::time_point deadline) {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(pair.mutex);
    generation = pair.generation;
  }
  const std::string key = prefix_ + "/nccl/p2p/" + std::to_string(pair.sender) + "-" +
                          std::to_string(pair.receiver) + "/" + std::to_string(generation);
  const std::string what = "send/recv from rank " + std::to_string(pair.sender) + " to rank " +
                           std::to_string(pair.receiver);
  auto stop = [this, &pair]() -> std::string {
    {
      std::lock_guard<std::mutex> lock(pair.mutex);
      if (pair.closing) return "the plane is shutting down";
    }
    return stop_ ? stop_() : std::string();
  };
  std::shared_ptr<NcclComm> comm;
  ErrorCode code = ErrorCode::kInternal;
  std::string cause;
  try {
    std::string id;
    if (rank_ == pair.sender) {
      id = newUniqueId(api_);
      store_->set(key, id);
    } else {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      id = store_->get(key, std::max(left, std::chrono::milliseconds(1)));
    }
    ncclUniqueId unique{};
    if (id.size() != sizeof(unique.internal)) {
      throw Error(ErrorCode::kInternal, what + ": the NCCL id in the store has " +
                                            std::to_string(id.size()) + " bytes, not " +
                                            std::to_string(sizeof(unique.internal)));
    }
    std::copy(id.begin(), id.end(), unique.internal);
    comm = NcclComm::init(api_, device_, ordinal_, unique, rank_ == pair.sender ? 0 : 1, 2,
                          deadline, stop, what);
  } catch (const Error& e) {
    code = e.code() == ErrorCode::kStore ? ErrorCode::kTimeout : e.code();
    cause = e.what();
  } catch (const std::exception& e) {
    cause = e.what();
  }
  std::vector<std::pair<std::shared_ptr<NcclWork>, std::string>> failed;
  {
    std::lock_guard<std::mutex> lock(pair.mutex);
    if (comm && !pair.closing) {
      pair.comm = std::move(comm);
      pair.state = Pair::State::kReady;
      while (!pair.held.empty()) {
        Pair::Held h = std::move(pair.held.front());
        pair.held.pop_front();
        std::string why;
        if (!enqueue(pair, h.work, h.args, &why)) {
          failed.emplace_back(h.work, why);
          cause = why;
          break;
        }
      }
    } else if (cause.empty()) {
      cause = what + ": the plane is shutting down";
      code = ErrorCode::kAborted;
    }
    if (!cause.empty()) {
      pair.state = Pair::State::kFailed;
      ++pair.generation;
      if (pair.comm) pair.comm->abort();
      if (comm) comm->abort();
      for (auto& h : pair.held) failed.emplace_back(h.work, cause);
      pair.held.clear();
      for (auto& weak : pair.inflight) {
        if (auto w = weak.lock()) failed.emplace_back(w, cause);
      }
      pair.inflight.clear();
    }
  }
  for (auto& [w, why] : failed) {
    w->markReady();  // nothing was recorded: streams waiting on it go on
    fail_(*w, code, why);
  }
}

bool NcclPairs::enqueue(Pair& pair, const std::shared_ptr<NcclWork>& shared,
                        const algo::CollectiveArgs& args, std::string* why) {
  NcclWork& work = *shared;
  device_.streamWait(pair.stream, work.start());
  const int peer = rank_ == pair.sender ? 1 : 0;  // in the pair's communicator
  const auto stream = static_cast<cudaStream_t>(pair.stream);
  ncclResult_t r = pair.comm->call([&](ncclComm_t c) {
    if (args.bytes() == 0) return ncclSuccess;
    return args.kind == CollectiveKind::kSend
               ? api_.send(args.send, args.bytes(), ncclUint8, peer, c, stream)
               : api_.recv(args.recv, args.bytes(), ncclUint8, peer, c, stream);
  });
  r = pair.comm->settle(r, work.deadline(), nullptr, nullptr);
  if (r != ncclSuccess) {
    *why = work.what() + ": NCCL refused the message: " + pair.comm->describe(r);
    return false;
  }
  device_.record(work.end(), pair.stream);
  work.markReady();
  pair.inflight.push_back(shared);
  pair.inflight.erase(std::remove_if(pair.inflight.begin(), pair.inflight.end(),
                                     [](const std::weak_ptr<NcclWork>& w) {
                                       auto p = w.lock();
                                       return !p || p->settled();
                                     }),
                      pair.inflight.end());
  return true;
}

void NcclPairs::checkErrors() {
  std::vector<Pair*> pairs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, pair] : pairs_) pairs.push_back(pair.get());
  }
  for (Pair* pair : pairs) {
    std::shared_ptr<NcclComm> comm;
    {
      std::lock_guard<std::mutex> lock(pair->mutex);
      if (pair->state != Pair::State::kReady) continue;
      comm = pair->comm;
    }
    const ncclResult_t r = comm->asyncError();
    if (r == ncclSuccess || r == ncclInProgress) continue;
    std::vector<std::shared_ptr<NcclWork>> failed;
    std::string cause = "send/recv from rank " + std::to_string(pair->sender) + " to rank " +
                        std::to_string(pair->receiver) + ": NCCL: " + comm->describe(r);
    {
      std::lock_guard<std::mutex> lock(pair->mutex);
      if (pair->comm != comm) continue;
      pair->state = Pair::State::kFailed;
      ++pair->generation;
      comm->abort();
      for (auto& weak : pair->inflight) {
        if (auto w = weak.lock()) failed.push_back(w);
      }
      pair->inflight.clear();
    }
    for (auto& w : failed) fail_(*w, r == ncclRemoteError ? ErrorCode::kPeerFailure
                                                            : ErrorCode::kInternal, cause);
  }
}

void NcclPairs::expire(NcclWork& work, const std::string& cause) {
  Pair* pair = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = pairs_.find({static_cast<int>(work.pair / 65536),
                                 static_cast<int>(work.pair % 65536)});
    if (it == pairs_.end()) return;
    pair = it->second.get();
  }
  std::vector<std::shared_ptr<NcclWork>> failed;
  {
    std::lock_guard<std::mutex> lock(pair->mutex);
    if (pair->state != Pair::State::kReady) return;  // forming: its helper fails it at the deadline
    pair->state = Pair::State::kFailed;
    ++pair->generation;
    if (pair->comm) pair->comm->abort();
    for (auto& weak : pair->inflight) {
      if (auto w = weak.lock()) failed.push_back(w);
    }
    pair->inflight.clear();
  }
  for (auto& w : failed) fail_(*w, ErrorCode::kTimeout, cause);
}

void NcclPairs::abortAll() {
  std::vector<Pair*> pairs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, pair] : pairs_) pairs.push_back(pair.get());
  }
  for (Pair* pair : pairs) {
    std::lock_guard<std::mutex> lock(pair->mutex);
    pair->closing = true;
    if (pair->comm) pair->comm->abort();
  }
}

}  // namespace smddp::planes::nccl
