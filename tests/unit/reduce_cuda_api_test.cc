// SPDX-License-Identifier: Apache-2.0
// The CUDA reducer's host API without a GPU: its table agrees with the CPU reducer's supported
// pairs, and every argument error is raised (with a message naming dtype and op) before any CUDA
// call, so these run on any machine that built the kernels. Kernel results: tests/gpu/.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "reduce/cuda/reducer_cuda.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::reduce {
namespace {

// Fake device addresses: never dereferenced, because every call here fails its checks first.
void* fakePtr(uintptr_t offset) {
  return reinterpret_cast<void*>(uintptr_t(0x7f0000000000) + offset);
}

template <class Fn>
ErrorCode codeOf(Fn&& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (message != nullptr) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no smddp::Error thrown";
  return ErrorCode::kInternal;
}

TEST(ReduceCudaApi, SupportsExactlyTheCpuPairs) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    for (int o = 0; o < kNumReduceOps; ++o) {
      EXPECT_EQ(supportedCuda(DataType(d), ReduceOp(o)), supported(DataType(d), ReduceOp(o)))
          << toString(DataType(d)) << " " << toString(ReduceOp(o));
    }
  }
  EXPECT_FALSE(supportedCuda(DataType(kNumDataTypes), ReduceOp::kSum));
  EXPECT_FALSE(supportedCuda(DataType::kFloat32, ReduceOp(kNumReduceOps)));
}

TEST(ReduceCudaApi, UnsupportedPairNamesDtypeAndOp) {
  std::string msg;
  EXPECT_EQ(codeOf(
                [] {
                  reduceCuda(DataType::kComplex64, ReduceOp::kMin, fakePtr(0), fakePtr(0),
                             fakePtr(0), 8, nullptr);
                },
                &msg),
            ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("complex64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("min"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no order"), std::string::npos) << msg;
  EXPECT_EQ(codeOf([] { finishAverageCuda(DataType::kBool, fakePtr(0), 8, 2, nullptr); }, &msg),
            ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
}

TEST(ReduceCudaApi, ZeroCountTouchesNothing) {
  // Null pointers and no device: a zero-length call must still return quietly.
  reduceCuda(DataType::kFloat16, ReduceOp::kSum, nullptr, nullptr, nullptr, 0, nullptr);
  finishAverageCuda(DataType::kBFloat16, nullptr, 0, 3, nullptr);
}

TEST(ReduceCudaApi, RejectsBadPointersBeforeAnyCudaCall) {
  std::string msg;
  EXPECT_EQ(codeOf(
                [] {
                  reduceCuda(DataType::kFloat32, ReduceOp::kSum, nullptr, fakePtr(0), fakePtr(64),
                             4, nullptr);
                },
                &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("null"), std::string::npos) << msg;
  EXPECT_EQ(codeOf(
                [] {
                  reduceCuda(DataType::kFloat32, ReduceOp::kMax, fakePtr(2), fakePtr(0),
                             fakePtr(64), 4, nullptr);
                },
                &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("aligned"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  // dst overlaps a by half: only exact aliasing is allowed.
  EXPECT_EQ(codeOf(
                [] {
                  reduceCuda(DataType::kInt64, ReduceOp::kSum, fakePtr(16), fakePtr(0),
                             fakePtr(4096), 4, nullptr);
                },
                &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
  EXPECT_EQ(codeOf([] { finishAverageCuda(DataType::kFloat64, fakePtr(4), 4, 2, nullptr); }),
            ErrorCode::kInvalidArgument);
}

TEST(ReduceCudaApi, RejectsNonPositiveDivisor) {
  std::string msg;
  EXPECT_EQ(codeOf([] { finishAverageCuda(DataType::kFloat32, fakePtr(0), 4, 0, nullptr); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("divisor 0"), std::string::npos) << msg;
}

TEST(ReduceCudaApi, CopyBandwidthRejectsEmptyRequests) {
  EXPECT_EQ(codeOf([] { cudaDeviceCopyBandwidth(fakePtr(0), fakePtr(64), 0, 1, nullptr); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(codeOf([] { cudaDeviceCopyBandwidth(fakePtr(0), fakePtr(64), 64, 0, nullptr); }),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace smddp::reduce
