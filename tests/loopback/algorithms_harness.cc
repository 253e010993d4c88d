// SPDX-License-Identifier: Apache-2.0
// Harness implementation: threads, exact dtype conversions (small values only), guard zones.
#include "algorithms_harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <thread>

#include "algorithms/arena/context.h"
#include "algorithms/patterns/hosts.h"
#include "smddp/error.h"
#include "transport/loopback/loopback_transport.h"

namespace smddp::algo::testing {
namespace {

constexpr size_t kGuardBytes = 32;
constexpr unsigned char kGuard = 0xA5;
constexpr unsigned char kPoison = 0x7B;
constexpr size_t kMaxFailuresPerRank = 8;

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Exact for the values tests use (normal float16 numbers); anything else is a test bug.
uint16_t halfFromDouble(double v) {
  const float f = static_cast<float>(v);
  if (f == 0.0f) return std::signbit(f) ? 0x8000 : 0;
  const uint32_t u = floatBits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int exp = static_cast<int>((u >> 23) & 0xFF) - 127 + 15;
  if (exp <= 0 || exp >= 31 || (u & 0x1FFFu) != 0) ADD_FAILURE() << v << " is not exact in fp16";
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((u >> 13) & 0x3FFu));
}

double halfToDouble(uint16_t h) {
  const int exp = (h >> 10) & 0x1F;
  const double mant = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(1024.0 + mant, exp - 25);
}

template <class T>
void put(void* b, size_t i, T v) {
  std::memcpy(static_cast<char*>(b) + i * sizeof(T), &v, sizeof(T));
}
template <class T>
T take(const void* b, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(b) + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

bool isSigned(DataType dtype) { return dtype != DataType::kUInt8; }

std::string show(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

void setValue(DataType dtype, void* b, size_t i, double v) {
  switch (dtype) {
    case DataType::kFloat32:
      return put<float>(b, i, static_cast<float>(v));
    case DataType::kFloat64:
      return put<double>(b, i, v);
    case DataType::kFloat16:
      return put<uint16_t>(b, i, halfFromDouble(v));
    case DataType::kBFloat16: {
      const uint32_t u = floatBits(static_cast<float>(v));
      if ((u & 0xFFFFu) != 0) ADD_FAILURE() << v << " is not exact in bf16";
      return put<uint16_t>(b, i, static_cast<uint16_t>(u >> 16));
    }
    case DataType::kInt8:
      return put<int8_t>(b, i, static_cast<int8_t>(v));
    case DataType::kUInt8:
      return put<uint8_t>(b, i, static_cast<uint8_t>(v));
    case DataType::kInt32:
      return put<int32_t>(b, i, static_cast<int32_t>(v));
    case DataType::kInt64:
      return put<int64_t>(b, i, static_cast<int64_t>(v));
    default:  // the other dtypes: core_dtypes_test
      ADD_FAILURE() << "the algorithm harness does not cover " << toString(dtype);
  }
}

double getValue(DataType dtype, const void* b, size_t i) {
  switch (dtype) {
    case DataType::kFloat32:
      return take<float>(b, i);
    case DataType::kFloat64:
      return take<double>(b, i);
    case DataType::kFloat16:
      return halfToDouble(take<uint16_t>(b, i));
    case DataType::kBFloat16: {
      const uint32_t u = static_cast<uint32_t>(take<uint16_t>(b, i)) << 16;
      float f;
      std::memcpy(&f, &u, sizeof f);
      return f;
    }
    case DataType::kInt8:
      return take<int8_t>(b, i);
    case DataType::kUInt8:
      return take<uint8_t>(b, i);
    case DataType::kInt32:
      return take<int32_t>(b, i);
    case DataType::kInt64:
      return static_cast<double>(take<int64_t>(b, i));
    default:
      ADD_FAILURE() << "the algorithm harness does not cover " << toString(dtype);
  }
  return NAN;
}

TestBuffer::TestBuffer(DataType dtype, size_t count)
    : dtype_(dtype), count_(count), bytes_(count * dataTypeSize(dtype) + kGuardBytes, kGuard) {}

void TestBuffer::poison() { std::memset(bytes_.data(), kPoison, count_ * dataTypeSize(dtype_)); }

bool TestBuffer::guardIntact() const {
  for (size_t i = count_ * dataTypeSize(dtype_); i < bytes_.size(); ++i) {
    if (bytes_[i] != kGuard) return false;
  }
  return true;
}

void RankContext::run(const Algorithm& a, const CollectiveArgs& args, size_t segmentBytes) {
  CollectiveDesc desc;
  desc.call() = args.call();
  desc.seq = seq++;
  desc.algorithm = a.name;
  desc.shape = shapeHash(desc, algorithmNameHash(a.name));
  ExecSettings settings;
  settings.timeout = std::chrono::milliseconds(30000);
  settings.segmentBytes = segmentBytes;
  // Short spins (5 us) so that the many ranks of a test on few cores yield soon.
  static common::WaitPolicy waiting = common::WaitPolicy::fixed(std::chrono::microseconds(5));
  settings.waiting = &waiting;
  std::optional<algo::arena::Context> context, hostContext;
  if (arena != nullptr) settings.attachment = &context.emplace(arena, nullptr);
  if (hosts != nullptr) {
    hosts->localSettings = settings;
    hosts->localSettings.attachment =
        hostArena == nullptr ? nullptr : &hostContext.emplace(hostArena, nullptr);
    hosts->crossSettings = settings;
    settings.hosts = hosts;
  }
  Exec exec(transport, resources, desc, settings,
            std::chrono::steady_clock::now() + settings.timeout);
  runCollective(a, exec, args);  // settles a deferred check first, as the core does
}

void RankContext::fail(const std::string& message) {
  if (failures.size() < kMaxFailuresPerRank) failures.push_back(message);
}

namespace {

// Runs body on one thread per context; reports every rank's failures and exceptions, each
// line led by label(rank).
void runContexts(std::vector<RankContext>& contexts, const RankBody& body,
                 const std::function<std::string(int)>& label) {
  std::vector<std::thread> threads;
  for (RankContext& ctx : contexts) {
    threads.emplace_back([&body, &ctx] {
      try {
        body(ctx);
      } catch (const std::exception& e) {
        ctx.failures.push_back(std::string("exception: ") + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const RankContext& ctx : contexts) {
    for (const auto& f : ctx.failures) ADD_FAILURE() << label(ctx.rank) << ": " << f;
  }
}

}  // namespace

void runRanks(int n, const RankBody& body) {
  auto fabric = transport::LoopbackFabric::create(n);
  std::vector<std::unique_ptr<transport::Transport>> endpoints;
  std::vector<ExecResources> resources(static_cast<size_t>(n));
  arena::HeapSegments segments(n, 4096, 100);
  std::vector<std::unique_ptr<arena::Arena>> arenas;
  std::vector<RankContext> contexts;
  for (int r = 0; r < n; ++r) {
    endpoints.push_back(fabric->endpoint(r));
    arenas.push_back(std::make_unique<arena::Arena>(segments.view(r)));
  }
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<size_t>(r);
    contexts.push_back(RankContext{r, n, *endpoints[i], resources[i], arenas[i].get(), 0, {}});
  }
  runContexts(contexts, body, [](int r) { return "rank " + std::to_string(r); });
}

namespace {

// Ranks on the hosts `names` gives them (rank r on host names[r]), a heap arena per host.
void runOnHostNames(const std::vector<std::string>& names, const RankBody& body,
                    size_t slotBytes) {
  const int n = static_cast<int>(names.size());
  auto fabric = transport::LoopbackFabric::create(n);
  const patterns::HostLayout layout = patterns::hostLayout(names);
  std::vector<std::unique_ptr<transport::Transport>> endpoints;
  std::vector<ExecResources> resources(static_cast<size_t>(n));
  std::vector<HostGroups> groups(static_cast<size_t>(n));
  std::vector<std::unique_ptr<arena::HeapSegments>> segments;
  for (const auto& host : layout.ranksOf) {
    segments.push_back(
        std::make_unique<arena::HeapSegments>(static_cast<int>(host.size()), slotBytes, 100));
  }
  std::vector<std::unique_ptr<arena::Arena>> arenas;
  for (int r = 0; r < n; ++r) {
    endpoints.push_back(fabric->endpoint(r));
    const auto& segs = *segments[static_cast<size_t>(layout.hostOf[static_cast<size_t>(r)])];
    arenas.push_back(std::make_unique<arena::Arena>(segs.view(layout.localIndex(r))));
    groups[static_cast<size_t>(r)].place(layout, r);
  }
  std::vector<RankContext> contexts;
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<size_t>(r);
    contexts.push_back(RankContext{r, n, *endpoints[i], resources[i], nullptr, 0, {}, &groups[i],
                                   arenas[i].get()});
  }
  runContexts(contexts, body, [&layout](int r) {
    return "rank " + std::to_string(r) + " (host " +
           std::to_string(layout.hostOf[static_cast<size_t>(r)]) + ")";
  });
}

}  // namespace

void runRanksOnHosts(int hostCount, int perHost, const RankBody& body, size_t slotBytes,
                     bool consecutive) {
  const int n = hostCount * perHost;
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) {
    names.push_back("host" + std::to_string(consecutive ? r / perHost : r % hostCount));
  }
  runOnHostNames(names, body, slotBytes);
}

void runRanksOnUnevenHosts(const std::vector<int>& hostOf, const RankBody& body,
                           size_t slotBytes) {
  std::vector<std::string> names;
  for (int h : hostOf) names.push_back("host" + std::to_string(h));
  runOnHostNames(names, body, slotBytes);
}

const Algorithm& algorithm(CollectiveKind kind, const char* name) {
  const Algorithm* a = findAlgorithm(kind, name);
  if (a == nullptr) throw Error(ErrorCode::kInternal, std::string("no algorithm ") + name);
  return *a;
}

std::string describeCase(const Algorithm& a, int n, size_t count, DataType dtype, ReduceOp op,
                         bool inPlace, size_t segmentBytes) {
  std::string s = std::string(toString(a.kind)) + " " + a.name + " n=" + std::to_string(n) +
                  " count=" + std::to_string(count) + " " + toString(dtype);
  if (a.kind == CollectiveKind::kAllReduce) s += std::string(" ") + toString(op);
  s += inPlace ? " in-place" : " out-of-place";
  return s + " segment=" + std::to_string(segmentBytes) + "B";
}

}  // namespace smddp::algo::testing
