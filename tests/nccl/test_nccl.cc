// SPDX-License-Identifier: Apache-2.0
// The test NCCL's C API (test_nccl.h): communicators, enqueueing on the fake device's streams,
// groups, abort, and the optional calls.
#include "test_nccl.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "device/fake/fake_hooks.h"

struct ncclComm {
  std::shared_ptr<smddp::testnccl::CommState> state;
  std::atomic<int> tasks{0};  // queued or running on a stream
  bool finalizing = false;
};

namespace smddp::testnccl {
namespace {

const SmddpFakeDeviceHooks* gHooks = nullptr;
constexpr uint32_t kIdMagic = 0x4e54534d;  // "MSTN"
constexpr int kConnectTimeoutMs = 600000;  // a real NCCL waits as long; aborts end it sooner

thread_local std::string lastError;
thread_local int groupDepth = 0;
struct Grouped {
  ncclComm_t comm;
  void* stream;
  std::vector<Op> ops;
};
thread_local std::vector<Grouped> grouped;

ncclResult_t fail(ncclResult_t r, const std::string& why) {
  lastError = "smddp test NCCL: " + why;
  return r;
}

struct Task {
  ncclComm_t comm;
  std::shared_ptr<CommState> state;
  std::vector<Op> ops;
};

void runTask(void* arg) {
  Task* t = static_cast<Task*>(arg);
  if (!t->state->stopped()) runOps(*t->state, t->ops);
  t->comm->tasks.fetch_sub(1);
  delete t;
}

ncclResult_t launch(ncclComm_t comm, void* stream, std::vector<Op> ops) {
  if (gHooks == nullptr) return fail(ncclInvalidUsage, "not attached to the fake device");
  comm->tasks.fetch_add(1);
  gHooks->enqueue(stream, runTask, new Task{comm, comm->state, std::move(ops)});
  return ncclSuccess;
}

ncclResult_t enqueue(ncclComm_t comm, void* stream, Op op) {
  if (comm == nullptr || comm->state->state.load() != ncclSuccess) {
    return fail(ncclInvalidUsage, "a call on a communicator that is not ready");
  }
  if (groupDepth > 0) {
    for (auto& g : grouped) {
      if (g.comm == comm && g.stream == stream) {
        g.ops.push_back(op);
        return ncclSuccess;
      }
    }
    grouped.push_back({comm, stream, {op}});
    return ncclSuccess;
  }
  return launch(comm, stream, {op});
}

// The host view of a device buffer of `bytes` (null for none), or null with the error set.
bool view(const void* p, size_t bytes, const char* what, void** out) {
  *out = nullptr;
  if (bytes == 0) return true;
  if (gHooks == nullptr) {
    fail(ncclInvalidUsage, "not attached to the fake device");
    return false;
  }
  char error[256] = {0};
  *out = gHooks->resolve(p, bytes, error, sizeof(error));
  if (*out == nullptr) fail(ncclInvalidArgument, std::string(what) + ": " + error);
  return *out != nullptr;
}

std::string nameOf(const ncclUniqueId& id) {
  uint64_t nonce = 0;
  std::memcpy(&nonce, id.internal + 4, sizeof(nonce));
  char text[32];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(nonce));
  return text;
}

void connectState(const std::shared_ptr<CommState>& s) {
  std::string why;
  const bool ok = s->mesh.connect(s->name, s->rank, s->size, [s] { return s->stopped(); },
                                  kConnectTimeoutMs, &why);
  s->error = why;
  s->state.store(ok ? ncclSuccess : ncclSystemError);
}

ncclResult_t start(ncclComm_t* out, std::shared_ptr<CommState> s, const ncclConfig_t* config) {
  const bool blocking = config == nullptr || config->blocking != 0;
  *out = new ncclComm{s};
  if (blocking) {
    connectState(s);
    return s->state.load() == ncclSuccess ? ncclSuccess : fail(ncclSystemError, s->error);
  }
  s->connector = std::thread([s] { connectState(s); });
  return ncclInProgress;
}

}  // namespace
}  // namespace smddp::testnccl

using namespace smddp::testnccl;

extern "C" {

int smddpTestNcclAttach(const SmddpFakeDeviceHooks* hooks) {
  if (hooks == nullptr || hooks->version != smddp::device::kFakeDeviceHooksVersion) return 1;
  gHooks = hooks;
  return 0;
}

ncclResult_t ncclGetVersion(int* version) {
  *version = SMDDP_TEST_NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) { return lastError.c_str(); }

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, &kIdMagic, sizeof(kIdMagic));
  std::random_device rd;
  const uint64_t nonce = (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(::getpid());
  std::memcpy(id->internal + 4, &nonce, sizeof(nonce));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  uint32_t magic = 0;
  std::memcpy(&magic, id.internal, sizeof(magic));
  if (magic != kIdMagic) return fail(ncclInvalidArgument, "not an id of the test NCCL");
  if (nranks < 1 || rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "bad rank");
  auto s = std::make_shared<CommState>();
  s->name = nameOf(id);
  s->rank = rank;
  s->size = nranks;
  return start(comm, std::move(s), config);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "null communicator");
  ncclResult_t s = static_cast<ncclResult_t>(comm->state->state.load());
  if (s == ncclSuccess && comm->finalizing && comm->tasks.load() > 0) s = ncclInProgress;
  if (s != ncclSuccess && s != ncclInProgress) lastError = "smddp test NCCL: " + comm->state->error;
  *state = s;
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  comm->finalizing = true;
  return comm->tasks.load() > 0 ? ncclInProgress : ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  comm->state->aborted.store(true);  // what is still queued ends at once
  if (comm->state->connector.joinable()) comm->state->connector.join();
  while (comm->tasks.load() > 0) usleep(1000);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--groupDepth > 0) return ncclSuccess;
  std::vector<Grouped> all;
  all.swap(grouped);
  for (auto& g : all) {
    const ncclResult_t r = launch(g.comm, g.stream, std::move(g.ops));
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * typeSize(type);
  Op o{Op::Kind::kAllReduce};
  void* s;
  if (!view(send, bytes, "ncclAllReduce sendbuff", &s) ||
      !view(recv, bytes, "ncclAllReduce recvbuff", &o.recv)) {
    return ncclInvalidArgument;
  }
  o.send = s;
  o.count = count;
  o.type = type;
  o.op = op;
  return enqueue(comm, stream, o);
}

ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * typeSize(type);
  Op o{Op::Kind::kReduce};
  void* s;
  const bool isRoot = comm != nullptr && comm->state->rank == root;
  if (!view(send, bytes, "ncclReduce sendbuff", &s) ||
      (isRoot && !view(recv, bytes, "ncclReduce recvbuff", &o.recv))) {
    return ncclInvalidArgument;
  }
  o.send = s;
  o.count = count;
  o.type = type;
  o.op = op;
  o.root = root;
  return enqueue(comm, stream, o);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount,
                               ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  const size_t bytes = recvcount * typeSize(type);
  const size_t size = comm != nullptr ? static_cast<size_t>(comm->state->size) : 1;
  Op o{Op::Kind::kReduceScatter};
  void* s;
  if (!view(send, bytes * size, "ncclReduceScatter sendbuff", &s) ||
      !view(recv, bytes, "ncclReduceScatter recvbuff", &o.recv)) {
    return ncclInvalidArgument;
  }
  o.send = s;
  o.count = recvcount;
  o.type = type;
  o.op = op;
  return enqueue(comm, stream, o);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * typeSize(type);
  Op o{Op::Kind::kBroadcast};
  void* s = nullptr;
  const bool isRoot = comm != nullptr && comm->state->rank == root;
  if ((isRoot && !view(send, bytes, "ncclBroadcast sendbuff", &s)) ||
      !view(recv, bytes, "ncclBroadcast recvbuff", &o.recv)) {
    return ncclInvalidArgument;
  }
  o.send = s;
  o.count = count;
  o.type = type;
  o.root = root;
  return enqueue(comm, stream, o);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = sendcount * typeSize(type);
  const size_t size = comm != nullptr ? static_cast<size_t>(comm->state->size) : 1;
  Op o{Op::Kind::kAllGather};
  void* s;
  if (!view(send, bytes, "ncclAllGather sendbuff", &s) ||
      !view(recv, bytes * size, "ncclAllGather recvbuff", &o.recv)) {
    return ncclInvalidArgument;
  }
  o.send = s;
  o.count = sendcount;
  o.type = type;
  return enqueue(comm, stream, o);
}

ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  Op o{Op::Kind::kSend};
  void* s;
  if (!view(send, count * typeSize(type), "ncclSend sendbuff", &s)) return ncclInvalidArgument;
  o.send = s;
  o.count = count;
  o.type = type;
  o.root = peer;
  return enqueue(comm, stream, o);
}

ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  Op o{Op::Kind::kRecv};
  if (!view(recv, count * typeSize(type), "ncclRecv recvbuff", &o.recv)) return ncclInvalidArgument;
  o.count = count;
  o.type = type;
  o.root = peer;
  return enqueue(comm, stream, o);
}

#ifndef SMDDP_TEST_NCCL_MINIMAL
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excluded, int count, ncclComm_t* newcomm,
                            ncclConfig_t* config, int flags) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "null communicator");
  CommState& parent = *comm->state;
  std::vector<bool> out(static_cast<size_t>(parent.size), false);
  for (int i = 0; i < count; ++i) {
    if (excluded[i] < 0 || excluded[i] >= parent.size) return fail(ncclInvalidArgument, "bad rank");
    out[static_cast<size_t>(excluded[i])] = true;
  }
  if (out[static_cast<size_t>(parent.rank)]) return fail(ncclInvalidArgument, "an excluded rank");
  if ((flags & NCCL_SHRINK_ABORT) != 0) parent.aborted.store(true);
  auto s = std::make_shared<CommState>();
  s->name = parent.name + "k" + std::to_string(++parent.shrinks);
  s->size = 0;  // counted below: the parent's ranks that remain
  for (int r = 0; r < parent.size; ++r) {
    if (out[static_cast<size_t>(r)]) continue;
    if (r == parent.rank) s->rank = s->size;
    ++s->size;
  }
  return start(newcomm, std::move(s), config);
}

ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (gHooks == nullptr) return fail(ncclInvalidUsage, "not attached to the fake device");
  *ptr = gHooks->alloc(size);
  return *ptr != nullptr ? ncclSuccess : fail(ncclSystemError, "out of fake device memory");
}

ncclResult_t ncclMemFree(void* ptr) {
  if (gHooks != nullptr && ptr != nullptr) gHooks->release(ptr);
  return ncclSuccess;
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int) {
  void* v;
  if (!view(buff, size, "ncclCommWindowRegister buff", &v)) return ncclInvalidArgument;
  *win = reinterpret_cast<ncclWindow_t>(new char(0));
  (void)comm;
  return ncclSuccess;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t, ncclWindow_t win) {
  delete reinterpret_cast<char*>(win);
  return ncclSuccess;
}
#endif

}  // extern "C"
