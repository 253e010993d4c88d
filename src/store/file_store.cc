// SPDX-License-Identifier: Apache-2.0
// FileStore: a Store in one directory shared by the ranks of one host (or a shared file system).
// Invariants: a value file appears complete or not at all (written to a temp file, then renamed);
// add() is atomic across threads and processes (flock on a per-key lock file, each call with its
// own open file description, so threads of one process exclude each other too).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "smddp/error.h"
#include "smddp/store.h"
#include "store/backoff.h"

namespace smddp {
namespace {

constexpr size_t kMaxEncodedKey = 240;  // file names are limited to 255 bytes
constexpr std::chrono::milliseconds kLockWait{2000};  // longest wait for another add()

std::string sysError(const std::string& what, const std::string& path) {
  return "file store: " + what + " '" + path + "' failed: " + std::strerror(errno);
}

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

void writeAll(int fd, const std::string& data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrorCode::kStore, sysError("write", path));
    off += static_cast<size_t>(n);
  }
}

// Reads the whole file; false when it does not exist (yet).
bool readFile(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw Error(ErrorCode::kStore, sysError("open", path));
  }
  out.clear();
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      throw Error(ErrorCode::kStore, sysError("read", path));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

class FileStore : public Store {
 public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {
    if (dir_.empty()) throw Error(ErrorCode::kInvalidArgument, "file store: empty directory name");
    makeDirs();
  }

  void set(const std::string& key, const std::string& value) override {
    setPath(pathOf(encodeKey(key)), value);
  }

  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::string path = pathOf(encodeKey(key));
    auto deadline = store::Backoff::Clock::now() + timeout;
    store::Backoff backoff(std::chrono::microseconds(50), std::chrono::milliseconds(5));
    std::string value;
    do {
      if (readFile(path, value)) return value;
    } while (backoff.sleepUntil(deadline));
    if (readFile(path, value)) return value;
    throw Error(ErrorCode::kStore, "file store " + dir_ + ": key '" + key + "' not set after " +
                                       std::to_string(timeout.count()) + " ms");
  }

  int64_t add(const std::string& key, int64_t delta) override {
    const std::string name = encodeKey(key);
    const std::string path = pathOf(name);
    std::string text;
    // add(key, 0) on an existing key is a polled read: setPath() renames atomically, so the
    // file always holds a whole value and no lock is needed (the polls no longer queue on flock).
    if (delta == 0 && readFile(path, text)) return parseCounter(key, delta, text);
    std::string lockPath = pathOf(".lock." + name);
    int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(ErrorCode::kStore, sysError("open lock", lockPath));
    // Bounded: a process stopped (SIGSTOP, debugger) while holding the lock must not block the
    // others' stores forever; they fail this add instead, and their callers go on.
    const auto deadline = store::Backoff::Clock::now() + kLockWait;
    store::Backoff backoff(std::chrono::microseconds(50), std::chrono::milliseconds(1));
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if ((err != EWOULDBLOCK && err != EINTR) || !backoff.sleepUntil(deadline)) {
        ::close(fd);
        throw Error(ErrorCode::kStore,
                    err == EWOULDBLOCK ? "file store " + dir_ + ": add('" + key + "'): lock " +
                                             lockPath + " held by another process for " +
                                             std::to_string(kLockWait.count()) + " ms"
                                       : sysError("flock", lockPath));
      }
    }
    int64_t result = 0;
    try {
      result = addLocked(key, path, delta);
    } catch (...) {
      ::close(fd);  // closing the last descriptor releases the lock
      throw;
    }
    ::close(fd);
    return result;
  }

 private:
  std::string pathOf(const std::string& name) const { return dir_ + "/" + name; }

  // Writes a temporary file and renames it over `path`: readers see the old or the new value,
  // whole.
  void setPath(const std::string& path, const std::string& value) {
    std::string tmp = dir_ + "/.tmp." + std::to_string(::getpid()) + "." +
                      std::to_string(counter_.fetch_add(1));
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(ErrorCode::kStore, sysError("create", tmp));
    try {
      writeAll(fd, value, tmp);
    } catch (...) {
      ::close(fd);
      ::unlink(tmp.c_str());
      throw;
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      ::unlink(tmp.c_str());
      throw Error(ErrorCode::kStore, sysError("rename into", path));
    }
  }

  int64_t parseCounter(const std::string& key, int64_t delta, const std::string& text) const {
    char* end = nullptr;
    errno = 0;
    const int64_t value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || errno != 0 || *end != '\0') {
      throw Error(ErrorCode::kStore, "file store " + dir_ + ": add(" + key + ", " +
                                         std::to_string(delta) + "): value '" + text +
                                         "' is not an integer");
    }
    return value;
  }

  int64_t addLocked(const std::string& key, const std::string& path, int64_t delta) {
    std::string text;
    const bool existed = readFile(path, text);
    int64_t value = existed ? parseCounter(key, delta, text) : 0;
    value += delta;
    // add(key, 0) gets here only for a key that did not exist at its lock-free read
    if (delta != 0 || !existed) setPath(path, std::to_string(value));
    return value;
  }

  void makeDirs() {
    for (size_t pos = 1; pos != std::string::npos;) {
      pos = dir_.find('/', pos + 1);
      std::string part = dir_.substr(0, pos);
      if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
        throw Error(ErrorCode::kStore, sysError("mkdir", part));
      }
    }
  }

  std::string dir_;
  std::atomic<uint64_t> counter_{0};
};

}  // namespace

std::shared_ptr<Store> makeFileStore(const std::string& directory) {
  return std::make_shared<FileStore>(directory);
}

}  // namespace smddp
