// SPDX-License-Identifier: Apache-2.0
// Output of the perf tools: the nccl-tests table (out-of-place group, then in-place group), its
// summary lines, and the same results as JSON. Invariant: pure formatting — every number printed
// was measured or checked by the caller; an unchecked group prints "N/A", never 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace smddp::bench {

struct GroupResult {
  double timeUs = 0;
  double algBw = 0;  // GB/s (1e9 bytes per second)
  double busBw = 0;
  int64_t wrong = -1;  // -1: not checked
  bool ran = true;     // false: the collective has no such form (N/A in the table, null in JSON)
  double cpuUs = -1;   // CPU time (user + system) per call, the mean over ranks; -1: not measured
};

struct RowResult {
  size_t bytes = 0;
  size_t count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  GroupResult outOfPlace;
  GroupResult inPlace;
};

// algbw in GB/s for `bytes` moved in `timeUs`; 0 when the time is 0.
double algBandwidth(size_t bytes, double timeUs);

// The two `#` lines naming the columns.
void printTableHeader(std::ostream& out);
// One table line, columns aligned under printTableHeader's names.
std::string formatRow(const RowResult& row);

struct Summary {
  int64_t outOfBounds = 0;  // guard bytes damaged, summed over ranks
  bool checked = true;
  double avgBusBw = 0;
  int64_t wrong = 0;  // summed over every row, group and rank (0 when unchecked)
};
// Mean busbw over every group of every row (0 for no rows), and the totals of #wrong.
Summary summarize(const std::vector<RowResult>& rows, int64_t outOfBounds, bool checked);
void printSummary(std::ostream& out, const Summary& summary);

struct RunInfo {
  std::string collective;  // "all_reduce"
  std::string provider;
  int ranks = 0;
  std::string host;
  std::vector<std::string> arguments;  // the command line, argv[0] excluded
};
std::string toJson(const RunInfo& info, const std::vector<RowResult>& rows, const Summary& summary);
std::string jsonEscape(const std::string& text);

}  // namespace smddp::bench
