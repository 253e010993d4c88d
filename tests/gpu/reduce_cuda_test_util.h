// SPDX-License-Identifier: Apache-2.0
// Helpers for the GPU tests: the self-skip when no CUDA device is usable, a checked cudaMalloc'd
// region with poisoned guard bytes on both sides, and a CUDA error check that fails the test.
// Invariant: every device allocation is freed by its owner's destructor, also on test failure.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace smddp::reduce::testing {

// Skips the test, saying why, when the runtime finds no device (no driver, no GPU).
#define SMDDP_SKIP_WITHOUT_GPU()                                                     \
  do {                                                                               \
    std::string why_;                                                                \
    if (!::smddp::reduce::testing::cudaDeviceUsable(&why_))                          \
      GTEST_SKIP() << "no CUDA device is usable (" << why_ << "); GPU test skipped"; \
  } while (0)

#define SMDDP_ASSERT_CUDA(expr)                                                \
  do {                                                                         \
    cudaError_t err_ = (expr);                                                 \
    ASSERT_EQ(err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(err_); \
  } while (0)

inline bool cudaDeviceUsable(std::string* why) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  if (n == 0) *why = "cudaGetDeviceCount returned 0";
  return n > 0;
}

constexpr uint8_t kPoison = 0xA5;
constexpr size_t kGuardBytes = 256;

// Device memory [guard | data (offset + bytes) | guard], all poisoned at creation.
class DeviceRegion {
 public:
  DeviceRegion(size_t dataBytes, size_t offsetBytes)
      : offset_(offsetBytes), bytes_(dataBytes), total_(2 * kGuardBytes + offsetBytes + dataBytes) {
    if (cudaMalloc(&base_, total_) != cudaSuccess ||
        cudaMemset(base_, kPoison, total_) != cudaSuccess)
      base_ = nullptr;
  }
  ~DeviceRegion() { cudaFree(base_); }
  DeviceRegion(const DeviceRegion&) = delete;
  DeviceRegion& operator=(const DeviceRegion&) = delete;

  bool ok() const { return base_ != nullptr; }
  void* data() const { return static_cast<uint8_t*>(base_) + kGuardBytes + offset_; }
  cudaError_t upload(const void* host) const {
    return bytes_ ? cudaMemcpy(data(), host, bytes_, cudaMemcpyHostToDevice) : cudaSuccess;
  }
  // The whole region back; data() is at kGuardBytes + offset.
  std::vector<uint8_t> download(cudaError_t* err) const {
    std::vector<uint8_t> out(total_);
    *err = cudaMemcpy(out.data(), base_, total_, cudaMemcpyDeviceToHost);
    return out;
  }
  // Index of the first guard/offset byte that is no longer poisoned, or -1.
  long firstDamagedGuard(const std::vector<uint8_t>& host) const {
    size_t dataStart = kGuardBytes + offset_;
    for (size_t i = 0; i < total_; ++i) {
      bool inData = i >= dataStart && i < dataStart + bytes_;
      if (!inData && host[i] != kPoison) return long(i);
    }
    return -1;
  }
  size_t dataStart() const { return kGuardBytes + offset_; }

 private:
  void* base_ = nullptr;
  size_t offset_, bytes_, total_;
};

}  // namespace smddp::reduce::testing
