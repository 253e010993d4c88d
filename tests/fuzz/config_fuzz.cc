// SPDX-License-Identifier: Apache-2.0
// Fuzz target: Config::fromMap, the parser of every SMDDP_* variable (and the foreign ones smddp
// honours), whose values come from whoever launches the job. The input is lines NAME=VALUE; a
// NAME that smddp does not read is mapped onto one it does (by its bytes), so every mutation lands
// on a real variable. fromMap may refuse a value with smddp::Error; anything else escaping, a
// crash, undefined behaviour or a hang is a bug, and so is an accepted Config outside the ranges
// fromMap promises to check.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/config.h"
#include "smddp/error.h"

namespace {

using smddp::Config;

const std::vector<std::string>& knownNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& doc : Config::documentation()) out.emplace_back(doc.name);
    for (const char* foreign :
         {"FI_PROVIDER", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
          "SMDDP_SHM", "SMDDP_SHM_SLOT_BYTES", "SMDDP_SHM_EAGER_BYTES"}) {
      out.emplace_back(foreign);
    }
    return out;
  }();
  return names;
}

std::string variableFor(const std::string& name) {
  static const std::set<std::string> known(knownNames().begin(), knownNames().end());
  if (known.count(name)) return name;
  size_t sum = 0;
  for (unsigned char c : name) sum += c;
  return knownNames()[sum % knownNames().size()];
}

std::map<std::string, std::string> environmentOf(const std::string& text) {
  std::map<std::string, std::string> env;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[variableFor(line.substr(0, eq))] = line.substr(eq + 1);
    at = end + 1;
  }
  return env;
}

// What fromMap promises of a Config it returns (config.cc's checks, restated).
bool inRange(const Config& c) {
  return c.timeoutMs > 0 && c.segmentBytes >= 64 && (c.arena == 0 || c.arena == 1) &&
         c.arenaSlotBytes >= 4096 && c.arenaSlotBytes <= (int64_t{1} << 30) &&
         c.arenaEagerBytes >= 0 && c.arenaEagerBytes <= 65536 && c.arenaMailBytes >= 0 &&
         c.arenaMailBytes <= 65536 && c.stagingBytes >= 4096 && c.spinUs >= -1 &&
         (c.deviceIpc == 0 || c.deviceIpc == 1) && (c.fiHmem == 0 || c.fiHmem == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto env = environmentOf(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const Config c = Config::fromMap(env);
    if (!inRange(c)) std::abort();
  } catch (const smddp::Error& e) {
    if (e.code() != smddp::ErrorCode::kInvalidArgument) std::abort();
  }
  return 0;
}
