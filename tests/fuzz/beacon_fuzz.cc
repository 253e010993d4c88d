// SPDX-License-Identifier: Apache-2.0
// Fuzz target: PeerProgress::decode, the text of a peer's progress beacon as read from the store
// (any process that can write the store writes it). Decoding must never crash, and what it
// decodes must come back unchanged through encode() and decode() again: the beacon thread reads
// the fields it published, so a field the codec cannot carry is a bug too.
//
// With SMDDP_FUZZ_PLANTED_BUG (the beacon_planted_fuzz variant only; scripts/fuzz.sh --planted)
// the harness also copies the newest signature into a fixed buffer without checking its length:
// the self-check that a fault past the decoder is found.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "watch/progress_beacon.h"

namespace {

using smddp::watch::PeerProgress;

bool same(const PeerProgress& a, const PeerProgress& b) {
  return a.heartbeat == b.heartbeat && a.called == b.called && a.completed == b.completed &&
         a.port == b.port && a.recent == b.recent;
}

#ifdef SMDDP_FUZZ_PLANTED_BUG
// Planted: trusts the signature to fit 48 bytes (a stack-buffer-overflow for ASan to catch).
__attribute__((noinline)) size_t plantedCopy(const std::string& sig) {
  char last[48];
  std::memcpy(last, sig.data(), sig.size());
  volatile char first = last[0];
  return sig.size() + static_cast<size_t>(first != 0);
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const PeerProgress p = PeerProgress::decode(text);
  const PeerProgress again = PeerProgress::decode(p.encode());
  // encode() always writes the heartbeat, so `again` is present even when `p` was not.
  if (!again.present || !same(p, again)) std::abort();
  for (const auto& [seq, sig] : p.recent) {
    const std::string* found = p.signatureAt(seq);
    if (found == nullptr) std::abort();
  }
  (void)p.summary();
#ifdef SMDDP_FUZZ_PLANTED_BUG
  if (!p.recent.empty()) (void)plantedCopy(p.recent.back().second);
#endif
  return 0;
}
