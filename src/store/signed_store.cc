// SPDX-License-Identifier: Apache-2.0
// SignedStore (see signed_store.h).
#include "store/signed_store.h"

#include "common/auth.h"
#include "smddp/error.h"

namespace smddp::store {
namespace {

std::string signature(const std::string& secret, const std::string& key, const std::string& value) {
  std::string message = "smddp-value-v1";
  message += '\0';
  message += std::to_string(key.size());
  message += ':';
  message += key;
  message += value;
  return auth::hmacSha256(secret, message);
}

}  // namespace

std::string sealValue(const std::string& secret, const std::string& key, const std::string& value) {
  return value + signature(secret, key, value);
}

bool openValue(const std::string& secret, const std::string& key, const std::string& stored,
               std::string& value, std::string& why) {
  if (stored.size() < kSignatureBytes) {
    why = "it carries no signature (" + std::to_string(stored.size()) + " B)";
    return false;
  }
  const size_t n = stored.size() - kSignatureBytes;
  std::string candidate = stored.substr(0, n);
  if (!auth::sameProof(stored.substr(n), signature(secret, key, candidate))) {
    why = "its signature does not match this job's secret";
    return false;
  }
  value = std::move(candidate);
  return true;
}

void SignedStore::set(const std::string& key, const std::string& value) {
  inner_->set(key, sealValue(secret_, key, value));
}

std::string SignedStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::string value, why;
  if (openValue(secret_, key, inner_->get(key, timeout), value, why)) return value;
  throw Error(ErrorCode::kStore, "smddp: store key '" + key + "' refused: " + why +
                                     " (written by a process without SMDDP_JOB_SECRET?)");
}

std::shared_ptr<Store> signWithJobSecret(const std::string& secret, std::shared_ptr<Store> inner) {
  if (secret.empty()) return inner;
  return std::make_shared<SignedStore>(secret, std::move(inner));
}

}  // namespace smddp::store

namespace smddp {

std::shared_ptr<Store> signWithJobSecret(std::shared_ptr<Store> inner) {
  return store::signWithJobSecret(auth::configuredJobSecret(), std::move(inner));
}

bool hasJobSecret() { return !auth::configuredJobSecret().empty(); }

std::string sealStoreValue(const std::string& key, const std::string& value) {
  const std::string& secret = auth::configuredJobSecret();
  return secret.empty() ? value : store::sealValue(secret, key, value);
}

std::string openStoreValue(const std::string& key, const std::string& stored) {
  const std::string& secret = auth::configuredJobSecret();
  if (secret.empty()) return stored;
  std::string value, why;
  if (!store::openValue(secret, key, stored, value, why)) {
    throw Error(ErrorCode::kStore, "smddp: store key '" + key + "' refused: " + why +
                                       " (written by a process without SMDDP_JOB_SECRET?)");
  }
  return value;
}

}  // namespace smddp
