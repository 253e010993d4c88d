// SPDX-License-Identifier: Apache-2.0
// Safe file operations of the file store (see file_io.h). Temp files are named
// .tmp.<pid>.<64 random bits>: a name planted in advance (a link to a file of the victim's) is
// never opened, only skipped, and cannot be guessed to begin with.
#include "store/file_io.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "smddp/error.h"

namespace smddp::store {
namespace {

constexpr int kTempAttempts = 8;

Error sysError(const std::string& where, const std::string& what, const std::string& name) {
  return Error(ErrorCode::kStore,
               where + ": " + what + " '" + name + "' failed: " + std::strerror(errno));
}

Error notRegular(const std::string& where, const std::string& name, const char* kind) {
  return Error(ErrorCode::kStore, where + ": '" + name + "' is " + kind +
                                      ", not a regular file: refused (the store's files are "
                                      "only ever regular files it wrote itself)");
}

// Opening with O_NOFOLLOW fails with ELOOP on a symbolic link.
Error openError(const std::string& where, const std::string& name) {
  return errno == ELOOP ? notRegular(where, name, "a symbolic link")
                        : sysError(where, "open", name);
}

void requireRegular(int fd, const std::string& where, const std::string& name, struct stat& st) {
  if (::fstat(fd, &st) != 0) throw sysError(where, "fstat", name);
  if (!S_ISREG(st.st_mode)) {
    throw notRegular(where, name, S_ISDIR(st.st_mode) ? "a directory" : "a special file");
  }
}

Error tooLarge(const std::string& where, const std::string& name, uint64_t bytes, size_t cap) {
  return Error(ErrorCode::kStore, where + ": '" + name + "' holds more than the " +
                                      std::to_string(cap) + " bytes a store file may hold (" +
                                      std::to_string(bytes) + " seen): refused");
}

std::string randomSuffix(const std::string& where) {
  uint64_t bits = 0;
  ssize_t got = 0;
  do {
    got = ::getrandom(&bits, sizeof(bits), 0);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof(bits))) throw sysError(where, "getrandom for", ".tmp.*");
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(bits));
  return hex;
}

void writeAll(int fd, const std::string& data, const std::string& where, const std::string& name) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw sysError(where, "write", name);
    off += static_cast<size_t>(n);
  }
}

// A fresh temp file of `dir` holding `data`; returns its name.
std::string writeTempAt(int dir, const std::string& data, const std::string& where) {
  for (int attempt = 0; attempt < kTempAttempts; ++attempt) {
    const std::string name = ".tmp." + std::to_string(::getpid()) + "." + randomSuffix(where);
    Fd fd(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0 && errno == EEXIST) continue;  // planted or drawn twice: draw again
    if (fd.get() < 0) throw sysError(where, "create", name);
    try {
      writeAll(fd.get(), data, where, name);
    } catch (...) {
      ::unlinkat(dir, name.c_str(), 0);
      throw;
    }
    return name;
  }
  throw Error(ErrorCode::kStore, where + ": " + std::to_string(kTempAttempts) +
                                     " temp file names drawn at random all existed already");
}

}  // namespace

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> readFileAt(int dir, const std::string& name, size_t cap,
                                      const std::string& where) {
  // O_NONBLOCK: a FIFO planted under the name must not block the open until a writer comes.
  Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw openError(where, name);
  }
  struct stat st {};
  requireRegular(fd.get(), where, name, st);
  if (static_cast<uint64_t>(st.st_size) > cap) throw tooLarge(where, name, st.st_size, cap);
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    // At most one byte past the cap: enough to tell that the file grew beyond it.
    const size_t want = std::min(sizeof(buf), cap + 1 - out.size());
    const ssize_t n = ::read(fd.get(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw sysError(where, "read", name);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > cap) throw tooLarge(where, name, out.size(), cap);
  }
  return out;
}

void replaceFileAt(int dir, const std::string& name, const std::string& data,
                   const std::string& where) {
  const std::string tmp = writeTempAt(dir, data, where);
  // rename replaces whatever `name` is, a planted link included, without following it.
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    const Error e = sysError(where, "rename into", name);
    ::unlinkat(dir, tmp.c_str(), 0);
    throw e;
  }
}

bool createFileAt(int dir, const std::string& name, const std::string& data,
                  const std::string& where) {
  const std::string tmp = writeTempAt(dir, data, where);
  // link fails with EEXIST when `name` exists in any form: the first creator wins, whole.
  const int rc = ::linkat(dir, tmp.c_str(), dir, name.c_str(), 0);
  const int err = errno;
  ::unlinkat(dir, tmp.c_str(), 0);
  if (rc == 0) return true;
  if (err == EEXIST) return false;
  errno = err;
  throw sysError(where, "create", name);
}

Fd openLockAt(int dir, const std::string& name, const std::string& where) {
  Fd fd(::openat(dir, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (fd.get() < 0) throw openError(where, name);
  struct stat st {};
  requireRegular(fd.get(), where, name, st);
  return fd;
}

}  // namespace smddp::store
