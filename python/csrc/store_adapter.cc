// SPDX-License-Identifier: Apache-2.0
// c10d::Store -> smddp::Store (see store_adapter.h).
// c10d stores move bytes as std::vector<uint8_t>; the engine uses std::string as a byte string,
// so values round-trip unchanged (embedded NULs included).
#include "store_adapter.h"

#include <exception>
#include <utility>
#include <vector>

#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

[[noreturn]] void rethrowAsStoreError(const char* op, const std::string& key) {
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kStore,
                std::string("smddp: torch store ") + op + " of key '" + key + "' failed: " + e.what());
  }
}

}  // namespace

TorchStoreAdapter::TorchStoreAdapter(c10::intrusive_ptr<::c10d::Store> store)
    : store_(std::move(store)) {}

void TorchStoreAdapter::set(const std::string& key, const std::string& value) {
  try {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
  } catch (...) {
    rethrowAsStoreError("set", key);
  }
}

std::string TorchStoreAdapter::get(const std::string& key, std::chrono::milliseconds timeout) {
  try {
    // wait() bounds the time; get() alone would use the store's own (often longer) timeout.
    store_->wait({key}, timeout);
    auto bytes = store_->get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (...) {
    rethrowAsStoreError("get", key);
  }
}

int64_t TorchStoreAdapter::add(const std::string& key, int64_t delta) {
  try {
    return store_->add(key, delta);
  } catch (...) {
    rethrowAsStoreError("add", key);
  }
}

std::shared_ptr<Store> adaptStore(c10::intrusive_ptr<::c10d::Store> store) {
  return signWithJobSecret(std::make_shared<TorchStoreAdapter>(std::move(store)));
}

}  // namespace smddp::torch_shim
