// SPDX-License-Identifier: Apache-2.0
// Adapts the c10d::Store that torch hands to a backend (already a PrefixStore per group) to the
// engine's smddp::Store, which the communicator bootstraps through.
// Invariant: every blocking call is bounded (get waits at most its timeout) and every failure of
// the torch store surfaces as smddp::Error(kStore) naming the key.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <memory>
#include <string>

#include "smddp/store.h"
#include "torch_compat.h"

namespace smddp::torch_shim {

class TorchStoreAdapter : public Store {
 public:
  explicit TorchStoreAdapter(c10::intrusive_ptr<::c10d::Store> store);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;

 private:
  c10::intrusive_ptr<::c10d::Store> store_;
};

// With a job secret (SMDDP_JOB_SECRET), every value smddp writes is signed and every value it
// reads must be (smddp/store.h): torch's store admits anyone who reaches its port.
std::shared_ptr<Store> adaptStore(c10::intrusive_ptr<::c10d::Store> store);

}  // namespace smddp::torch_shim
