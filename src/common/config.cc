// SPDX-License-Identifier: Apache-2.0
// Parses the SMDDP_* environment once. This is the only file of smddp that calls getenv.
// Numbers are parsed strictly (no blanks, no '+', no wrap on overflow) and held to the range
// SMDDP_CONFIG_VARS declares for them.
#include "common/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <utility>

#include "smddp/error.h"

namespace smddp {
namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void bad(const std::string& name, const std::string& value, const std::string& want) {
  throw Error(ErrorCode::kInvalidArgument,
              "smddp: bad value '" + value + "' for " + name + ": expected " + want);
}

// Strict decimal: an optional '-', then digits, nothing else (no blanks, no '+'). nullopt when
// the text is not one or its value does not fit in int64.
std::optional<int64_t> integerOf(const std::string& text) {
  int64_t v = 0;
  const char* const end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// Digits with an optional K, M or G suffix (powers of 1024). nullopt on junk, and when the count
// or its product with the suffix passes INT64_MAX (checked, never wrapped).
std::optional<int64_t> bytesOf(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::string digits = text;
  int64_t mult = 1;
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'K' || last == 'M' || last == 'G') {
    mult = int64_t{1} << (last == 'K' ? 10 : last == 'M' ? 20 : 30);
    digits.pop_back();
  }
  const auto isDigit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), isDigit)) return std::nullopt;
  const std::optional<int64_t> count = integerOf(digits);
  int64_t bytes = 0;
  if (!count || __builtin_mul_overflow(*count, mult, &bytes)) return std::nullopt;
  return bytes;
}

int64_t parseInRange(const std::string& name, const std::string& text, bool bytes,
                     ConfigRange range) {
  const std::optional<int64_t> v = bytes ? bytesOf(text) : integerOf(text);
  if (!v || !range.holds(*v)) {
    bad(name, text,
        bytes ? "a byte count in " + rangeText(range) + " (K, M and G suffixes accepted)"
              : "an integer in " + rangeText(range));
  }
  return *v;
}

void assign(int64_t& out, const std::string& name, const std::string& text, const char* type,
            ConfigRange range) {
  out = parseInRange(name, text, std::string(type) == "Bytes", range);
}
void assign(std::string& out, const std::string&, const std::string& text, const char*,
            ConfigRange) {
  out = text;
}
void assign(LogLevel& out, const std::string& name, const std::string& text, const char*,
            ConfigRange) {
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
#define SMDDP_GRAB(member, NAME, type, def, range, doc) grab(NAME);
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
  const std::optional<int64_t> v = bytesOf(text);
  if (!v) bad(name, text, "a byte count such as 65536, 64K or 4M, below 2^63");
  return *v;
}

std::string rangeText(ConfigRange range) {
  return std::to_string(range.min) + ".." + std::to_string(range.max);
}

Config Config::fromMap(const std::map<std::string, std::string>& given) {
  std::map<std::string, std::string> env = given;
  std::map<std::string, std::string> shownAs;  // a value given under a former name says so
  for (const auto& [current, former] : kFormerNames) {
    const auto old = env.find(former);
    const auto now = env.find(current);
    if (old != env.end() && (now == env.end() || now->second.empty())) {
      env[current] = old->second;
      shownAs[current] = std::string(current) + " (set as " + former + ")";
    }
  }
  const auto shown = [&shownAs](const char* name) {
    const auto it = shownAs.find(name);
    return it == shownAs.end() ? std::string(name) : it->second;
  };
  Config c;
#define SMDDP_DEFAULT(member, NAME, type, def, range, doc) \
  assign(c.member, NAME, defaultText(def), #type, range);
  SMDDP_CONFIG_VARS(SMDDP_DEFAULT)
#undef SMDDP_DEFAULT
#define SMDDP_PARSE(member, NAME, type, def, range, doc)                \
  if (auto it = env.find(NAME); it != env.end() && !it->second.empty()) \
    assign(c.member, shown(NAME), it->second, #type, range);
  SMDDP_CONFIG_VARS(SMDDP_PARSE)
#undef SMDDP_PARSE
  auto get = [&env](const char* name) -> std::string {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  c.fiProvider = get("FI_PROVIDER");
  // Launcher-provided ranks, when the smddp ones are absent; held to the same ranges.
  for (auto [r, s] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                      std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    if (c.rank < 0 && !get(r).empty()) c.rank = parseInRange(r, get(r), false, kRankRange);
    if (c.worldSize < 0 && !get(s).empty()) {
      c.worldSize = parseInRange(s, get(s), false, kWorldSizeRange);
    }
  }
  if (c.device != "auto" && c.device != "cuda" && c.device != "fake" && c.device != "none") {
    bad("SMDDP_DEVICE", c.device, "auto, cuda, fake or none");
  }
  if (c.gpuPlane != "auto" && c.gpuPlane != "nccl" && c.gpuPlane != "smddp") {
    bad("SMDDP_GPU_PLANE", c.gpuPlane, "auto, nccl or smddp");
  }
  return c;
}

const Config& Config::global() {
  static const Config config = fromMap(readEnvironment());
  return config;
}

std::vector<Config::VarDoc> Config::documentation() {
  std::vector<VarDoc> docs;
#define SMDDP_DOC(member, NAME, type, def, range, doc) \
  docs.push_back({NAME, #type, defaultText(def), range, doc});
  SMDDP_CONFIG_VARS(SMDDP_DOC)
#undef SMDDP_DOC
  return docs;
}

}  // namespace smddp
