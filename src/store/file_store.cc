// SPDX-License-Identifier: Apache-2.0
// FileStore: a Store in one directory shared by the ranks of one host (or a shared file system).
// Invariants: a value file appears complete or not at all (written to a temp file, then renamed);
// add() is atomic across threads and processes (flock on a per-key lock file, each call with its
// own open file description, so threads of one process exclude each other too); no value larger
// than kMaxValue is written or read; the directory is safe to keep in a shared place and serves
// one job (store_dir.h, file_io.h).
#include <sys/file.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "smddp/error.h"
#include "smddp/store.h"
#include "store/backoff.h"
#include "store/file_io.h"
#include "store/limits.h"
#include "store/store_dir.h"

namespace smddp {
namespace {

constexpr size_t kMaxEncodedKey = 240;                // file names are limited to 255 bytes
constexpr std::chrono::milliseconds kLockWait{2000};  // longest wait for another add()

// Keys may hold '/', '.', NULs...: every byte outside [A-Za-z0-9_-] becomes %XX, and the "k_"
// prefix keeps encoded names apart from the temp and lock files.
std::string encodeKey(const std::string& key) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "k_";
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (out.size() > kMaxEncodedKey) {
    throw Error(ErrorCode::kInvalidArgument,
                "file store: key '" + key + "' is too long (" + std::to_string(out.size()) +
                    " bytes encoded, at most " + std::to_string(kMaxEncodedKey) + ")");
  }
  return out;
}

class FileStore : public Store {
 public:
  FileStore(const std::string& dir, const std::string& jobId) : dir_(dir) { dir_.claim(jobId); }

  void set(const std::string& key, const std::string& value) override {
    const std::string name = encodeKey(key);
    if (value.size() > store::kMaxValue) {
      throw Error(ErrorCode::kInvalidArgument,
                  dir_.where() + ": set('" + key + "'): a value of " +
                      std::to_string(value.size()) + " bytes is larger than the " +
                      std::to_string(store::kMaxValue) + " a store value may be");
    }
    store::replaceFileAt(dir_.fd(), name, value, dir_.where());
  }

  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    const std::string name = encodeKey(key);
    auto deadline = store::Backoff::Clock::now() + timeout;
    store::Backoff backoff(std::chrono::microseconds(50), std::chrono::milliseconds(5));
    do {
      if (auto value = readValue(name)) return *value;
    } while (backoff.sleepUntil(deadline));
    if (auto value = readValue(name)) return *value;
    throw Error(ErrorCode::kStore, dir_.where() + ": key '" + key + "' not set after " +
                                       std::to_string(timeout.count()) + " ms");
  }

  int64_t add(const std::string& key, int64_t delta) override {
    const std::string name = encodeKey(key);
    // add(key, 0) on an existing key is a polled read: set() renames atomically, so the file
    // always holds a whole value and no lock is needed (the polls no longer queue on flock).
    if (delta == 0) {
      if (auto text = readValue(name)) return parseCounter(key, delta, *text);
    }
    const std::string lockName = ".lock." + name;
    // Closing the last descriptor (fd going) releases the lock, on every path.
    const store::Fd fd = store::openLockAt(dir_.fd(), lockName, dir_.where());
    // Bounded: a process stopped (SIGSTOP, debugger) while holding the lock must not block the
    // others' stores forever; they fail this add instead, and their callers go on.
    const auto deadline = store::Backoff::Clock::now() + kLockWait;
    store::Backoff backoff(std::chrono::microseconds(50), std::chrono::milliseconds(1));
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if ((err != EWOULDBLOCK && err != EINTR) || !backoff.sleepUntil(deadline)) {
        throw Error(
            ErrorCode::kStore,
            dir_.where() + ": add('" + key + "'): " +
                (err == EWOULDBLOCK ? "lock " + lockName + " held by another process for " +
                                          std::to_string(kLockWait.count()) + " ms"
                                    : "flock '" + lockName + "' failed: " + std::strerror(err)));
      }
    }
    return addLocked(key, name, delta);
  }

 private:
  std::optional<std::string> readValue(const std::string& name) const {
    return store::readFileAt(dir_.fd(), name, store::kMaxValue, dir_.where());
  }

  int64_t parseCounter(const std::string& key, int64_t delta, const std::string& text) const {
    char* end = nullptr;
    errno = 0;
    const int64_t value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || errno != 0 || *end != '\0') {
      // Quoted in part: the value may be up to kMaxValue bytes of anything.
      const std::string shown = text.size() > 64 ? text.substr(0, 64) + "..." : text;
      throw Error(ErrorCode::kStore, dir_.where() + ": add(" + key + ", " + std::to_string(delta) +
                                         "): value '" + shown + "' is not an integer");
    }
    return value;
  }

  int64_t addLocked(const std::string& key, const std::string& name, int64_t delta) {
    const std::optional<std::string> text = readValue(name);
    const int64_t before = text ? parseCounter(key, delta, *text) : 0;
    int64_t value = 0;
    if (__builtin_add_overflow(before, delta, &value)) {
      throw Error(ErrorCode::kStore, dir_.where() + ": add(" + key + ", " + std::to_string(delta) +
                                         "): " + std::to_string(before) + " + " +
                                         std::to_string(delta) + " overflows int64");
    }
    // add(key, 0) gets here only for a key that did not exist at its lock-free read
    if (delta != 0 || !text) {
      store::replaceFileAt(dir_.fd(), name, std::to_string(value), dir_.where());
    }
    return value;
  }

  store::StoreDir dir_;
};

}  // namespace

std::shared_ptr<Store> makeFileStore(const std::string& directory) {
  return makeFileStore(directory, std::string());
}

std::shared_ptr<Store> makeFileStore(const std::string& directory, const std::string& jobId) {
  return std::make_shared<FileStore>(directory, jobId);
}

}  // namespace smddp
