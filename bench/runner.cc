// SPDX-License-Identifier: Apache-2.0
// Timed loop and checked run of the perf tools. The timed loop issues all -n collectives before
// waiting (the engine runs them in order), as nccl-tests launches its iterations back to back.
#include "runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "element.h"
#include "smddp/device.h"
#include "smddp/error.h"
#include "verify.h"

namespace smddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

// 64-byte aligned, zeroed memory (zeroed so the first timed row does not pay page faults).
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t bytes) : size_((bytes + 63) / 64 * 64 + 64) {
    data_.reset(static_cast<char*>(std::aligned_alloc(64, size_)));
    if (!data_) throw std::bad_alloc();
    std::memset(data_.get(), 0, size_);
  }
  char* get() const { return data_.get(); }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  size_t size_;
  std::unique_ptr<char, Free> data_;
};

// Device memory (-g 1), given back when it goes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, int ordinal) : data_(device_api::alloc(std::max<size_t>(bytes, 64), ordinal)) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) device_api::free(data_);
  }
  char* get() const { return static_cast<char*>(data_); }

 private:
  void* data_ = nullptr;
};

// The sweep's buffers: send and recv in host memory, where inputs are written and outputs
// checked; with -g 1 the collectives run on their copies in device memory (uploaded before a
// group, downloaded after its checked run).
struct Buffers {
  AlignedBuffer send;
  AlignedBuffer recv;  // recvCount elements, then kGuardBytes of guard
  DeviceBuffer deviceSend;
  DeviceBuffer deviceRecv;

  bool onDevice() const { return deviceSend.get() != nullptr; }
};

// A place in the buffers: which one, and how far in (bytes).
struct Place {
  bool inSend;
  size_t offset;
  char* host(const Buffers& b) const { return (inSend ? b.send.get() : b.recv.get()) + offset; }
  // Where the collective reads or writes it.
  char* run(const Buffers& b) const {
    if (!b.onDevice()) return host(b);
    return (inSend ? b.deviceSend.get() : b.deviceRecv.get()) + offset;
  }
};

// The bound on a device copy of the runner's (an upload or download of one group's buffers).
constexpr std::chrono::seconds kCopyBound{120};

template <class T>
T reduceOverRanks(Communicator& comm, T value, DataType dtype, ReduceOp op) {
  comm.allReduce(Buffer(&value, 1, dtype), Buffer(&value, 1, dtype), op).wait();
  return value;
}

// The input of this rank for the group: send for out of place, its block of recv in place
// (send with outputInInput).
Place inputOf(const RunnerContext& ctx, const CaseParams& p, bool inPlace) {
  if (!inPlace || ctx.spec.outputInInput) return {true, 0};
  return {false, ctx.spec.inPlaceOffset(p.count, p.nranks, p.rank) * dataTypeSize(p.dtype)};
}

// Where the output goes: recv, or this rank's block of send when an outputInInput collective
// runs in place.
Place outputOf(const RunnerContext& ctx, const CaseParams& p, bool inPlace) {
  if (!inPlace || !ctx.spec.outputInInput) return {false, 0};
  return {true, ctx.spec.inPlaceOffset(p.count, p.nranks, p.rank) * dataTypeSize(p.dtype)};
}

// The bytes of the row's send and recv buffers (recv with its guard).
size_t sendBytes(const CollectiveSpec& spec, const CaseParams& p) {
  return spec.sendCount(p.count, p.nranks) * dataTypeSize(p.dtype);
}
size_t recvBytes(const CollectiveSpec& spec, const CaseParams& p) {
  return spec.recvCount(p.count, p.nranks) * dataTypeSize(p.dtype) + kGuardBytes;
}

// -g 1: the host images to the device before a group runs, and back after its checked run.
void upload(const RunnerContext& ctx, const CaseParams& p, Buffers& b) {
  if (!b.onDevice()) return;
  device_api::copyAsync(b.deviceSend.get(), b.send.get(), sendBytes(ctx.spec, p), p.stream);
  device_api::copyAsync(b.deviceRecv.get(), b.recv.get(), recvBytes(ctx.spec, p), p.stream);
  device_api::synchronize(p.stream, kCopyBound);
}
void download(const RunnerContext& ctx, const CaseParams& p, Buffers& b) {
  if (!b.onDevice()) return;
  device_api::synchronize(p.stream, kCopyBound);
  device_api::copyAsync(b.send.get(), b.deviceSend.get(), sendBytes(ctx.spec, p), p.stream);
  device_api::copyAsync(b.recv.get(), b.deviceRecv.get(), recvBytes(ctx.spec, p), p.stream);
  device_api::synchronize(p.stream, kCopyBound);
}

// The row's size in bytes: the larger buffer.
size_t rowBytes(const CollectiveSpec& spec, const CaseParams& p) {
  return std::max(spec.sendCount(p.count, p.nranks), spec.recvCount(p.count, p.nranks)) *
         dataTypeSize(p.dtype);
}

void fillInput(const RunnerContext& ctx, const CaseParams& p, char* input) {
  const size_t n = ctx.spec.sendCount(p.count, p.nranks);
  for (size_t i = 0; i < n; ++i) storeElement(p.dtype, input, i, ctx.spec.input(p, i));
}

// One collective, waited for: through the blocking form with -z 1 (as MPI's collectives are),
// so that the checked run takes the path that was timed.
void runWaited(const RunnerContext& ctx, const CaseParams& p, const void* input, void* recv) {
  if (ctx.opts.blocking == 1) {
    ctx.spec.runBlocking(ctx.comm, p, input, recv, p.count);
  } else {
    ctx.spec.run(ctx.comm, p, input, recv, p.count).wait();
  }
}

// CPU time (user + system) this process has used so far, every thread of it: the caller's, the
// engine thread's and any progress thread's.
double cpuMicros() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto us = [](const timeval& t) { return t.tv_sec * 1e6 + static_cast<double>(t.tv_usec); };
  return us(u.ru_utime) + us(u.ru_stime);
}

struct GroupTiming {
  double us;     // per iteration, the slowest rank's
  double cpuUs;  // CPU time per iteration, the mean over ranks
};

// Average microseconds per iteration on the slowest rank, and the CPU time each call cost.
GroupTiming timeGroup(const RunnerContext& ctx, const CaseParams& p, Buffers& b, bool inPlace) {
  const Place in = inputOf(ctx, p, inPlace);
  fillInput(ctx, p, in.host(b));
  upload(ctx, p, b);
  char* input = in.run(b);
  char* output = outputOf(ctx, p, inPlace).run(b);
  for (int i = 0; i < ctx.opts.warmupIters; ++i) runWaited(ctx, p, input, output);
  ctx.comm.barrier().wait();
  const double cpuStart = cpuMicros();
  const auto start = Clock::now();
  std::vector<Request> requests;
  requests.reserve(ctx.opts.blocking == 0 ? ctx.opts.iters : 0);
  for (int i = 0; i < ctx.opts.iters; ++i) {
    if (ctx.opts.blocking == 0) {
      requests.push_back(ctx.spec.run(ctx.comm, p, input, output, p.count));
    } else {
      runWaited(ctx, p, input, output);
    }
  }
  for (Request& r : requests) r.wait();
  const double us =
      std::chrono::duration<double, std::micro>(Clock::now() - start).count() / ctx.opts.iters;
  const double cpuUs = (cpuMicros() - cpuStart) / ctx.opts.iters;
  return GroupTiming{reduceOverRanks(ctx.comm, us, DataType::kFloat64, ReduceOp::kMax),
                     reduceOverRanks(ctx.comm, cpuUs, DataType::kFloat64, ReduceOp::kSum) /
                         p.nranks};
}

struct CheckCounts {
  int64_t wrong = 0;
  int64_t outOfBounds = 0;
};

// One run on poisoned output and fresh input; counts this rank's wrong elements and damaged guard
// bytes.
CheckCounts checkGroup(const RunnerContext& ctx, const CaseParams& p, Buffers& b, bool inPlace) {
  const size_t recvCount = ctx.spec.recvCount(p.count, p.nranks);
  const Place out = outputOf(ctx, p, inPlace);
  const Place in = inputOf(ctx, p, inPlace);
  char* recv = out.host(b);
  if (!out.inSend) {  // poisoned first: an input inside recv is written next
    for (size_t i = 0; i < recvCount; ++i) storeElement(p.dtype, recv, i, poisonValue(p.dtype));
  }
  fillInput(ctx, p, in.host(b));
  char* guard = b.recv.get() + recvCount * dataTypeSize(p.dtype);
  fillGuard(guard);
  upload(ctx, p, b);
  runWaited(ctx, p, in.run(b), out.run(b));
  download(ctx, p, b);
  CheckCounts c;
  c.outOfBounds = countGuardDamage(guard);
  if (ctx.spec.outputOnRootOnly && p.rank != p.root) return c;  // nothing defined to check
  c.wrong = countWrong(
      p.dtype, recv, recvCount, [&](size_t i) { return ctx.spec.expected(p, i); },
      [&](double want) { return tolerance(p.dtype, p.op, want); });
  return c;
}

GroupResult runGroup(const RunnerContext& ctx, const CaseParams& p, Buffers& b, bool inPlace,
                     int64_t& oob) {
  GroupResult g;
  const GroupTiming t = timeGroup(ctx, p, b, inPlace);
  g.timeUs = t.us;
  g.cpuUs = t.cpuUs;
  g.algBw = algBandwidth(rowBytes(ctx.spec, p), g.timeUs);
  g.busBw = g.algBw * ctx.spec.busBwFactor(p.nranks);
  if (ctx.opts.check && ctx.spec.movesData) {
    const CheckCounts c = checkGroup(ctx, p, b, inPlace);
    int64_t counts[2] = {c.wrong, c.outOfBounds};
    ctx.comm
        .allReduce(Buffer(counts, 2, DataType::kInt64), Buffer(counts, 2, DataType::kInt64),
                   ReduceOp::kSum)
        .wait();
    g.wrong = counts[0];
    oob += counts[1];
  } else if (ctx.opts.check) {
    g.wrong = 0;  // nothing to check: a completed barrier is the whole result
  }
  return g;
}

RowResult runRow(const RunnerContext& ctx, const CaseParams& p, Buffers& b, int64_t& oob) {
  RowResult row;
  row.count = p.count;
  row.bytes = rowBytes(ctx.spec, p);
  row.type = ctx.spec.movesData ? toString(p.dtype) : "none";
  row.redop = ctx.spec.usesOp ? toString(p.op) : "none";
  row.root = ctx.spec.usesRoot ? p.root : -1;
  row.outOfPlace = runGroup(ctx, p, b, false, oob);
  if (ctx.spec.hasInPlace) {
    row.inPlace = runGroup(ctx, p, b, true, oob);
  } else {
    row.inPlace.ran = false;
  }
  if (ctx.out) *ctx.out << formatRow(row) << std::endl;
  return row;
}

// The (dtype, op, root) cases of the run, in the order every rank visits them.
std::vector<CaseParams> cases(const RunnerContext& ctx) {
  const CollectiveSpec& spec = ctx.spec;
  const BenchOptions& o = ctx.opts;
  const int n = ctx.comm.size();
  std::vector<CaseParams> out;
  const std::vector<DataType> dtypes = spec.movesData ? o.dtypes : std::vector{DataType::kUInt8};
  const std::vector<ReduceOp> ops = spec.usesOp ? o.ops : std::vector{ReduceOp::kSum};
  for (DataType dtype : dtypes) {
    for (ReduceOp op : ops) {
      if (op == ReduceOp::kAvg && !isFloatingPoint(dtype)) continue;  // avg: floating types only
      const int firstRoot = !spec.usesRoot ? -1 : o.root < 0 ? 0 : o.root;
      const int lastRoot = !spec.usesRoot ? -1 : o.root < 0 ? n - 1 : o.root;
      for (int root = firstRoot; root <= lastRoot; ++root) {
        out.push_back(CaseParams{dtype, op, root, n, ctx.comm.rank(), 0});
      }
    }
  }
  return out;
}

}  // namespace

int benchDevice(const Communicator& comm, const BenchOptions& o) {
  if (o.gpu == 0) return -1;
  const int devices = device_api::count();
  if (devices == 0) {
    throw Error(ErrorCode::kUnsupported,
                "-g 1: no device is usable (SMDDP_DEVICE=auto finds none without a GPU; "
                "SMDDP_DEVICE=fake simulates one)");
  }
  return comm.rank() % devices;
}

SweepResult runSweep(const RunnerContext& ctx) {
  const CollectiveSpec& spec = ctx.spec;
  const BenchOptions& o = ctx.opts;
  const std::vector<size_t> sizes =
      spec.movesData ? sizeSweep(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes)
                     : std::vector<size_t>{0};
  const int device = benchDevice(ctx.comm, o);
  std::unique_ptr<void, void (*)(void*)> stream(
      device >= 0 ? device_api::createStream(device) : nullptr,
      [](void* s) { if (s != nullptr) device_api::destroyStream(s); });
  SweepResult result;
  for (CaseParams p : cases(ctx)) {
    const size_t elem = dataTypeSize(p.dtype);
    const size_t maxCount = spec.countFor(sizes.back(), elem, p.nranks);
    const size_t sendMax = spec.sendCount(maxCount, p.nranks) * elem;
    const size_t recvMax = spec.recvCount(maxCount, p.nranks) * elem + kGuardBytes;
    Buffers b{AlignedBuffer(sendMax), AlignedBuffer(recvMax),
              device >= 0 ? DeviceBuffer(sendMax, device) : DeviceBuffer(),
              device >= 0 ? DeviceBuffer(recvMax, device) : DeviceBuffer()};
    if (device >= 0) {
      p.memory = MemoryType::kCuda;
      p.device = device;
      p.stream = stream.get();
    }
    try {
      for (size_t bytes : sizes) {
        p.count = spec.countFor(bytes, elem, p.nranks);
        result.rows.push_back(runRow(ctx, p, b, result.outOfBounds));
      }
    } catch (const Error& e) {
      // Rejected on the calling thread on every rank alike, before anything moved.
      if (!e.recoverable()) throw;
      if (ctx.out)
        *ctx.out << "# skipped " << toString(p.dtype) << "/" << toString(p.op) << ": " << e.what()
                 << std::endl;
    }
  }
  return result;
}

}  // namespace smddp::bench
