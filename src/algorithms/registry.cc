// SPDX-License-Identifier: Apache-2.0
// Finding an algorithm in the collectives' tables (tables.cc), and the parser of SMDDP_ALGO
// overrides: the collectives' names users type, and the arena algorithms' former names.
#include "algorithms/registry.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include "algorithms/arena/arena.h"
#include "smddp/error.h"

namespace smddp::algo {
namespace {

using K = CollectiveKind;

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Each collective's name, then its other spellings.
const std::vector<std::pair<const char*, CollectiveKind>>& collectiveNames() {
  static const std::vector<std::pair<const char*, CollectiveKind>> names = {
      {"all_reduce", K::kAllReduce},
      {"allreduce", K::kAllReduce},
      {"broadcast", K::kBroadcast},
      {"all_gather", K::kAllGather},
      {"allgather", K::kAllGather},
      {"barrier", K::kBarrier},
      {"reduce_scatter", K::kReduceScatter},
      {"reducescatter", K::kReduceScatter},
      {"reduce", K::kReduce},
      {"gather", K::kGather},
      {"scatter", K::kScatter},
      {"all_to_all", K::kAllToAll},
      {"alltoall", K::kAllToAll}};
  return names;
}

// The arena algorithms' names before the arena had its own ("shm" was also libfabric's provider),
// still accepted in SMDDP_ALGO.
std::string currentName(const std::string& name) {
  static const std::map<std::string, std::string> former = {{"shm", "arena"},
                                                            {"shm_direct", "arena_direct"},
                                                            {"shm_split", "arena_split"},
                                                            {"shm_eager", "arena_eager"}};
  const auto it = former.find(name);
  return it == former.end() ? name : it->second;
}

// "all_reduce (allreduce), broadcast, ...": each collective's name, its other spellings in
// parentheses.
std::string collectiveList() {
  const auto& names = collectiveNames();
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    const bool alias = i > 0 && names[i - 1].second == names[i].second;
    list += alias ? " (" + std::string(names[i].first) + ")"
                  : (i > 0 ? ", " : "") + std::string(names[i].first);
  }
  return list;
}

std::string algorithmNames(CollectiveKind kind) {
  std::string list;
  for (const Algorithm& a : algorithmsOf(kind)) {
    list += (list.empty() ? "" : ", ") + std::string(a.name);
  }
  return list;
}

[[noreturn]] void badSpec(const std::string& spec, const std::string& entry,
                          const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument,
              "smddp: SMDDP_ALGO=\"" + spec + "\": entry \"" + entry + "\": " + why);
}

CollectiveKind parseCollective(const std::string& spec, const std::string& entry,
                               const std::string& name) {
  for (const auto& [text, kind] : collectiveNames()) {
    if (name == text) return kind;
  }
  badSpec(spec, entry, "unknown collective \"" + name + "\"; valid: " + collectiveList());
}

}  // namespace

// registry() holds each collective's table as one run.
AlgorithmSpan algorithmsOf(CollectiveKind kind) {
  const std::vector<Algorithm>& all = registry();
  const Algorithm* first = all.data();
  const Algorithm* end = all.data() + all.size();
  while (first != end && first->kind != kind) ++first;
  const Algorithm* last = first;
  while (last != end && last->kind == kind) ++last;
  return {first, last};
}

void runCollective(const Algorithm& algorithm, Exec& exec, const CollectiveArgs& args) {
  arena::settleDeferred(exec, algorithm.needs.arena);
  algorithm.run(exec, args);
  exec.waitAll();
}

const Algorithm* findAlgorithm(CollectiveKind kind, const char* name) {
  for (const Algorithm& a : algorithmsOf(kind)) {
    if (std::strcmp(name, a.name) == 0) return &a;
  }
  return nullptr;
}

// "allreduce:ring; broadcast : chain" -> {all_reduce: ring, broadcast: chain}. Entries are
// separated by ';' (',' accepted too); empty entries are ignored; names are case-insensitive.
AlgorithmOverrides parseAlgorithmOverrides(const std::string& spec) {
  AlgorithmOverrides overrides;
  std::string normalized = spec;
  std::replace(normalized.begin(), normalized.end(), ',', ';');
  size_t start = 0;
  while (start <= normalized.size()) {
    size_t stop = normalized.find(';', start);
    if (stop == std::string::npos) stop = normalized.size();
    const std::string entry = trim(normalized.substr(start, stop - start));
    start = stop + 1;
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) badSpec(spec, entry, "expected collective:algorithm");
    const CollectiveKind kind = parseCollective(spec, entry, lower(trim(entry.substr(0, colon))));
    const std::string name = currentName(lower(trim(entry.substr(colon + 1))));
    if (findAlgorithm(kind, name.c_str()) == nullptr) {
      badSpec(spec, entry,
              "unknown " + std::string(toString(kind)) + " algorithm \"" + name +
                  "\"; valid: " + algorithmNames(kind));
    }
    const auto [it, fresh] = overrides.emplace(kind, name);
    if (!fresh && it->second != name) {
      badSpec(spec, entry, std::string(toString(kind)) + " is already set to " + it->second);
    }
    // all_to_all names both forms, equal and uneven: they have the same algorithms.
    if (kind == K::kAllToAll) overrides[K::kAllToAllV] = name;
  }
  return overrides;
}

const Algorithm& deterministicAlgorithm(CollectiveKind kind, size_t bytes,
                                        const Topology& topology) {
  // These reduce every element as ((x0 op x1) op x2) ... (arena/slot_step.h: reduceSlots, and
  // arena_split's own loop under ExecSettings::rankOrder), as fixed_order does.
  static const char* const kRankOrdered[] = {"arena_direct", "arena_split", "arena"};
  const Algorithm& usual = selectAlgorithm(kind, bytes, topology, AlgorithmOverrides{});
  for (const char* name : kRankOrdered) {
    if (std::strcmp(usual.name, name) == 0) return usual;
  }
  // pooled: its form for tensors outside the shareable memory (the order of its in-place form
  // is its own).
  if (std::strcmp(usual.name, "pooled") == 0) {
    const char* fallback = kind == CollectiveKind::kAllReduce ? "arena_split" : "arena";
    if (const Algorithm* a = findAlgorithm(kind, fallback)) return *a;
  }
  const Algorithm* fixed = findAlgorithm(kind, "fixed_order");
  if (fixed == nullptr) {
    throw Error(ErrorCode::kInternal,
                std::string("smddp: no fixed_order algorithm for ") + toString(kind));
  }
  return *fixed;
}

}  // namespace smddp::algo
