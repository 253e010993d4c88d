// SPDX-License-Identifier: Apache-2.0
// PrefixStore: a view of another store with every key under "<prefix>/", so several communicators
// (or tests) share one store without seeing each other's keys. Exposed so tcpStorePort can look
// through it.
#pragma once

#include <memory>
#include <string>

#include "smddp/store.h"

namespace smddp::store {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> inner)
      : prefix_(std::move(prefix) + "/"), inner_(std::move(inner)) {}

  void set(const std::string& key, const std::string& value) override {
    inner_->set(prefix_ + key, value);
  }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    return inner_->get(prefix_ + key, timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return inner_->add(prefix_ + key, delta);
  }
  const Store& inner() const { return *inner_; }

 private:
  std::string prefix_;
  std::shared_ptr<Store> inner_;
};

}  // namespace smddp::store
