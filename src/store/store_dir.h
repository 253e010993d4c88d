// SPDX-License-Identifier: Apache-2.0
// The directory of a file store, made safe to keep in a shared place (/tmp, a shared file
// system). Invariants: it is opened once and every file operation goes through that descriptor;
// it belongs to this process's user and no other user can write in it (or it is sticky); the
// directories the store creates are 0700; and it serves one job: its .job file, written once by
// the first store, names that job, and a store of another job is refused at once.
#pragma once

#include <string>

#include "store/file_io.h"

namespace smddp::store {

class StoreDir {
 public:
  // Creates whatever of `path` is missing (mode 0700), opens it and checks its owner and mode.
  // Throws Error(kStore) naming the directory, its owner and its mode.
  explicit StoreDir(const std::string& path);

  // Claims the directory for `jobId` ("": no job id) when it has no .job file yet, else checks
  // that the job that claimed it is this one. Throws Error(kStore) naming both jobs otherwise,
  // Error(kInvalidArgument) for a job id that is longer than 256 bytes or not printable ASCII.
  void claim(const std::string& jobId) const;

  int fd() const { return fd_.get(); }
  // "file store <path>", the start of every message about this directory.
  const std::string& where() const { return where_; }

 private:
  std::string path_;
  std::string where_;
  Fd fd_;
};

}  // namespace smddp::store
