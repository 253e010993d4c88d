// SPDX-License-Identifier: Apache-2.0
// Config ranges: every numeric variable accepts exactly its declared range (both ends parse, one
// past either end is refused with the variable, the value and the range in the message), numbers
// are parsed strictly and never wrap, and docs/CONFIGURATION.md states each range.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "common/config.h"
#include "smddp/error.h"

namespace smddp {
namespace {

int64_t numberOf(int64_t v) { return v; }
int64_t numberOf(const std::string&) { return INT64_MIN; }
int64_t numberOf(LogLevel) { return INT64_MIN; }

// The parsed value of every variable by name (INT64_MIN for the non-numeric ones).
std::map<std::string, int64_t> numbers(const Config& c) {
  std::map<std::string, int64_t> out;
#define SMDDP_NUMBER(member, NAME, type, def, range, doc) out[NAME] = numberOf(c.member);
  SMDDP_CONFIG_VARS(SMDDP_NUMBER)
#undef SMDDP_NUMBER
  return out;
}

// The message of the error fromMap throws for name=value; "" (and a test failure) when it accepts.
std::string refusal(const std::string& name, const std::string& value) {
  try {
    Config::fromMap({{name, value}});
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << name << "=" << value << " was accepted";
  return "";
}

void expectRefused(const std::string& name, const std::string& value, ConfigRange range) {
  const std::string msg = refusal(name, value);
  EXPECT_NE(msg.find("bad value '" + value + "' for " + name + ":"), std::string::npos) << msg;
  EXPECT_NE(msg.find(" in " + rangeText(range)), std::string::npos) << msg;
}

TEST(ConfigRanges, EveryNumericVariableAcceptsExactlyItsRange) {
  int numeric = 0;
  for (const auto& var : Config::documentation()) {
    if (!var.range.numeric()) continue;
    ++numeric;
    const ConfigRange r = var.range;
    for (int64_t v : {r.min, r.max}) {
      EXPECT_EQ(numbers(Config::fromMap({{var.name, std::to_string(v)}}))[var.name], v)
          << var.name << "=" << v;
    }
    expectRefused(var.name, std::to_string(r.min - 1), r);
    expectRefused(var.name, std::to_string(r.max + 1), r);
    EXPECT_TRUE(r.holds(std::stoll(var.defaultValue))) << var.name << "'s default";
  }
  EXPECT_EQ(numeric, 19) << "a numeric variable was added or lost its range";
}

TEST(ConfigRanges, TheMessageNamesVariableValueAndRange) {
  EXPECT_EQ(refusal("SMDDP_TIMEOUT_MS", "99999999999999"),
            "smddp: bad value '99999999999999' for SMDDP_TIMEOUT_MS: expected an integer in "
            "1..86400000");
  EXPECT_EQ(refusal("SMDDP_SEGMENT_BYTES", "2G"),
            "smddp: bad value '2G' for SMDDP_SEGMENT_BYTES: expected a byte count in "
            "64..1073741824 (K, M and G suffixes accepted)");
  EXPECT_NE(refusal("SMDDP_SHM", "2").find("SMDDP_ARENA (set as SMDDP_SHM)"), std::string::npos);
}

TEST(ConfigRanges, OverflowIsAnErrorNotAWrap) {
  const ConfigRange segment = ConfigRange(64, kMaxBufferBytes);
  expectRefused("SMDDP_SEGMENT_BYTES", "9999999999999999999G", segment);  // the count overflows
  expectRefused("SMDDP_SEGMENT_BYTES", "9999999999G", segment);           // the product overflows
  expectRefused("SMDDP_SEGMENT_BYTES", "17179869184G", segment);  // 2^64: wrapped, it would be 0
  const ConfigRange timeout(1, kMaxDurationMs);
  expectRefused("SMDDP_TIMEOUT_MS", "99999999999999999999", timeout);
  expectRefused("SMDDP_TIMEOUT_MS", "18446744073709551617", timeout);  // 2^64 + 1
  EXPECT_EQ(parseBytes("X", "8589934591G"), INT64_MAX - (int64_t{1} << 30) + 1);
  EXPECT_EQ(parseBytes("X", "9223372036854775807"), INT64_MAX);
  for (const char* text : {"8589934592G", "9223372036854775808", "9999999999999999999G", "-1"}) {
    EXPECT_THROW(parseBytes("X", text), Error) << text;
  }
}

TEST(ConfigRanges, NumbersAreStrict) {
  for (const char* text : {" 5", "5 ", "+5", "5.0", "0x10", "1e3", "--5", "-"}) {
    expectRefused("SMDDP_TIMEOUT_MS", text, ConfigRange(1, kMaxDurationMs));
  }
  for (const char* text : {"+64K", " 64K", "64KB", "K", "-64", "64k "}) {
    expectRefused("SMDDP_SEGMENT_BYTES", text, ConfigRange(64, kMaxBufferBytes));
  }
}

TEST(ConfigRanges, LauncherRanksAreHeldToTheSameRanges) {
  const std::string msg = refusal("OMPI_COMM_WORLD_RANK", std::to_string(kMaxRanks));
  EXPECT_NE(msg.find("OMPI_COMM_WORLD_RANK"), std::string::npos) << msg;
  EXPECT_NE(msg.find(rangeText(kRankRange)), std::string::npos) << msg;
  EXPECT_NE(refusal("PMI_SIZE", "99999999999999999999").find("PMI_SIZE"), std::string::npos);
  EXPECT_EQ(Config::fromMap({{"PMI_SIZE", std::to_string(kMaxRanks)}}).worldSize, kMaxRanks);
}

TEST(ConfigRanges, TheLongestDurationCannotOverflowADeadline) {
  using Clock = std::chrono::steady_clock;
  const auto now = Clock::now();
  EXPECT_GT(Clock::time_point::max() - now, std::chrono::milliseconds(kMaxDurationMs) * 1000);
  EXPECT_GT(now + std::chrono::milliseconds(kMaxDurationMs), now);
}

TEST(ConfigRanges, TheConfigurationDocStatesEveryRange) {
  std::ifstream in(SMDDP_CONFIG_DOC_PATH);
  ASSERT_TRUE(in.good()) << "cannot read " << SMDDP_CONFIG_DOC_PATH;
  std::map<std::string, std::string> rows;  // the table row of each variable
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `SMDDP_", 0) == 0) rows[line.substr(3, line.find('`', 3) - 3)] = line;
  }
  for (const auto& var : Config::documentation()) {
    if (!var.range.numeric()) continue;
    ASSERT_TRUE(rows.count(var.name)) << var.name << " has no row in docs/CONFIGURATION.md";
    EXPECT_NE(rows[var.name].find(" " + rangeText(var.range) + " "), std::string::npos)
        << var.name << "'s row in docs/CONFIGURATION.md does not state its range "
        << rangeText(var.range);
  }
}

}  // namespace
}  // namespace smddp
