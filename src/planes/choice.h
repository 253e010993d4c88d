// SPDX-License-Identifier: Apache-2.0
// Which device plane a communicator's CUDA calls take, decided once, at its first CUDA call,
// from what every rank says of itself (published through the group's store, so every rank
// decides the same): NCCL when every rank has a usable NCCL of the same version and a device of
// its own (no two ranks on one device UUID: NCCL refuses them); smddp's own plane otherwise.
// SMDDP_GPU_PLANE=nccl|smddp forces one; every rank must ask for the same.
// Invariant: choosePlane is a pure function of the facts, identical on every rank.
#pragma once

#include <string>
#include <vector>

namespace smddp::planes {

enum class Plane { kSmddp, kNccl };
const char* toString(Plane plane);  // "smddp", "nccl"

struct PlaneFacts {
  std::string host;
  std::string uuid;    // the rank's device ("GPU-...", "fake-...")
  std::string forced;  // SMDDP_GPU_PLANE: "auto", "nccl", "smddp"
  int ncclVersion = 0;  // 0: no usable NCCL
  std::string ncclWhy;  // why not, when ncclVersion is 0

  std::string encode() const;  // one line per field: what the store carries
  // Throws std::invalid_argument naming the bad field.
  static PlaneFacts decode(const std::string& text);
};

struct PlaneChoice {
  Plane plane = Plane::kSmddp;
  std::string why;    // "every rank holds a GPU of its own and NCCL 2.30.7", "ranks 0 and 1 share ..."
  std::string error;  // not empty: the ranks cannot agree (SMDDP_GPU_PLANE differs, or forces
                      // NCCL where a rank has none); the first CUDA call fails with it
};

PlaneChoice choosePlane(const std::vector<PlaneFacts>& ranks);

}  // namespace smddp::planes
