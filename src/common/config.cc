// SPDX-License-Identifier: Apache-2.0
// Parses the SMDDP_* environment once. This is the only file of smddp that calls getenv.
#include "common/config.h"

#include <cctype>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <utility>

#include "smddp/error.h"

namespace smddp {
namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void bad(const std::string& name, const std::string& value, const char* want) {
  throw Error(ErrorCode::kInvalidArgument,
              "smddp: bad value '" + value + "' for " + name + ": expected " + want);
}

int64_t parseInt(const std::string& name, const std::string& text) {
  size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &pos, 10);
  } catch (const std::exception&) {
    bad(name, text, "an integer");
  }
  if (pos != text.size()) bad(name, text, "an integer");
  return v;
}

void assign(int64_t& out, const std::string& name, const std::string& text, const char* type) {
  out = std::string(type) == "Bytes" ? parseBytes(name, text) : parseInt(name, text);
}
void assign(std::string& out, const std::string&, const std::string& text, const char*) { out = text; }
void assign(LogLevel& out, const std::string& name, const std::string& text, const char*) {
  try {
    out = parseLogLevel(text);
  } catch (const Error&) {
    bad(name, text, "NONE, WARN, INFO or TRACE");
  }
}

std::string defaultText(int64_t v) { return std::to_string(v); }
std::string defaultText(const char* v) { return v; }

// Variables renamed since they were documented: {current, former}. The former name is read when
// the current one is unset or empty.
constexpr std::pair<const char*, const char*> kFormerNames[] = {
    {"SMDDP_ARENA", "SMDDP_SHM"},
    {"SMDDP_ARENA_SLOT_BYTES", "SMDDP_SHM_SLOT_BYTES"},
    {"SMDDP_ARENA_EAGER_BYTES", "SMDDP_SHM_EAGER_BYTES"},
};

std::map<std::string, std::string> readEnvironment() {
  std::map<std::string, std::string> env;
  auto grab = [&env](const char* name) {
    if (const char* v = std::getenv(name)) env[name] = v;
  };
#define SMDDP_GRAB(member, NAME, type, def, doc) grab(NAME);
  SMDDP_CONFIG_VARS(SMDDP_GRAB)
#undef SMDDP_GRAB
  // Foreign variables that smddp honours: libfabric's provider choice and MPI launchers' ranks.
  for (const char* name : {"FI_PROVIDER", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "PMI_RANK", "PMI_SIZE"}) {
    grab(name);
  }
  for (const auto& [current, former] : kFormerNames) grab(former);
  return env;
}

}  // namespace

LogLevel parseLogLevel(const std::string& text) {
  const std::string t = upper(text);
  if (t == "NONE") return LogLevel::kNone;
  if (t == "WARN") return LogLevel::kWarn;
  if (t == "INFO") return LogLevel::kInfo;
  if (t == "TRACE") return LogLevel::kTrace;
  throw Error(ErrorCode::kInvalidArgument, "smddp: unknown log level '" + text + "'");
}

int64_t parseBytes(const std::string& name, const std::string& text) {
  if (text.empty()) bad(name, text, "a byte count such as 65536, 64K or 4M");
  std::string digits = text;
  int64_t mult = 1;
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'K' || last == 'M' || last == 'G') {
    mult = last == 'K' ? (int64_t{1} << 10) : last == 'M' ? (int64_t{1} << 20) : (int64_t{1} << 30);
    digits.pop_back();
  }
  if (digits.empty()) bad(name, text, "a byte count such as 65536, 64K or 4M");
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) bad(name, text, "a byte count such as 65536, 64K or 4M");
  }
  const int64_t count = parseInt(name, digits);  // digits only: never negative
  if (count > std::numeric_limits<int64_t>::max() / mult) {
    bad(name, text, "a byte count below 8 EiB (2^63)");
  }
  return count * mult;
}

Config Config::fromMap(const std::map<std::string, std::string>& given) {
  std::map<std::string, std::string> env = given;
  for (const auto& [current, former] : kFormerNames) {
    const auto old = env.find(former);
    const auto now = env.find(current);
    if (old != env.end() && (now == env.end() || now->second.empty())) env[current] = old->second;
  }
  Config c;
#define SMDDP_DEFAULT(member, NAME, type, def, doc) assign(c.member, NAME, defaultText(def), #type);
  SMDDP_CONFIG_VARS(SMDDP_DEFAULT)
#undef SMDDP_DEFAULT
#define SMDDP_PARSE(member, NAME, type, def, doc)                  \
  if (auto it = env.find(NAME); it != env.end() && !it->second.empty()) \
    assign(c.member, NAME, it->second, #type);
  SMDDP_CONFIG_VARS(SMDDP_PARSE)
#undef SMDDP_PARSE
  auto get = [&env](const char* name) -> std::string {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  c.fiProvider = get("FI_PROVIDER");
  // Launcher-provided ranks, when the smddp ones are absent.
  for (auto [r, s] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                      std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    if (c.rank < 0 && !get(r).empty()) c.rank = parseInt(r, get(r));
    if (c.worldSize < 0 && !get(s).empty()) c.worldSize = parseInt(s, get(s));
  }
  if (c.timeoutMs <= 0) bad("SMDDP_TIMEOUT_MS", std::to_string(c.timeoutMs), "a positive count");
  if (c.segmentBytes < 64) bad("SMDDP_SEGMENT_BYTES", std::to_string(c.segmentBytes), "at least 64");
  if (c.arena != 0 && c.arena != 1) bad("SMDDP_ARENA", std::to_string(c.arena), "0 or 1");
  if (c.arenaSlotBytes < 4096 || c.arenaSlotBytes > (int64_t{1} << 30)) {
    bad("SMDDP_ARENA_SLOT_BYTES", std::to_string(c.arenaSlotBytes), "between 4K and 1G");
  }
  if (c.arenaEagerBytes < 0 || c.arenaEagerBytes > 65536) {
    bad("SMDDP_ARENA_EAGER_BYTES", std::to_string(c.arenaEagerBytes), "between 0 and 64K");
  }
  if (c.arenaMailBytes < 0 || c.arenaMailBytes > 65536) {
    bad("SMDDP_ARENA_MAIL_BYTES", std::to_string(c.arenaMailBytes), "between 0 and 64K");
  }
  if (c.device != "auto" && c.device != "cuda" && c.device != "fake" && c.device != "none") {
    bad("SMDDP_DEVICE", c.device, "auto, cuda, fake or none");
  }
  if (c.gpuPlane != "auto" && c.gpuPlane != "nccl" && c.gpuPlane != "smddp") {
    bad("SMDDP_GPU_PLANE", c.gpuPlane, "auto, nccl or smddp");
  }
  if (c.fakeDelayUs < 0 || c.fakeDelayUs > 1000000) {
    bad("SMDDP_FAKE_DEVICE_DELAY_US", std::to_string(c.fakeDelayUs), "between 0 and 1000000");
  }
  if (c.deviceIpc != 0 && c.deviceIpc != 1) {
    bad("SMDDP_DEVICE_IPC", std::to_string(c.deviceIpc), "0 or 1");
  }
  if (c.fiHmem != 0 && c.fiHmem != 1) bad("SMDDP_FI_HMEM", std::to_string(c.fiHmem), "0 or 1");
  if (c.stagingBytes < 4096) bad("SMDDP_STAGING_BYTES", std::to_string(c.stagingBytes), "at least 4K");
  if (c.spinUs < -1) bad("SMDDP_SPIN_US", std::to_string(c.spinUs), "a count >= 0, or -1 (auto)");
  return c;
}

const Config& Config::global() {
  static const Config config = fromMap(readEnvironment());
  return config;
}

std::vector<Config::VarDoc> Config::documentation() {
  std::vector<VarDoc> docs;
#define SMDDP_DOC(member, NAME, type, def, doc) docs.push_back({NAME, #type, defaultText(def), doc});
  SMDDP_CONFIG_VARS(SMDDP_DOC)
#undef SMDDP_DOC
  return docs;
}

}  // namespace smddp
