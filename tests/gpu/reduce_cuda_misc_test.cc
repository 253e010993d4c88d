// SPDX-License-Identifier: Apache-2.0
// The CUDA reducer's stream behaviour and helpers: work is ordered on the caller's (non-default,
// non-blocking) stream and the host is not blocked; the copy-bandwidth probe gives a plausible
// number. Without a device, a valid call raises Error(kUnsupported) instead of crashing — the one
// test here that runs on a GPU-less machine (and skips where a GPU is present).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpu/reduce_cuda_test_util.h"
#include "reduce/cuda/reducer_cuda.h"
#include "smddp/error.h"

namespace smddp::reduce {
namespace {

using testing::DeviceRegion;

TEST(ReduceCudaStreams, OrderedOnCallerStream) {
  SMDDP_SKIP_WITHOUT_GPU();
  constexpr size_t kCount = (1 << 22) + 3;  // large enough that the host outruns the GPU
  cudaStream_t st = nullptr;
  SMDDP_ASSERT_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::vector<float> a(kCount), b(kCount), got(kCount, -1.0f);
  for (size_t i = 0; i < kCount; ++i) {
    a[i] = float(i % 1000) + 0.5f;
    b[i] = float(i % 7) - 3.25f;
  }
  DeviceRegion da(kCount * 4, 4), db(kCount * 4, 4);
  ASSERT_TRUE(da.ok() && db.ok());
  // Copy, reduce in place (dst == a) twice, then average, all queued on one stream.
  SMDDP_ASSERT_CUDA(cudaMemcpyAsync(da.data(), a.data(), kCount * 4, cudaMemcpyHostToDevice, st));
  SMDDP_ASSERT_CUDA(cudaMemcpyAsync(db.data(), b.data(), kCount * 4, cudaMemcpyHostToDevice, st));
  reduceCuda(DataType::kFloat32, ReduceOp::kAvg, da.data(), da.data(), db.data(), kCount, st);
  reduceCuda(DataType::kFloat32, ReduceOp::kAvg, da.data(), da.data(), db.data(), kCount, st);
  finishAverageCuda(DataType::kFloat32, da.data(), kCount, 3, st);
  SMDDP_ASSERT_CUDA(cudaMemcpyAsync(got.data(), da.data(), kCount * 4, cudaMemcpyDeviceToHost, st));
  SMDDP_ASSERT_CUDA(cudaStreamSynchronize(st));
  SMDDP_ASSERT_CUDA(cudaStreamDestroy(st));
  for (size_t i = 0; i < kCount; ++i) {
    float want = ((a[i] + b[i]) + b[i]) / 3.0f;
    ASSERT_EQ(std::memcmp(&got[i], &want, 4), 0)
        << "index " << i << ": " << got[i] << " vs " << want;
  }
}

TEST(ReduceCudaStreams, CopyBandwidthIsPlausible) {
  SMDDP_SKIP_WITHOUT_GPU();
  constexpr size_t kBytes = size_t(64) << 20;
  DeviceRegion src(kBytes, 0), dst(kBytes, 0);
  ASSERT_TRUE(src.ok() && dst.ok());
  double gbps = cudaDeviceCopyBandwidth(dst.data(), src.data(), kBytes, 5, nullptr);
  EXPECT_GT(gbps, 10.0) << "device-to-device copy at " << gbps << " GB/s";
  EXPECT_LT(gbps, 100000.0) << "device-to-device copy at " << gbps << " GB/s";
}

TEST(ReduceCudaNoDevice, ValidCallRaisesUnsupported) {
  std::string why;
  if (testing::cudaDeviceUsable(&why)) GTEST_SKIP() << "a CUDA device is present";
  alignas(16) static float buf[4] = {1, 2, 3, 4};
  try {
    reduceCuda(DataType::kFloat32, ReduceOp::kSum, buf, buf, buf, 4, nullptr);
    FAIL() << "reduceCuda returned without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace smddp::reduce
