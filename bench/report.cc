// SPDX-License-Identifier: Apache-2.0
// Table and JSON formatting of perf results. Column widths mirror the header strings exactly, so
// scripts written for nccl-tests output can parse ours (split on whitespace, '#' lines ignored).
#include "report.h"

#include <cstdio>
#include <sstream>

namespace smddp::bench {
namespace {

// At most 7 characters below 10 s (the column's width): fewer decimals as the time grows.
std::string formatTime(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 9999.995 ? "%.2f" : us < 99999.95 ? "%.1f" : "%.0f", us);
  return buf;
}

std::string formatGroup(const GroupResult& g) {
  char buf[96];
  if (!g.ran) {
    std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
    return buf;
  }
  const std::string wrong = g.wrong < 0 ? "N/A" : std::to_string(g.wrong);
  std::snprintf(buf, sizeof buf, "  %7s  %6.2f  %6.2f  %5s", formatTime(g.timeUs).c_str(), g.algBw,
                g.busBw, wrong.c_str());
  return buf;
}

std::string jsonNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string jsonGroup(const GroupResult& g) {
  if (!g.ran) return "null";
  return "{\"time_us\": " + jsonNumber(g.timeUs) + ", \"algbw_gbps\": " + jsonNumber(g.algBw) +
         ", \"busbw_gbps\": " + jsonNumber(g.busBw) +
         ", \"cpu_us\": " + (g.cpuUs < 0 ? std::string("null") : jsonNumber(g.cpuUs)) +
         ", \"wrong\": " + (g.wrong < 0 ? std::string("null") : std::to_string(g.wrong)) + "}";
}

}  // namespace

double algBandwidth(size_t bytes, double timeUs) {
  return timeUs > 0 ? static_cast<double>(bytes) / 1e3 / timeUs : 0;
}

void printTableHeader(std::ostream& out) {
  out << "#       size         count      type   redop    root     time   algbw   busbw #wrong"
         "     time   algbw   busbw #wrong\n"
      << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)      "
         "      (us)  (GB/s)  (GB/s)\n";
}

std::string formatRow(const RowResult& row) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count,
                row.type.c_str(), row.redop.c_str(), row.root);
  return buf + formatGroup(row.outOfPlace) + formatGroup(row.inPlace);
}

Summary summarize(const std::vector<RowResult>& rows, int64_t outOfBounds, bool checked) {
  Summary s;
  s.outOfBounds = outOfBounds;
  s.checked = checked;
  double total = 0;
  size_t groups = 0;
  for (const RowResult& r : rows) {
    for (const GroupResult* g : {&r.outOfPlace, &r.inPlace}) {
      if (!g->ran) continue;
      total += g->busBw;
      ++groups;
      if (g->wrong > 0) s.wrong += g->wrong;
    }
  }
  s.avgBusBw = groups == 0 ? 0 : total / static_cast<double>(groups);
  return s;
}

void printSummary(std::ostream& out, const Summary& s) {
  char buf[64];
  out << "# Out of bounds values : " << s.outOfBounds
      << (!s.checked           ? " N/A"
          : s.outOfBounds == 0 ? " OK"
                               : " FAILED")
      << "\n";
  std::snprintf(buf, sizeof buf, "%g", s.avgBusBw);
  out << "# Avg bus bandwidth    : " << buf << "\n";
  if (s.wrong > 0) out << "# Wrong elements       : " << s.wrong << " FAILED\n";
  out << "#\n";
}

std::string jsonEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string toJson(const RunInfo& info, const std::vector<RowResult>& rows, const Summary& s) {
  std::ostringstream j;
  j << "{\n  \"collective\": \"" << jsonEscape(info.collective) << "\",\n  \"provider\": \""
    << jsonEscape(info.provider) << "\",\n  \"ranks\": " << info.ranks << ",\n  \"host\": \""
    << jsonEscape(info.host) << "\",\n  \"arguments\": [";
  for (size_t i = 0; i < info.arguments.size(); ++i) {
    j << (i ? ", " : "") << '"' << jsonEscape(info.arguments[i]) << '"';
  }
  j << "],\n  \"results\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowResult& r = rows[i];
    j << (i ? ",\n" : "\n") << "    {\"size\": " << r.bytes << ", \"count\": " << r.count
      << ", \"type\": \"" << r.type << "\", \"redop\": \"" << r.redop << "\", \"root\": " << r.root
      << ", \"out_of_place\": " << jsonGroup(r.outOfPlace)
      << ", \"in_place\": " << jsonGroup(r.inPlace) << "}";
  }
  j << "\n  ],\n  \"checked\": " << (s.checked ? "true" : "false")
    << ",\n  \"out_of_bounds\": " << s.outOfBounds << ",\n  \"wrong\": " << s.wrong
    << ",\n  \"avg_busbw_gbps\": " << jsonNumber(s.avgBusBw) << "\n}\n";
  return j.str();
}

}  // namespace smddp::bench
