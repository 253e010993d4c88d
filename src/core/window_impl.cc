// SPDX-License-Identifier: Apache-2.0
// Windows (window_impl.h): creation, puts, signals, waits.
#include "core/window_impl.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/communicator_impl.h"
#include "core/validate.h"
#include "smddp/error.h"

namespace smddp::core {
namespace {

constexpr size_t kLine = 64;  // one counter per cache line
constexpr uint32_t kPut = 1;
constexpr uint32_t kSignal = 2;

struct Header {
  uint32_t kind = 0;
  uint32_t pad = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// What each rank publishes at creation.
struct Entry {
  uint64_t ok = 1;
  uint64_t bytes = 0;
  algo::arena::PoolRef data;
  algo::arena::PoolRef flags;
};

Buffer bytesOf(const void* p, size_t n) { return Buffer(p, n, DataType::kUInt8); }

bool alive(int32_t pid) { return pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH; }

}  // namespace

WindowImpl::WindowImpl(Communicator& comm, CommunicatorImpl& impl, int id, void* data,
                       size_t bytes)
    : comm_(comm), impl_(impl), id_(id), rank_(comm.rank()), size_(comm.size()), data_(data),
      pool_(algo::arena::Pool::process()), peers_(static_cast<size_t>(comm.size())) {
  peers_[rank_].bytes = bytes;
}

WindowImpl::~WindowImpl() {
  if (registered_) registered_->fetch_sub(peers_[static_cast<size_t>(rank_)].bytes);
  // held_ goes with the window: requests that failed keep their buffers to here.
}

std::string WindowImpl::where() const {
  return errorHead(rank_) + ": window " + std::to_string(id_);
}

void WindowImpl::checkNotEstimating(const char* what) const {
  if (impl_.estimating()) {
    throw Error(ErrorCode::kInvalidArgument,
                where() + ": " + what + " during a time estimate: windows run for real, so " +
                    "they are refused between beginEstimate and endEstimate");
  }
}

void WindowImpl::markBroken(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!broken_.load(std::memory_order_relaxed)) brokenWhy_ = why;
  broken_.store(true, std::memory_order_release);
}

void WindowImpl::hold(Request& request, std::shared_ptr<void> buffer) {
  // mutex_ held by the caller. Completed well: the transport let go of the buffer.
  held_.erase(std::remove_if(held_.begin(), held_.end(),
                             [](Held& h) { return h.request.completed() && !h.request.error(); }),
              held_.end());
  held_.push_back(Held{request, std::move(buffer)});
}

std::unique_ptr<WindowImpl> WindowImpl::create(Communicator& comm, CommunicatorImpl& impl,
                                               int id, void* data, size_t bytes) {
  std::unique_ptr<WindowImpl> w(new WindowImpl(comm, impl, id, data, bytes));
  w->checkNotEstimating("createWindow");
  const int n = w->size_;
  const size_t lines = kLine * static_cast<size_t>(n);
  w->flags_ = w->pool_->allocate(lines);
  std::memset(w->flags_, 0, lines);
  Entry mine;
  mine.ok = bytes == 0 || data != nullptr;  // published, so every rank fails alike
  mine.bytes = mine.ok ? bytes : 0;
  mine.data = bytes > 0 && mine.ok ? w->pool_->locate(data, bytes) : algo::arena::PoolRef{};
  mine.flags = w->pool_->locate(w->flags_, lines);
  std::vector<Entry> all(static_cast<size_t>(n));
  comm.allGatherBlocking(bytesOf(&mine, sizeof(Entry)),
                         Buffer(all.data(), sizeof(Entry) * static_cast<size_t>(n),
                                DataType::kUInt8));
  for (int r = 0; r < n; ++r) {
    if (!all[static_cast<size_t>(r)].ok) {
      throw Error(ErrorCode::kInvalidArgument,
                  w->where() + ": rank " + std::to_string(r) + " registered no memory for its " +
                      "window of " + std::to_string(r == w->rank_ ? bytes : 0) +
                      " B (a null pointer)");
    }
  }
  const auto& infos = impl.transport().peers();
  const std::string& host = infos[static_cast<size_t>(w->rank_)].host;
  std::vector<uint8_t> mapped(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r) {
    Peer& p = w->peers_[static_cast<size_t>(r)];
    p.bytes = all[static_cast<size_t>(r)].bytes;
    p.data = all[static_cast<size_t>(r)].data;
    p.flags = all[static_cast<size_t>(r)].flags;
    if (r == w->rank_ || infos[static_cast<size_t>(r)].host != host || !p.flags.inPool() ||
        (p.bytes > 0 && !p.data.inPool())) {
      continue;
    }
    try {  // another pid namespace, a peer gone: that pair takes messages
      unsigned char* flags = w->pool_->map(p.flags);
      p.memory = p.bytes > 0 ? w->pool_->map(p.data) : nullptr;
      p.counter = reinterpret_cast<std::atomic<uint64_t>*>(flags + kLine * w->rank_);
      mapped[static_cast<size_t>(r)] = 1;
    } catch (const Error&) {
      p.memory = nullptr;
      p.counter = nullptr;
    }
  }
  std::vector<uint8_t> rows(static_cast<size_t>(n) * n);
  comm.allGatherBlocking(bytesOf(mapped.data(), mapped.size()),
                         Buffer(rows.data(), rows.size(), DataType::kUInt8));
  for (int r = 0; r < n; ++r) {
    Peer& p = w->peers_[static_cast<size_t>(r)];
    p.mapped = mapped[static_cast<size_t>(r)] != 0;
    p.mapsMe = rows[static_cast<size_t>(r) * n + w->rank_] != 0;
    if (r != w->rank_ && !p.mapsMe) p.header.reset(new unsigned char[sizeof(Header)]);
  }
  w->registered_ = impl.windowBytes();
  w->registered_->fetch_add(bytes);
  return w;
}

size_t WindowImpl::bytes(int rank) const {
  return peers_[static_cast<size_t>(checkPeer(rank, "bytes"))].bytes;
}

void* WindowImpl::mapped(int rank) const {
  checkPeer(rank, "mapped");
  return rank == rank_ ? data_ : peers_[static_cast<size_t>(rank)].memory;
}

int WindowImpl::checkPeer(int peer, const char* what) const {
  if (peer < 0 || peer >= size_) {
    throw Error(ErrorCode::kInvalidArgument, where() + ": " + what + ": rank " +
                                                 std::to_string(peer) + " is not in [0, " +
                                                 std::to_string(size_) + ")");
  }
  return peer;
}

void WindowImpl::checkUsable() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!broken_.load(std::memory_order_acquire)) {
    for (Held& h : held_) {  // a message sent earlier that failed: the pair's order is lost
      if (!h.request.completed()) continue;
      if (const std::exception_ptr e = h.request.error()) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          brokenWhy_ = std::string("a message to a peer failed: ") + x.what();
        }
        broken_.store(true, std::memory_order_release);
        break;
      }
    }
  }
  if (broken_.load(std::memory_order_acquire)) {
    throw Error(ErrorCode::kBroken, where() + " is unusable after an earlier failure: " +
                                        brokenWhy_);
  }
}

std::atomic<uint64_t>* WindowImpl::myCounter(int peer) const {
  return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<unsigned char*>(flags_) +
                                                  kLine * static_cast<size_t>(peer));
}

Request WindowImpl::put(const void* src, size_t bytes, int dst, size_t offset) {
  checkNotEstimating("put");
  checkUsable();
  checkPeer(dst, "put");
  const Peer& p = peers_[static_cast<size_t>(dst)];
  if (offset > p.bytes || bytes > p.bytes - offset) {
    throw Error(ErrorCode::kInvalidArgument,
                where() + ": put of " + std::to_string(bytes) + " B at offset " +
                    std::to_string(offset) + " into rank " + std::to_string(dst) +
                    "'s window of " + std::to_string(p.bytes) + " B: out of range");
  }
  if (bytes > 0 && src == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, where() + ": put from a null source");
  }
  if (dst == rank_ || p.mapped) {
    unsigned char* to = dst == rank_ ? static_cast<unsigned char*>(data_) : p.memory;
    if (bytes > 0) std::memmove(to + offset, src, bytes);
    return impl_.completedRequest(CollectiveKind::kSend);
  }
  return message(dst, kPut, offset, src, bytes);
}

Request WindowImpl::signal(int peer) {
  checkNotEstimating("signal");
  checkUsable();
  checkPeer(peer, "signal");
  if (peer == rank_) {
    myCounter(rank_)->fetch_add(1, std::memory_order_release);
    return impl_.completedRequest(CollectiveKind::kSend);
  }
  const Peer& p = peers_[static_cast<size_t>(peer)];
  if (p.mapped) {
    p.counter->fetch_add(1, std::memory_order_release);  // after this rank's copies
    return impl_.completedRequest(CollectiveKind::kSend);
  }
  return message(peer, kSignal, 0, nullptr, 0);
}

Request WindowImpl::message(int peer, uint32_t kind, uint64_t offset, const void* src,
                            size_t bytes) {
  const uint32_t tag = kTagBase | (static_cast<uint32_t>(id_) & 0xffffu);
  auto header = std::make_shared<Header>();
  header->kind = kind;
  header->offset = offset;
  header->bytes = bytes;
  // The origin's copy: src may be reused at once; the bytes leave when the transport takes them.
  auto copy = std::make_shared<std::vector<unsigned char>>(
      static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
  const CallSite at{rank_, size_};
  const auto bound = comm_.timeout();
  std::lock_guard<std::mutex> lock(mutex_);
  Request last = impl_.postWindowMessage(checkSend(at, bytesOf(header.get(), sizeof(Header)), peer),
                                         peer, tag, bound);
  hold(last, header);
  if (kind == kPut && bytes > 0) {
    last = impl_.postWindowMessage(checkSend(at, bytesOf(copy->data(), bytes), peer), peer, tag,
                                   bound);
    hold(last, copy);
  }
  (void)last;
  // Done at once: waiting here for the target's transport could wait for the target itself
  // (a large message), which may be putting too. A send that fails surfaces at the next call.
  return impl_.completedRequest(CollectiveKind::kSend);
}

void WindowImpl::waitSignal(int peer, std::chrono::milliseconds timeout) {
  checkNotEstimating("waitSignal");
  checkUsable();
  checkPeer(peer, "waitSignal");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  try {
    if (peer == rank_ || peers_[static_cast<size_t>(peer)].mapsMe) {
      waitMapped(peer, deadline);
    } else {
      waitMessages(peer, deadline);
    }
  } catch (const Error& e) {
    if (peer != rank_ && !peers_[static_cast<size_t>(peer)].mapsMe) markBroken(e.what());
    throw;
  }
}

void WindowImpl::waitMapped(int peer, std::chrono::steady_clock::time_point deadline) {
  Peer& p = peers_[static_cast<size_t>(peer)];
  std::atomic<uint64_t>* counter = myCounter(peer);
  for (uint64_t polls = 0;; ++polls) {
    if (counter->load(std::memory_order_acquire) > p.taken) {
      ++p.taken;
      return;
    }
    if (polls % 1024 == 1023) {
      if (!alive(p.data.inPool() ? p.data.pid : p.flags.pid)) {
        throw Error(ErrorCode::kPeerFailure,
                    where() + ": waitSignal: peer rank " + std::to_string(peer) +
                        " is gone (process " + std::to_string(p.flags.pid) + " exited)");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        throw Error(ErrorCode::kTimeout, where() + ": waitSignal: no signal from rank " +
                                             std::to_string(peer) + " in time");
      }
    }
    if (polls > 4096) std::this_thread::yield();
  }
}

void WindowImpl::waitMessages(int peer, std::chrono::steady_clock::time_point deadline) {
  const uint32_t tag = kTagBase | (static_cast<uint32_t>(id_) & 0xffffu);
  const CallSite at{rank_, size_};
  // Each receive expires at the wait's deadline (then withdrawn), and is waited for to its end,
  // so no receive outlives this call.
  auto take = [&](void* into, size_t bytes, const char* what) {
    const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()),
                               std::chrono::milliseconds(1));
    Request r = impl_.postWindowMessage(checkRecv(at, bytesOf(into, bytes), peer), peer, tag,
                                        left);
    try {
      r.wait();
    } catch (const Error& e) {
      throw Error(e.code(), where() + ": waitSignal: " + what + " from rank " +
                                std::to_string(peer) + ": " + e.what());
    }
  };
  Peer& p = peers_[static_cast<size_t>(peer)];
  const Peer& me = peers_[static_cast<size_t>(rank_)];
  for (;;) {
    take(p.header.get(), sizeof(Header), "the next message");
    Header h;
    std::memcpy(&h, p.header.get(), sizeof(Header));
    if (h.kind == kSignal) return;
    if (h.kind != kPut || h.offset > me.bytes || h.bytes > me.bytes - h.offset) {
      throw Error(ErrorCode::kMismatch,
                  where() + ": waitSignal: rank " + std::to_string(peer) +
                      " sent a put this window cannot hold (kind " + std::to_string(h.kind) +
                      ", " + std::to_string(h.bytes) + " B at offset " +
                      std::to_string(h.offset) + ")");
    }
    if (h.bytes > 0) {
      take(static_cast<unsigned char*>(data_) + h.offset, h.bytes, "a put's bytes");
    }
  }
}

}  // namespace smddp::core
