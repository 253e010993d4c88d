// SPDX-License-Identifier: Apache-2.0
// The job secret and what smddp proves with it. With a secret (SMDDP_JOB_SECRET or the file named
// by SMDDP_JOB_SECRET_FILE) every store connection is a challenge-response: each side sends a
// fresh nonce and proves it knows the secret by an HMAC-SHA256 over both nonces and its role, so
// a process without the secret can neither read nor write the job's state, and a recorded
// exchange is worth nothing on another connection. The cryptography is OpenSSL's libcrypto.
// Invariant: the secret never leaves this process (only HMACs of fresh nonces do); proofs are
// compared in constant time.
#pragma once

#include <cstddef>
#include <string>

namespace smddp::auth {

constexpr size_t kNonceBytes = 16;
constexpr size_t kProofBytes = 32;  // HMAC-SHA256
constexpr size_t kMaxSecretBytes = 4096;

// `bytes` bytes from the system's cryptographic generator; throws Error(kInternal) on failure.
std::string randomBytes(size_t bytes);

// HMAC-SHA256(key, message), 32 bytes.
std::string hmacSha256(const std::string& key, const std::string& message);

// Proof that the sender holds `secret`, bound to both nonces and the sender's role ("server" or
// "client"): a server's proof cannot be replayed as a client's.
std::string proof(const std::string& secret, const char* role, const std::string& ownNonce,
                  const std::string& peerNonce);

// Constant-time equality of two proofs (false when the sizes differ).
bool sameProof(const std::string& a, const std::string& b);

// The job secret from the two settings: `value` (SMDDP_JOB_SECRET) wins; else the contents of
// `file` (SMDDP_JOB_SECRET_FILE) with one trailing newline dropped. Refuses (Error naming the
// variable) a file that cannot be read, is not a regular file, is readable by group or others,
// is empty or larger than kMaxSecretBytes, and a secret shorter than 16 bytes. "" when neither is
// set (no authentication).
std::string loadJobSecret(const std::string& value, const std::string& file);

// The job secret of this process's settings (Config::global()), loaded once; "" when none.
const std::string& configuredJobSecret();

}  // namespace smddp::auth
