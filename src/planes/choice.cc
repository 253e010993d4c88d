// SPDX-License-Identifier: Apache-2.0
// choosePlane (choice.h).
#include "planes/choice.h"

#include <map>
#include <sstream>
#include <stdexcept>

namespace smddp::planes {
namespace {

std::string versionText(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += i + 1 == ranks.size() ? " and " : ", ";
    out += std::to_string(ranks[i]);
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

}  // namespace

const char* toString(Plane plane) { return plane == Plane::kNccl ? "nccl" : "smddp"; }

std::string PlaneFacts::encode() const {
  std::string why = ncclWhy;
  for (char& c : why) {
    if (c == '\n') c = ' ';
  }
  return "host=" + host + "\nuuid=" + uuid + "\nforced=" + forced +
         "\nnccl=" + std::to_string(ncclVersion) + "\nwhy=" + why + "\n";
}

PlaneFacts PlaneFacts::decode(const std::string& text) {
  PlaneFacts f;
  std::map<std::string, std::string> fields;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("a line without '=': " + line);
    fields[line.substr(0, eq)] = line.substr(eq + 1);
  }
  for (const char* key : {"host", "uuid", "forced", "nccl", "why"}) {
    if (fields.count(key) == 0) throw std::invalid_argument(std::string("no ") + key + " field");
  }
  f.host = fields["host"];
  f.uuid = fields["uuid"];
  f.forced = fields["forced"];
  f.ncclWhy = fields["why"];
  try {
    f.ncclVersion = std::stoi(fields["nccl"]);
  } catch (const std::exception&) {
    throw std::invalid_argument("nccl=" + fields["nccl"] + " is not a version code");
  }
  if (f.forced != "auto" && f.forced != "nccl" && f.forced != "smddp") {
    throw std::invalid_argument("forced=" + f.forced);
  }
  return f;
}

PlaneChoice choosePlane(const std::vector<PlaneFacts>& ranks) {
  PlaneChoice c;
  if (ranks.empty()) {
    c.error = "no ranks";
    return c;
  }
  std::map<std::string, std::vector<int>> byForced;
  for (size_t r = 0; r < ranks.size(); ++r) byForced[ranks[r].forced].push_back(static_cast<int>(r));
  if (byForced.size() > 1) {
    c.error = "the ranks set SMDDP_GPU_PLANE differently:";
    for (const auto& [value, who] : byForced) c.error += " " + rankList(who) + " " + value + ";";
    c.error.pop_back();
    return c;
  }
  const std::string forced = ranks[0].forced;
  if (forced == "smddp") {
    c.why = "SMDDP_GPU_PLANE=smddp";
    return c;
  }
  // NCCL: usable everywhere, one version.
  std::string noNccl;
  for (size_t r = 0; r < ranks.size() && noNccl.empty(); ++r) {
    if (ranks[r].ncclVersion == 0) {
      noNccl = "rank " + std::to_string(r) + " (" + ranks[r].host + ") has no usable NCCL: " +
               ranks[r].ncclWhy;
    } else if (ranks[r].ncclVersion != ranks[0].ncclVersion) {
      noNccl = "rank 0 has NCCL " + versionText(ranks[0].ncclVersion) + ", rank " +
               std::to_string(r) + " NCCL " + versionText(ranks[r].ncclVersion);
    }
  }
  if (!noNccl.empty()) {
    if (forced == "nccl") {
      c.error = "SMDDP_GPU_PLANE=nccl, but " + noNccl;
    } else {
      c.why = noNccl;
    }
    return c;
  }
  std::map<std::string, std::vector<int>> byDevice;
  for (size_t r = 0; r < ranks.size(); ++r) byDevice[ranks[r].uuid].push_back(static_cast<int>(r));
  std::string shared;
  for (const auto& [uuid, who] : byDevice) {
    if (who.size() > 1 && shared.empty()) shared = rankList(who) + " share device " + uuid;
  }
  const std::string nccl = "NCCL " + versionText(ranks[0].ncclVersion);
  if (forced == "nccl") {
    c.plane = Plane::kNccl;
    c.why = "SMDDP_GPU_PLANE=nccl (" + nccl + (shared.empty() ? "" : "; " + shared) + ")";
    return c;
  }
  if (!shared.empty()) {
    c.why = shared + " (NCCL takes one rank per device)";
    return c;
  }
  c.plane = Plane::kNccl;
  c.why = "every rank holds a device of its own and " + nccl;
  return c;
}

}  // namespace smddp::planes
