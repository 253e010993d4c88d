// SPDX-License-Identifier: Apache-2.0
// Unit tests of the perf tools' output: the table's columns line up under the header names, an
// unchecked group prints N/A, and the summary and JSON carry the totals.
#include <gtest/gtest.h>

#include <sstream>

#include "report.h"

namespace smddp::bench {
namespace {

// End column of every whitespace-separated word of line.
std::vector<size_t> wordEnds(const std::string& line) {
  std::vector<size_t> ends;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != ' ' && (i + 1 == line.size() || line[i + 1] == ' ')) ends.push_back(i);
  }
  return ends;
}

RowResult sampleRow() {
  RowResult r;
  r.bytes = 67108864;
  r.count = 16777216;
  r.type = "float32";
  r.redop = "sum";
  r.root = -1;
  r.outOfPlace = GroupResult{12345.678, 5.43, 8.15, 0};
  r.inPlace = GroupResult{12.5, 0.01, 0.02, 3};
  return r;
}

TEST(BenchReport, RowColumnsAlignWithHeader) {
  std::ostringstream header;
  printTableHeader(header);
  const std::string names = header.str().substr(0, header.str().find('\n'));
  const std::string row = formatRow(sampleRow());
  EXPECT_EQ(wordEnds(names).size(), 14u);  // '#' + 13 columns
  std::vector<size_t> nameEnds = wordEnds(names);
  nameEnds.erase(nameEnds.begin());  // the leading '#'
  EXPECT_EQ(wordEnds(row), nameEnds) << names << "\n" << row;
  EXPECT_NE(row.find(" 12345.7 "), std::string::npos) << row;
  EXPECT_NE(row.find("    3"), std::string::npos) << row;
  // Times up to 10 s keep the 7-character column.
  for (double us : {0.5, 9999.994, 9999.996, 99999.9, 132480.5, 9999999.0}) {
    RowResult r = sampleRow();
    r.outOfPlace.timeUs = us;
    EXPECT_EQ(wordEnds(formatRow(r)), nameEnds) << formatRow(r);
  }
}

TEST(BenchReport, UncheckedGroupsPrintNA) {
  RowResult r = sampleRow();
  r.outOfPlace.wrong = -1;
  r.inPlace.wrong = -1;
  const std::string row = formatRow(r);
  EXPECT_EQ(row.substr(row.size() - 3), "N/A");
  EXPECT_NE(row.find("N/A"), row.rfind("N/A"));  // both groups
  EXPECT_EQ(row.find(" 0 "), std::string::npos) << "an unchecked group must not look clean";
}

TEST(BenchReport, AGroupThatDoesNotExistIsNAAndLeftOutOfTheAverage) {
  RowResult r = sampleRow();
  r.inPlace = GroupResult{};
  r.inPlace.ran = false;
  const std::string row = formatRow(r);
  EXPECT_EQ(wordEnds(row), wordEnds(formatRow(sampleRow()))) << row;  // the columns stay put
  EXPECT_EQ(row.substr(row.size() - 3), "N/A");
  EXPECT_DOUBLE_EQ(summarize({r}, 0, true).avgBusBw, r.outOfPlace.busBw);
  const std::string j =
      toJson(RunInfo{"alltoall", "shm", 2, "h", {}}, {r}, summarize({r}, 0, true));
  EXPECT_NE(j.find("\"in_place\": null"), std::string::npos) << j;
}

TEST(BenchReport, SummaryTotalsAndBandwidth) {
  EXPECT_DOUBLE_EQ(algBandwidth(1000000000, 1e6), 1.0);  // 1 GB in 1 s
  EXPECT_EQ(algBandwidth(8, 0), 0);
  std::vector<RowResult> rows{sampleRow(), sampleRow()};
  rows[1].outOfPlace.busBw = 4.0;
  const Summary s = summarize(rows, 2, true);
  EXPECT_EQ(s.wrong, 6);
  EXPECT_DOUBLE_EQ(s.avgBusBw, (8.15 + 0.02 + 4.0 + 0.02) / 4);
  std::ostringstream out;
  printSummary(out, s);
  EXPECT_NE(out.str().find("# Out of bounds values : 2 FAILED"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("# Avg bus bandwidth    : 3.0475"), std::string::npos) << out.str();
  std::ostringstream ok;
  printSummary(ok, summarize({}, 0, true));
  EXPECT_NE(ok.str().find("# Out of bounds values : 0 OK"), std::string::npos) << ok.str();
}

TEST(BenchReport, Json) {
  RowResult r = sampleRow();
  r.inPlace.wrong = -1;
  const std::string j =
      toJson(RunInfo{"all_reduce", "shm", 4, "h\"ost", {"-b", "8"}}, {r}, summarize({r}, 0, true));
  EXPECT_NE(j.find("\"collective\": \"all_reduce\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"host\": \"h\\\"ost\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"arguments\": [\"-b\", \"8\"]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"size\": 67108864, \"count\": 16777216"), std::string::npos) << j;
  EXPECT_NE(j.find("\"wrong\": 0}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"wrong\": null}"), std::string::npos) << j;
  EXPECT_NE(j.find("\"cpu_us\": null"), std::string::npos) << j;  // not measured: null, never 0
  r.outOfPlace.cpuUs = 12.25;
  const std::string measured = toJson(RunInfo{"all_reduce", "shm", 4, "h", {}}, {r},
                                      summarize({r}, 0, true));
  EXPECT_NE(measured.find("\"cpu_us\": 12.25, \"wrong\": 0}"), std::string::npos) << measured;
  EXPECT_EQ(jsonEscape("a\nb"), "a\\u000ab");
}

}  // namespace
}  // namespace smddp::bench
