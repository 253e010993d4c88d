// SPDX-License-Identifier: Apache-2.0
// The client's half of the TCP store handshake (format in store_wire.h).
// Invariant: a client with a job secret talks only to a server that proves it holds the same one;
// a client without one is told plainly when the server requires it.
#include "common/auth.h"
#include "smddp/error.h"
#include "store/store_wire.h"

namespace smddp::store {

void clientHandshake(int fd, const std::string& secret, Clock::time_point deadline,
                     const std::string& what) {
  auto fail = [&what](const std::string& why) {
    throw Error(ErrorCode::kStore, what + ": " + why);
  };
  ClientHello hello;
  hello.flags = secret.empty() ? 0 : kFlagSecret;
  hello.nonce = auth::randomBytes(kNonce);
  char buf[kServerHello];
  if (!sendAll(fd, encodeClientHello(hello), deadline, what) ||
      !recvAll(fd, buf, sizeof(buf), deadline, what)) {
    fail("no handshake from the server in time (is it an smddp store?)");
  }
  ServerHello answer;
  std::string why;
  if (!decodeServerHello(buf, answer, why)) fail("the server is " + why);
  if (answer.verdict == HelloVerdict::kVersion) {
    fail("the server speaks store protocol version " + std::to_string(answer.version) +
         ", this process version " + std::to_string(kProtocolVersion) +
         " (every process of a job must run the same smddp)");
  }
  if (answer.verdict == HelloVerdict::kSecretRequired) {
    fail("the server requires the job secret, which this process lacks (set SMDDP_JOB_SECRET or "
         "SMDDP_JOB_SECRET_FILE as for the rest of the job)");
  }
  if (answer.verdict != HelloVerdict::kOk) fail("the server refused the handshake");
  if (secret.empty()) return;
  if ((answer.flags & kFlagSecret) == 0) {
    fail("this process holds a job secret but the server does not ask for one: refusing to "
         "trust it (another job's store, or one started without SMDDP_JOB_SECRET)");
  }
  if (!auth::sameProof(answer.proof, auth::proof(secret, "server", answer.nonce, hello.nonce))) {
    fail("the server does not hold this job's secret (another job's store?)");
  }
  char verdict = 0;
  if (!sendAll(fd, auth::proof(secret, "client", hello.nonce, answer.nonce), deadline, what) ||
      !recvAll(fd, &verdict, 1, deadline, what)) {
    fail("no answer to this process's proof in time");
  }
  if (verdict != static_cast<char>(HelloVerdict::kOk)) {
    fail("the server rejected this process's job secret");
  }
}

}  // namespace smddp::store
