// SPDX-License-Identifier: Apache-2.0
// The rendezvous key-value store that communicators bootstrap through. The torch shim adapts
// c10d::Store to it; without torch, a file store (one host) or a TCP store (several hosts) serves.
// Invariant: every blocking call is bounded by a timeout and throws Error(kStore) when it expires.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace smddp {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits until the key exists, then returns its value.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Atomically adds delta to the integer stored at key (0 when absent) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
};

// One directory shared by every rank of one host; values are files written atomically, private
// to this user (0600; directories it creates 0700). The directory must be this user's own and not
// writable by other users unless sticky; values are at most 64 MiB. A job id, when given, is
// written into the directory's .job file by the first store: a store of another job (or one
// without an id, where the first had one, and vice versa) is refused at once, naming both.
// Throws Error(kStore) on any of these, Error(kInvalidArgument) for a job id longer than 256
// bytes or not printable ASCII.
std::shared_ptr<Store> makeFileStore(const std::string& directory);
std::shared_ptr<Store> makeFileStore(const std::string& directory, const std::string& jobId);

// A small TCP store: the server side (one process of the job) serves every client, itself included.
// host may be a name or an address; port 0 with isServer picks a free port (see tcpStorePort()).
// Every connection starts with a handshake; with the job secret (SMDDP_JOB_SECRET or
// SMDDP_JOB_SECRET_FILE) it proves both sides hold it, and the server serves no one else.
std::shared_ptr<Store> makeTcpStore(const std::string& host, int port, bool isServer,
                                    std::chrono::milliseconds connectTimeout);
// The same with an explicit job secret ("": none), whatever the environment says.
std::shared_ptr<Store> makeTcpStore(const std::string& host, int port, bool isServer,
                                    std::chrono::milliseconds connectTimeout,
                                    const std::string& jobSecret);
// The port a TCP store listens on or is connected to; -1 for other stores.
int tcpStorePort(const Store& store);

// With the job secret of this process's settings (SMDDP_JOB_SECRET or SMDDP_JOB_SECRET_FILE), a
// view of `inner` in which every value written is signed (HMAC-SHA256 over key and value) and
// every value read must carry a valid signature, else get() throws Error(kStore) naming the key;
// without one, `inner` itself. For stores smddp does not guard itself (torch's).
std::shared_ptr<Store> signWithJobSecret(std::shared_ptr<Store> inner);
// Whether this process has a job secret.
bool hasJobSecret();
// What signWithJobSecret's store writes for `value` under `key`, and reads back: sealed values
// for code that moves bytes through a store by other means (torch_smddp's Python). openStoreValue
// throws Error(kStore) naming the key for a missing or wrong signature. Both are the identity
// without a job secret.
std::string sealStoreValue(const std::string& key, const std::string& value);
std::string openStoreValue(const std::string& key, const std::string& stored);

// Prepends prefix + "/" to every key, so several communicators can share one store.
std::shared_ptr<Store> makePrefixStore(const std::string& prefix, std::shared_ptr<Store> store);

}  // namespace smddp
