// SPDX-License-Identifier: Apache-2.0
// SignedStore: a view of a store that smddp does not guard itself (torch's TCPStore accepts
// anyone who reaches its port) in which every value smddp writes carries an HMAC-SHA256 of the
// job secret over its key and bytes, and every value smddp reads must carry a valid one. So a
// process without the secret cannot forge a bootstrap address, a beacon, a failure or a
// reconfigure handle: a forged or foreign value is refused with an error naming the key (the
// readers treat it as unreadable), never used.
// Limits: counters (add) carry no signature; values stay readable by whoever reaches the store
// (signing is not encryption); a signed value can be replayed under the same key.
#pragma once

#include <memory>
#include <string>

#include "smddp/store.h"

namespace smddp::store {

constexpr size_t kSignatureBytes = 32;

// value + its signature under `key` (what goes into the store).
std::string sealValue(const std::string& secret, const std::string& key, const std::string& value);
// The value of a sealed `stored`; false (and `why`) when the signature is missing or wrong.
bool openValue(const std::string& secret, const std::string& key, const std::string& stored,
               std::string& value, std::string& why);

class SignedStore : public Store {
 public:
  SignedStore(std::string secret, std::shared_ptr<Store> inner)
      : secret_(std::move(secret)), inner_(std::move(inner)) {}

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override { return inner_->add(key, delta); }

 private:
  std::string secret_;
  std::shared_ptr<Store> inner_;
};

// `inner` itself without a secret, else a SignedStore over it.
std::shared_ptr<Store> signWithJobSecret(const std::string& secret, std::shared_ptr<Store> inner);

}  // namespace smddp::store
