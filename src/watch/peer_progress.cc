// SPDX-License-Identifier: Apache-2.0
// PeerProgress: the text of one progress beacon, readable in the store as it is:
//   hb 42
//   called 17
//   completed 16
//   sig 16 all_reduce(float32, 1024, sum) [ring]
// Decoding is lenient: an unknown line is skipped, so newer ranks may add fields.
#include <sstream>

#include "watch/progress_beacon.h"

namespace smddp::watch {

std::string PeerProgress::encode() const {
  std::string out = "hb " + std::to_string(heartbeat) + "\ncalled " + std::to_string(called) +
                    "\ncompleted " + std::to_string(completed) + "\nport " +
                    std::to_string(port) + "\n";
  for (const auto& [seq, text] : recent) out += "sig " + std::to_string(seq) + " " + text + "\n";
  return out;
}

PeerProgress PeerProgress::decode(const std::string& text) {
  PeerProgress p;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string field = line.substr(0, space);
    const std::string rest = line.substr(space + 1);
    try {
      if (field == "hb") {
        p.heartbeat = std::stoull(rest);
        p.present = true;
      } else if (field == "called") {
        p.called = std::stoull(rest);
      } else if (field == "completed") {
        p.completed = std::stoull(rest);
      } else if (field == "port") {
        const int port = std::stoi(rest);
        p.port = port > 0 && port <= 65535 ? port : 0;  // a forged port is never probed
      } else if (field == "sig") {
        // A beacon publishes at most kMaxRecent signatures of bounded length: a value written by
        // anyone else cannot make the reader hold more.
        const size_t cut = rest.find(' ');
        if (cut != std::string::npos && p.recent.size() < kMaxRecent &&
            rest.size() - cut - 1 <= kMaxSignatureText) {
          p.recent.emplace_back(std::stoull(rest), rest.substr(cut + 1));
        }
      }
    } catch (const std::exception&) {
      // a malformed number: skip the line
    }
  }
  return p;
}

const std::string* PeerProgress::signatureAt(uint64_t seq) const {
  for (const auto& [s, text] : recent) {
    if (s == seq) return &text;
  }
  return nullptr;
}

std::string PeerProgress::summary() const {
  if (!present) return "no beacon";
  std::string s = "heartbeat " + std::to_string(heartbeat) + ", called " + std::to_string(called) +
                  ", completed " + std::to_string(completed);
  if (!recent.empty()) {
    s += ", last called #" + std::to_string(recent.back().first) + " " + recent.back().second;
  }
  return s;
}

}  // namespace smddp::watch
