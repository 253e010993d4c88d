// SPDX-License-Identifier: Apache-2.0
// Config parsing: defaults, overrides, launcher variables, bad values named in the error, and the
// configuration table of docs/CONFIGURATION.md mirroring every declared variable.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/config.h"
#include "common/tag.h"
#include "smddp/error.h"

namespace smddp {
namespace {

TEST(Config, DefaultsWhenEnvironmentIsEmpty) {
  const Config c = Config::fromMap({});
  EXPECT_EQ(c.timeoutMs, 300000);
  EXPECT_EQ(c.provider, "auto");
  EXPECT_EQ(c.segmentBytes, 1048576);
  EXPECT_EQ(c.debug, LogLevel::kWarn);
  EXPECT_EQ(c.rank, -1);
  EXPECT_EQ(c.worldSize, -1);
  EXPECT_TRUE(c.algorithms.empty());
}

TEST(Config, ParsesEveryType) {
  const Config c = Config::fromMap({{"SMDDP_TIMEOUT_MS", "1500"},
                                    {"SMDDP_PROVIDER", "tcp"},
                                    {"SMDDP_SEGMENT_BYTES", "64K"},
                                    {"SMDDP_DEBUG", "info"},
                                    {"SMDDP_ALGO", "allreduce:ring"},
                                    {"FI_PROVIDER", "shm"}});
  EXPECT_EQ(c.timeoutMs, 1500);
  EXPECT_EQ(c.provider, "tcp");
  EXPECT_EQ(c.segmentBytes, 65536);
  EXPECT_EQ(c.debug, LogLevel::kInfo);
  EXPECT_EQ(c.algorithms, "allreduce:ring");
  EXPECT_EQ(c.fiProvider, "shm");
  EXPECT_EQ(parseBytes("X", "4M"), 4 << 20);
  EXPECT_EQ(parseBytes("X", "1g"), int64_t{1} << 30);
}

TEST(Config, LauncherRanksAreUsedWhenSmddpOnesAreAbsent) {
  Config c = Config::fromMap({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}});
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.worldSize, 8);
  c = Config::fromMap({{"SMDDP_RANK", "1"}, {"SMDDP_WORLD_SIZE", "2"}, {"PMI_RANK", "5"}, {"PMI_SIZE", "9"}});
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.worldSize, 2);
}

TEST(Config, FormerNamesAreReadWhenTheCurrentOnesAreUnset) {
  Config c = Config::fromMap(
      {{"SMDDP_SHM", "0"}, {"SMDDP_SHM_SLOT_BYTES", "64K"}, {"SMDDP_SHM_EAGER_BYTES", "0"}});
  EXPECT_EQ(c.arena, 0);
  EXPECT_EQ(c.arenaSlotBytes, 65536);
  EXPECT_EQ(c.arenaEagerBytes, 0);
  c = Config::fromMap({{"SMDDP_SHM", "0"}, {"SMDDP_ARENA", "1"}});
  EXPECT_EQ(c.arena, 1) << "the current name wins";
  c = Config::fromMap({});
  EXPECT_EQ(c.arena, 1);
  EXPECT_EQ(c.arenaSlotBytes, 1048576);
  EXPECT_EQ(c.arenaEagerBytes, 4096);
  EXPECT_EQ(c.arenaMailBytes, 4096);
  try {
    Config::fromMap({{"SMDDP_SHM", "2"}});
    ADD_FAILURE() << "SMDDP_SHM=2 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SMDDP_ARENA"), std::string::npos) << e.what();
  }
}

TEST(Config, BadValuesNameTheVariable) {
  for (auto [name, value] : {std::pair{"SMDDP_TIMEOUT_MS", "soon"}, std::pair{"SMDDP_TIMEOUT_MS", "0"},
                             std::pair{"SMDDP_SEGMENT_BYTES", "12Q"}, std::pair{"SMDDP_SEGMENT_BYTES", "8"},
                             std::pair{"SMDDP_DEBUG", "LOUD"}, std::pair{"SMDDP_SPIN_US", "-2"}}) {
    try {
      Config::fromMap({{name, value}});
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

// Found by the config fuzz target (tests/fuzz): a count whose suffix overflowed int64 was
// undefined behaviour, in practice a wrapped size (17179869188G = 2^64 + 4G was taken as 4G).
TEST(Config, ByteCountsThatOverflowAreRefused) {
  EXPECT_EQ(parseBytes("X", "8589934591G"), int64_t{8589934591} << 30);
  for (const char* value : {"8589934592G", "17179869188G", "555555555555551G", "9007199254740992K",
                            "9223372036854775807M", "99999999999999999999"}) {
    EXPECT_THROW(parseBytes("X", value), Error) << value;
  }
  try {
    Config::fromMap({{"SMDDP_STAGING_BYTES", "17179869188G"}});
    ADD_FAILURE() << "SMDDP_STAGING_BYTES=17179869188G was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("SMDDP_STAGING_BYTES"), std::string::npos) << e.what();
  }
}

TEST(Config, TheConfigurationDocMirrorsEveryVariable) {
  std::ifstream in(SMDDP_CONFIG_DOC_PATH);
  ASSERT_TRUE(in.good()) << "cannot read " << SMDDP_CONFIG_DOC_PATH;
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& var : Config::documentation()) {
    EXPECT_NE(text.str().find(std::string("`") + var.name + "`"), std::string::npos)
        << var.name << " is missing from the configuration table of docs/CONFIGURATION.md";
  }
}

TEST(Tag, FieldsRoundTripAndStayInTheirBits) {
  for (uint64_t seq : {uint64_t{0}, uint64_t{1}, tag::kSeqMask, tag::kSeqMask + 5}) {
    for (uint64_t msg : {uint64_t{0}, uint64_t{77}, tag::kMaxMsg}) {
      for (uint64_t sig : {uint64_t{0}, uint64_t{0x5a5}, tag::kSigMask}) {
        const uint64_t t = tag::make(CollectiveKind::kAllGather, seq, msg, sig);
        EXPECT_EQ(tag::msgOf(t), msg);
        EXPECT_EQ(tag::seqOf(t), seq & tag::kSeqMask);
        EXPECT_EQ(tag::sigOf(t), sig);
        EXPECT_EQ(tag::kindOf(t), 3u);
        EXPECT_EQ(t >> tag::kTagBitsUsed, 0u) << "reserved bits must stay zero";
      }
    }
  }
  EXPECT_NE(tag::make(CollectiveKind::kAllReduce, 1, 0, 1), tag::make(CollectiveKind::kAllReduce, 1, 0, 2));
  EXPECT_NE(tag::make(CollectiveKind::kAllReduce, 1, 0), tag::make(CollectiveKind::kAllReduce, 2, 0));
  EXPECT_NE(tag::make(CollectiveKind::kAllReduce, 1, 0), tag::make(CollectiveKind::kBroadcast, 1, 0));
}

}  // namespace
}  // namespace smddp
