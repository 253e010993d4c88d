// SPDX-License-Identifier: Apache-2.0
// Unit tests of the perf tools' flag parser and size sweep: every accepted spelling, and every
// rejection carries the flag's name.
#include <gtest/gtest.h>

#include "options.h"

namespace smddp::bench {
namespace {

std::string errorOf(const std::vector<std::string>& args) {
  try {
    parseArgs(args);
  } catch (const ArgError& e) {
    return e.what();
  }
  return "";
}

TEST(BenchOptions, DefaultsAreNcclTestsDefaults) {
  const BenchOptions o = parseArgs({});
  EXPECT_EQ(o.minBytes, 32u << 20);
  EXPECT_EQ(o.maxBytes, 32u << 20);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmupIters, 5);
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.dtypes, std::vector<DataType>{DataType::kFloat32});
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::kSum});
  EXPECT_EQ(o.localRanks, 0);
  EXPECT_FALSE(o.provider.has_value());
}

TEST(BenchOptions, ParsesEveryFlag) {
  const BenchOptions o =
      parseArgs({"-b", "8",   "-e", "64M",      "-f", "4",   "-n", "7",  "-w",  "1",
                 "-c", "0",   "-d", "half",     "-o", "max", "-r", "-1", "-np", "3",
                 "-P", "TCP", "-J", "out.json", "-T", "900", "-L", "60"});
  EXPECT_EQ(o.minBytes, 8u);
  EXPECT_EQ(o.maxBytes, 64u << 20);
  EXPECT_EQ(o.stepFactor, 4u);
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmupIters, 1);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.dtypes, std::vector<DataType>{DataType::kFloat16});
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::kMax});
  EXPECT_EQ(o.root, -1);
  EXPECT_EQ(o.localRanks, 3);
  EXPECT_EQ(o.provider, std::optional<std::string>("tcp"));
  EXPECT_EQ(o.jsonPath, "out.json");
  EXPECT_EQ(o.timeoutMs, std::optional<int64_t>(900));
  EXPECT_EQ(o.launchTimeoutSec, 60);
}

TEST(BenchOptions, LongSpellingsAndSuffixes) {
  const BenchOptions o = parseArgs({"--minbytes=1k", "--maxbytes", "2G", "--stepbytes=512K"});
  EXPECT_EQ(o.minBytes, 1024u);
  EXPECT_EQ(o.maxBytes, size_t{2} << 30);
  EXPECT_EQ(o.stepBytes, 512u << 10);
  EXPECT_EQ(parseSize("-b", "3M"), 3u << 20);
  EXPECT_EQ(parseArgs({"-d", "all"}).dtypes.size(), 8u);
  EXPECT_EQ(parseArgs({"-o", "all"}).ops.size(), 5u);
  EXPECT_EQ(parseArgs({"-d", "double"}).dtypes, std::vector<DataType>{DataType::kFloat64});
  EXPECT_EQ(parseArgs({"-d", "bfloat16"}).dtypes, std::vector<DataType>{DataType::kBFloat16});
  EXPECT_TRUE(parseArgs({"-h"}).help);
  EXPECT_EQ(parseArgs({}).blocking, 0);
  EXPECT_EQ(parseArgs({"-z", "1"}).blocking, 1);
  EXPECT_EQ(parseArgs({"--blocking=2"}).blocking, 2);
  EXPECT_EQ(parseArgs({}).bind, 1);
  EXPECT_EQ(parseArgs({"-B", "0"}).bind, 0);
  EXPECT_EQ(parseArgs({"--bind=2"}).bind, 2);
}

TEST(BenchOptions, RejectionsNameTheFlag) {
  EXPECT_NE(errorOf({"-x", "1"}).find("unknown flag '-x'"), std::string::npos);
  EXPECT_NE(errorOf({"--bogus"}).find("unknown flag '--bogus'"), std::string::npos);
  EXPECT_NE(errorOf({"-b"}).find("-b needs a value"), std::string::npos);
  EXPECT_NE(errorOf({"-b", "8Q"}).find("bad value '8Q' for -b"), std::string::npos);
  EXPECT_NE(errorOf({"-e", "-3"}).find("for -e"), std::string::npos);
  EXPECT_NE(errorOf({"-n", "0"}).find("for -n"), std::string::npos);
  EXPECT_NE(errorOf({"-c", "2"}).find("for -c"), std::string::npos);
  EXPECT_NE(errorOf({"-z", "3"}).find("for -z"), std::string::npos);
  EXPECT_NE(errorOf({"-B", "3"}).find("for -B"), std::string::npos);
  EXPECT_NE(errorOf({"-d", "float8"}).find("for -d"), std::string::npos);
  EXPECT_NE(errorOf({"-o", "xor"}).find("for -o"), std::string::npos);
  EXPECT_NE(errorOf({"-P", "verbs"}).find("for -P"), std::string::npos);
  EXPECT_NE(errorOf({"-np", "0"}).find("for -np"), std::string::npos);
  EXPECT_NE(errorOf({"-f", "1"}).find("for -f"), std::string::npos);
  EXPECT_NE(errorOf({"-b", "1M", "-e", "1K"}).find("larger than -e"), std::string::npos);
  EXPECT_NE(errorOf({"-f", "2", "-i", "8"}).find("either -f"), std::string::npos);
  EXPECT_NE(errorOf({"-b", "0", "-e", "1G", "-i", "1"}).find("rows"), std::string::npos);
}

TEST(BenchSweep, MultiplicativeSweep) {
  const std::vector<size_t> s = sizeSweep(8, 64 << 20, 4, 0);
  ASSERT_EQ(s.size(), 12u);  // 2^3, 2^5, ..., 2^25
  for (size_t k = 0; k < s.size(); ++k) EXPECT_EQ(s[k], size_t{8} << (2 * k)) << "row " << k;
  EXPECT_EQ(sizeSweep(0, 4, 2, 0), (std::vector<size_t>{0, 1, 2, 4}));
  EXPECT_EQ(sizeSweep(100, 100, 2, 0), std::vector<size_t>{100});
  EXPECT_EQ(sizeSweep(3, 20, 3, 0), (std::vector<size_t>{3, 9}));
}

TEST(BenchSweep, AdditiveSweepAndOverflow) {
  EXPECT_EQ(sizeSweep(0, 10, 2, 4), (std::vector<size_t>{0, 4, 8}));
  EXPECT_EQ(sizeSweep(5, 5, 2, 1), std::vector<size_t>{5});
  // Doubling up to SIZE_MAX stops at 2^63 instead of wrapping around.
  const std::vector<size_t> s = sizeSweep(1, SIZE_MAX, 2, 0);
  ASSERT_EQ(s.size(), 64u);
  EXPECT_EQ(s.back(), size_t{1} << 63);
  EXPECT_THROW(sizeSweep(0, kMaxSweepRows, 2, 1), ArgError);
}

}  // namespace
}  // namespace smddp::bench
