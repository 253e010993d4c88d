// SPDX-License-Identifier: Apache-2.0
// HMAC proofs and the job secret (see auth.h). OpenSSL does the cryptography.
#include "common/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/config.h"
#include "smddp/error.h"

namespace smddp::auth {
namespace {

constexpr size_t kMinSecretBytes = 16;

[[noreturn]] void refuse(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "smddp: " + what);
}

std::string readSecretFile(const std::string& file) {
  const std::string var = "SMDDP_JOB_SECRET_FILE=" + file;
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) refuse(var + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(var + ": not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    refuse(var + ": readable or writable by group or others (mode " + mode + "); chmod 600 it");
  }
  if (st.st_size > static_cast<off_t>(kMaxSecretBytes + 1)) {
    ::close(fd);
    refuse(var + ": larger than " + std::to_string(kMaxSecretBytes) + " bytes");
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  if (!out.empty() && out.back() == '\r') out.pop_back();
  return out;
}

}  // namespace

std::string randomBytes(size_t bytes) {
  std::string out(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(bytes)) != 1) {
    throw Error(ErrorCode::kInternal, "smddp: the system's random generator failed");
  }
  return out;
}

std::string hmacSha256(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), out,
           &len) == nullptr ||
      len != kProofBytes) {
    throw Error(ErrorCode::kInternal, "smddp: HMAC-SHA256 failed");
  }
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string proof(const std::string& secret, const char* role, const std::string& ownNonce,
                  const std::string& peerNonce) {
  return hmacSha256(secret, std::string("smddp-v1-") + role + '\0' + ownNonce + peerNonce);
}

bool sameProof(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string loadJobSecret(const std::string& value, const std::string& file) {
  std::string secret = value;
  std::string from = "SMDDP_JOB_SECRET";
  if (secret.empty() && !file.empty()) {
    secret = readSecretFile(file);
    from = "SMDDP_JOB_SECRET_FILE=" + file;
    if (secret.empty()) refuse(from + ": the file is empty");
  }
  if (secret.empty()) return secret;
  if (secret.size() < kMinSecretBytes || secret.size() > kMaxSecretBytes) {
    refuse(from + ": a job secret must hold " + std::to_string(kMinSecretBytes) + " to " +
           std::to_string(kMaxSecretBytes) + " bytes (got " + std::to_string(secret.size()) +
           "); e.g. openssl rand -hex 32");
  }
  return secret;
}

const std::string& configuredJobSecret() {
  static const std::string secret =
      loadJobSecret(Config::global().jobSecret, Config::global().jobSecretFile);
  return secret;
}

}  // namespace smddp::auth
