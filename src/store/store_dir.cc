// SPDX-License-Identifier: Apache-2.0
// The file store's directory (see store_dir.h). Only the store directory itself is checked:
// its parents may well be shared (a root-owned, sticky /tmp), since every file operation goes
// through the descriptor opened here and never resolves the path again.
#include "store/store_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "smddp/error.h"

namespace smddp::store {
namespace {

constexpr size_t kMaxJobId = 256;
constexpr size_t kMaxJobFile = 4096;
constexpr int kClaimAttempts = 16;
const char* const kJobFile = ".job";

std::string modeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Text read from the directory, fit to quote in a message: printable ASCII only.
std::string printable(const std::string& text) {
  std::string out = text.substr(0, kMaxJobId);
  for (auto& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

std::string jobName(const std::string& id) {
  return id.empty() ? "a job without a job id" : "job " + printable(id);
}

// Every missing directory of `path`, created 0700 (whatever the umask adds, it only takes away).
void makeDirs(const std::string& path, const std::string& where) {
  for (size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    const std::string part = path.substr(0, pos);
    if (!part.empty() && part.back() != '/' && ::mkdir(part.c_str(), 0700) != 0 &&
        errno != EEXIST) {
      throw Error(ErrorCode::kStore,
                  where + ": mkdir '" + part + "' failed: " + std::strerror(errno));
    }
    if (pos == std::string::npos) break;
  }
}

void checkOwnerAndMode(const struct stat& st, const std::string& where) {
  const std::string owner =
      "owner uid " + std::to_string(st.st_uid) + ", mode " + modeText(st.st_mode);
  if (st.st_uid != ::geteuid()) {
    throw Error(ErrorCode::kStore, where + ": the directory is another user's (" + owner +
                                       "; this process runs as "
                                       "uid " +
                                       std::to_string(::geteuid()) +
                                       "): a store directory must be its "
                                       "user's own: use a fresh directory");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    throw Error(ErrorCode::kStore,
                where + ": the directory is writable by other users and not sticky (" + owner +
                    "), so they could replace its files: chmod go-w it or use a fresh directory");
  }
}

std::map<std::string, std::string> fieldsOf(const std::string& text) {
  std::map<std::string, std::string> fields;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
    begin = end + 1;
  }
  return fields;
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

}  // namespace

StoreDir::StoreDir(const std::string& path) : path_(path), where_("file store " + path) {
  if (path_.empty()) throw Error(ErrorCode::kInvalidArgument, "file store: empty directory name");
  makeDirs(path_, where_);
  fd_ = Fd(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd_.get() < 0) {
    throw Error(ErrorCode::kStore, where_ + ": open failed: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    throw Error(ErrorCode::kStore, where_ + ": fstat failed: " + std::strerror(errno));
  }
  checkOwnerAndMode(st, where_);
}

void StoreDir::claim(const std::string& jobId) const {
  const auto isPrintable = [](unsigned char c) { return c >= 0x20 && c <= 0x7e; };
  if (jobId.size() > kMaxJobId || !std::all_of(jobId.begin(), jobId.end(), isPrintable)) {
    throw Error(ErrorCode::kInvalidArgument, where_ + ": job id '" + printable(jobId) +
                                                 "' is not up to " + std::to_string(kMaxJobId) +
                                                 " printable ASCII characters");
  }
  const std::string mine =
      "job=" + jobId + "\npid=" + std::to_string(::getpid()) + "\nhost=" + hostName() + "\n";
  // A .job file removed between the failed create and the read (someone cleaning up) is
  // created again; anything else settles in one round.
  for (int attempt = 0; attempt < kClaimAttempts; ++attempt) {
    if (createFileAt(fd(), kJobFile, mine, where_)) return;
    const std::optional<std::string> theirs = readFileAt(fd(), kJobFile, kMaxJobFile, where_);
    if (!theirs) continue;
    auto fields = fieldsOf(*theirs);
    if (fields.count("job") == 0) {
      throw Error(ErrorCode::kStore,
                  where_ + ": its " + kJobFile + " file names no job: use a fresh directory");
    }
    if (fields["job"] == jobId) return;
    throw Error(ErrorCode::kStore, where_ + ": the directory belongs to " + jobName(fields["job"]) +
                                       " (created by pid " + printable(fields["pid"]) +
                                       " on host " + printable(fields["host"]) + "); this is " +
                                       jobName(jobId) + ": use a fresh directory");
  }
  throw Error(ErrorCode::kStore, where_ + ": its " + kJobFile + " file vanished " +
                                     std::to_string(kClaimAttempts) + " times while read");
}

}  // namespace smddp::store
