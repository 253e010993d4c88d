// SPDX-License-Identifier: Apache-2.0
// The file store's file operations, each relative to the store directory's descriptor, so that a
// path is resolved once, when the directory is opened. Invariants: nothing follows a symbolic
// link (O_NOFOLLOW everywhere); a file is created only exclusively (O_EXCL), private (0600) and
// under an unpredictable name, then renamed or linked into place, whole; a read takes regular
// files only and never more bytes than its cap, whatever size the file claims or grows to.
// `where` ("file store /dir") opens every error message.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace smddp::store {

// A descriptor owned once: closed when it goes.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }

 private:
  int fd_;
};

// The whole of regular file `name` in `dir`, or nullopt when there is none. Throws Error(kStore)
// when it is a symbolic link or not a regular file, or holds more than `cap` bytes.
std::optional<std::string> readFileAt(int dir, const std::string& name, size_t cap,
                                      const std::string& where);

// Replaces `name` by a file holding `data`, atomically: readers see the old or the new content.
void replaceFileAt(int dir, const std::string& name, const std::string& data,
                   const std::string& where);

// Creates `name` holding `data` unless it exists, atomically (readers never see it partly
// written). Returns false, changing nothing, when it existed.
bool createFileAt(int dir, const std::string& name, const std::string& data,
                  const std::string& where);

// Opens `name` for flock, created empty and 0600 when missing; a regular file only.
Fd openLockAt(int dir, const std::string& name, const std::string& where);

}  // namespace smddp::store
