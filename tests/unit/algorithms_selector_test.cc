// SPDX-License-Identifier: Apache-2.0
// The registry, the SMDDP_ALGO parser and the selector: pure functions, tested without a network.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "algorithms/registry.h"
#include "smddp/error.h"

namespace smddp::algo {
namespace {

using K = CollectiveKind;

std::string pick(K kind, size_t bytes, int ranks, const AlgorithmOverrides& o = {}) {
  return selectAlgorithm(kind, bytes, Topology{ranks, 1}, o).name;
}

TEST(Registry, EveryCollectiveHasNamedDescribedAlgorithms) {
  std::set<std::pair<K, std::string>> seen;
  for (const Algorithm& a : registry()) {
    EXPECT_TRUE(seen.emplace(a.kind, a.name).second) << "duplicate " << a.name;
    EXPECT_GT(std::string(a.description).size(), 10u) << a.name;
    EXPECT_NE(a.run, nullptr) << a.name;
    EXPECT_EQ(findAlgorithm(a.kind, a.name), &a) << a.name;
  }
  for (K k : {K::kAllReduce, K::kBroadcast, K::kAllGather, K::kBarrier, K::kReduceScatter,
              K::kReduce, K::kGather, K::kScatter, K::kAllToAll, K::kAllToAllV}) {
    bool any = false;
    for (const Algorithm& a : registry()) any = any || a.kind == k;
    EXPECT_TRUE(any) << toString(k);
  }
  EXPECT_EQ(findAlgorithm(K::kAllReduce, "bruck"), nullptr);
  EXPECT_NE(findAlgorithm(K::kAllGather, "bruck"), nullptr);
}

TEST(Selector, AllReduceThreshold) {
  for (int ranks : {2, 3, 8, 16}) {
    EXPECT_EQ(pick(K::kAllReduce, 4, ranks), "recursive_doubling") << ranks;
    EXPECT_EQ(pick(K::kAllReduce, 64 * 1024, ranks), "recursive_doubling") << ranks;
    EXPECT_EQ(pick(K::kAllReduce, 64 * 1024 + 1, ranks), "ring") << ranks;
    EXPECT_EQ(pick(K::kAllReduce, size_t{1} << 30, ranks), "ring") << ranks;
  }
}

TEST(Selector, ArenaAlgorithmsWhenEveryRankSharesTheHost) {
  const AlgorithmOverrides none;
  for (int ranks : {2, 3, 8}) {
    const Topology t{ranks, 1, true};
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 8, t, none).name, "arena_direct");
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 16 * 1024, t, none).name, "arena_direct");
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 16 * 1024 + 4, t, none).name, "arena_split");
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 64 << 20, t, none).name, "arena_split");
    for (K k : {K::kBroadcast, K::kAllGather, K::kBarrier}) {
      for (size_t bytes : {size_t{0}, size_t{4}, size_t{64} << 20}) {
        EXPECT_STREQ(selectAlgorithm(k, bytes, t, none).name, "arena") << toString(k);
      }
    }
    // With an eager ring, broadcasts up to its size take it.
    const Topology eager{ranks, 1, true, 4096};
    EXPECT_STREQ(selectAlgorithm(K::kBroadcast, 1, eager, none).name, "arena_eager");
    EXPECT_STREQ(selectAlgorithm(K::kBroadcast, 4096, eager, none).name, "arena_eager");
    EXPECT_STREQ(selectAlgorithm(K::kBroadcast, 4097, eager, none).name, "arena");
    EXPECT_STREQ(selectAlgorithm(K::kAllGather, 4, eager, none).name, "arena");
    EXPECT_STREQ(selectAlgorithm(K::kBarrier, 0, eager, none).name, "arena");
    // An override still wins over the arena.
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 8, t, {{K::kAllReduce, "ring"}}).name, "ring");
  }
}

TEST(Selector, ArenaAlgorithmWithoutArenaIsAnError) {
  for (const Algorithm& a : registry()) {
    if (!a.needsArena()) continue;
    try {
      selectAlgorithm(a.kind, 1024, Topology{2, 1, false}, {{a.kind, a.name}});
      ADD_FAILURE() << a.name << " selected without an arena";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("shared-memory arena"), std::string::npos) << e.what();
    }
  }
}

// With shareable tensor memory, from kInPlaceMinBytes (the largest buffer: over all ranks for
// all_gather and reduce_scatter) the four in-place forms; below, and without the arena, as before.
TEST(Selector, PooledFromTheInPlaceSize) {
  const AlgorithmOverrides none;
  Topology t{4, 1, true, 4096};
  t.pool = true;
  const size_t m = kInPlaceMinBytes;
  EXPECT_STREQ(selectAlgorithm(K::kAllReduce, m - 4, t, none).name, "arena_split");
  EXPECT_STREQ(selectAlgorithm(K::kAllReduce, m, t, none).name, "pooled");
  EXPECT_STREQ(selectAlgorithm(K::kBroadcast, m - 4, t, none).name, "arena");
  EXPECT_STREQ(selectAlgorithm(K::kBroadcast, m, t, none).name, "pooled");
  for (K kind : {K::kAllGather, K::kReduceScatter}) {
    EXPECT_STREQ(selectAlgorithm(kind, m / 4 - 4, t, none).name, "arena") << toString(kind);
    EXPECT_STREQ(selectAlgorithm(kind, m / 4, t, none).name, "pooled") << toString(kind);
  }
  for (K kind : {K::kReduce, K::kGather, K::kScatter, K::kAllToAllV}) {
    EXPECT_STREQ(selectAlgorithm(kind, m, t, none).name, "arena") << toString(kind);
  }
  Topology noArena{4, 1};
  noArena.pool = true;
  EXPECT_STREQ(selectAlgorithm(K::kAllReduce, m, noArena, none).name, "ring");
}

// The rooted collectives and reduce_scatter: one algorithm per layout, at every size.
TEST(Selector, RootedAndReduceScatterByLayout) {
  const AlgorithmOverrides none;
  for (size_t bytes : {size_t{0}, size_t{8}, size_t{64} << 20}) {
    EXPECT_STREQ(selectAlgorithm(K::kReduceScatter, bytes, Topology{5, 1}, none).name, "ring");
    EXPECT_STREQ(selectAlgorithm(K::kReduce, bytes, Topology{5, 1}, none).name, "binomial");
    EXPECT_STREQ(selectAlgorithm(K::kGather, bytes, Topology{5, 1}, none).name, "linear");
    EXPECT_STREQ(selectAlgorithm(K::kScatter, bytes, Topology{5, 1}, none).name, "linear");
    for (K kind : {K::kReduceScatter, K::kReduce, K::kGather, K::kScatter}) {
      EXPECT_STREQ(selectAlgorithm(kind, bytes, Topology{5, 1, true}, none).name, "arena")
          << toString(kind);
    }
  }
}

TEST(Selector, BroadcastThreshold) {
  EXPECT_EQ(pick(K::kBroadcast, 64 * 1024, 8), "binomial");
  EXPECT_EQ(pick(K::kBroadcast, 64 * 1024 + 1, 8), "chain");
  EXPECT_EQ(pick(K::kBroadcast, size_t{1} << 30, 2), "binomial");  // one hop: nothing to pipeline
  EXPECT_EQ(pick(K::kBroadcast, size_t{1} << 30, 3), "chain");
}

TEST(Selector, AllGatherThresholdOnGatheredSize) {
  EXPECT_EQ(pick(K::kAllGather, 8 * 1024, 8), "bruck");  // 64 KiB gathered
  EXPECT_EQ(pick(K::kAllGather, 8 * 1024 + 1, 8), "ring");
  EXPECT_EQ(pick(K::kAllGather, 32 * 1024, 2), "bruck");
  EXPECT_EQ(pick(K::kAllGather, 32 * 1024, 4), "ring");
}

TEST(Selector, AllToAllPairwiseOrArenaForBothForms) {
  const AlgorithmOverrides none;
  for (K k : {K::kAllToAll, K::kAllToAllV}) {
    for (size_t bytes : {size_t{0}, size_t{8}, size_t{1} << 30}) {
      EXPECT_EQ(pick(k, bytes, 5), "pairwise") << toString(k);
    }
  }
  const Topology arena{5, 1, true};
  EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 8, arena, none).name, "arena");
  EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 64 * 1024 - 4, arena, none).name, "arena");
  // Large blocks: one copy through libfabric's shm beats the arena's two.
  EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 64 * 1024, arena, none).name, "pairwise");
  EXPECT_STREQ(selectAlgorithm(K::kAllToAllV, size_t{1} << 30, arena, none).name, "arena");
  // One name sets both forms: they share their algorithms.
  const AlgorithmOverrides o = parseAlgorithmOverrides("alltoall:pairwise");
  EXPECT_EQ(o.at(K::kAllToAll), "pairwise");
  EXPECT_EQ(o.at(K::kAllToAllV), "pairwise");
  EXPECT_STREQ(selectAlgorithm(K::kAllToAllV, 8, Topology{3, 1, true}, o).name, "pairwise");
}

TEST(Selector, BarrierAndControl) {
  EXPECT_EQ(pick(K::kBarrier, 0, 7), "dissemination");
  try {
    pick(K::kControl, 0, 2);
    FAIL() << "control must not select an algorithm";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

TEST(Selector, OverrideWins) {
  const AlgorithmOverrides o = parseAlgorithmOverrides("allreduce:ring;broadcast:chain");
  EXPECT_EQ(pick(K::kAllReduce, 4, 8, o), "ring");
  EXPECT_EQ(pick(K::kBroadcast, 4, 2, o), "chain");
  EXPECT_EQ(pick(K::kAllGather, 4, 8, o), "bruck");  // not overridden: default rule
  const AlgorithmOverrides small = parseAlgorithmOverrides("all_reduce:recursive_doubling");
  EXPECT_EQ(pick(K::kAllReduce, size_t{1} << 30, 8, small), "recursive_doubling");
}

TEST(Selector, HandMadeBadOverrideIsAnError) {
  AlgorithmOverrides o;
  o[K::kAllReduce] = "tree";
  try {
    pick(K::kAllReduce, 4, 8, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("tree"), std::string::npos) << e.what();
  }
}

// Hosts with different numbers of ranks: the forms with one rank per host on the network where
// they were measured faster (all_reduce always; broadcast above 16 KiB; all_gather and
// reduce_scatter up to 128 KiB, all_to_all up to 64 KiB over all ranks; barrier, reduce, gather,
// scatter); the forms that pair every local index across hosts are refused by name, naming the
// layout; all_to_allv stays flat.
TEST(Selector, UnevenHostsTakeTheLeaderForms) {
  const AlgorithmOverrides none;
  Topology t{6, 3};
  t.unevenHosts = true;
  for (size_t bytes : {size_t{0}, size_t{8}, size_t{16} * 1024 + 4, size_t{64} << 20}) {
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, bytes, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kBroadcast, bytes, t, none).name,
                 bytes > 16 * 1024 ? "hier_leader" : "binomial");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAll, bytes, t, none).name,
                 bytes * 6 <= 64 * 1024 ? "hier_leader" : "pairwise");
    // all_gather and reduce_scatter: the flat ring from 128 KiB over all ranks, where the link
    // rules and the flat ring's busiest host carries no more than the leader's.
    for (K kind : {K::kAllGather, K::kReduceScatter}) {
      EXPECT_STREQ(selectAlgorithm(kind, bytes, t, none).name,
                   bytes * 6 <= 128 * 1024 ? "hier_leader" : "ring")
          << toString(kind) << " " << bytes;
    }
    for (K kind : {K::kBarrier, K::kReduce, K::kGather, K::kScatter}) {
      EXPECT_STREQ(selectAlgorithm(kind, bytes, t, none).name, "hier") << toString(kind);
    }
    EXPECT_STREQ(selectAlgorithm(K::kAllToAllV, bytes, t, none).name, "pairwise");
  }
  for (const char* spec : {"allreduce:hier_split", "allreduce:hier_direct", "allgather:hier",
                           "broadcast:hier", "reduce_scatter:hier", "all_to_all:hier"}) {
    const AlgorithmOverrides o = parseAlgorithmOverrides(spec);
    try {
      selectAlgorithm(o.begin()->first, 1024, t, o);
      ADD_FAILURE() << spec << " was accepted on uneven hosts";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << spec;
      EXPECT_NE(std::string(e.what()).find("not the same number on each"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Selector, HierarchicalAcrossHostsWithArenas) {
  const AlgorithmOverrides none;
  for (int hosts : {2, 3, 7}) {
    Topology t{hosts * 2, hosts};
    t.hostArenas = true;
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 8, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 16 * 1024, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 16 * 1024 + 4, t, none).name, "hier_split");
    EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 64 << 20, t, none).name, "hier_split");
    // every collective is hierarchical (all_to_all for small blocks; all_to_allv by name only);
    // the flat algorithms stay available by name.
    for (size_t bytes : {size_t{1} << 20, size_t{64} << 20}) {
      EXPECT_STREQ(selectAlgorithm(K::kReduceScatter, bytes, t, none).name, "hier");
    }
    EXPECT_STREQ(selectAlgorithm(K::kBroadcast, 8, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kBroadcast, 16 * 1024, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kBroadcast, 16 * 1024 + 4, t, none).name, "hier");
    const size_t ranks = static_cast<size_t>(t.ranks);  // all_gather: by the gathered size
    EXPECT_STREQ(selectAlgorithm(K::kAllGather, 8, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kAllGather, 65536 / ranks, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kAllGather, 65536 / ranks + 8, t, none).name, "hier");
    EXPECT_STREQ(selectAlgorithm(K::kReduceScatter, 8, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kReduceScatter, 65536 / ranks, t, none).name,
                 "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kReduceScatter, 65536 / ranks + 8, t, none).name, "hier");
    EXPECT_STREQ(
        selectAlgorithm(K::kAllReduce, 64 << 20, t, parseAlgorithmOverrides("allreduce:ring")).name,
        "ring");
    EXPECT_STREQ(
        selectAlgorithm(K::kAllGather, 8, t, parseAlgorithmOverrides("allgather:bruck")).name,
        "bruck");
    for (K kind : {K::kReduce, K::kGather, K::kScatter}) {
      EXPECT_STREQ(selectAlgorithm(kind, 8, t, none).name, "hier");
      EXPECT_STREQ(selectAlgorithm(kind, 64 << 20, t, none).name, "hier");
    }
    EXPECT_STREQ(selectAlgorithm(K::kBarrier, 0, t, none).name, "hier");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 8, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 16384 / ranks, t, none).name, "hier_leader");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 16384 / ranks + 4, t, none).name, "hier");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 16 * 1024, t, none).name, "hier");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 16 * 1024 + 4, t, none).name, "pairwise");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAllV, 8, t, none).name, "pairwise");
    const AlgorithmOverrides hier = parseAlgorithmOverrides("all_to_all:hier");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAll, 64 << 20, t, hier).name, "hier");
    EXPECT_STREQ(selectAlgorithm(K::kAllToAllV, 8, t, hier).name, "hier");
  }
  for (K kind : {K::kBroadcast, K::kAllGather, K::kReduceScatter}) {
    EXPECT_STREQ(selectAlgorithm(kind, 8, Topology{6, 2}, none).name,
                 kind == K::kBroadcast ? "binomial" : kind == K::kAllGather ? "bruck" : "ring");
    EXPECT_THROW(selectAlgorithm(kind, 8, Topology{6, 2},
                                 parseAlgorithmOverrides(std::string(toString(kind)) + ":hier")),
                 Error);
  }
  // Without host arenas (one host, SMDDP_ARENA=0): flat by default, and
  // a hierarchical override is refused naming the layout.
  const Topology flat{6, 2};
  EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 8, flat, none).name, "recursive_doubling");
  EXPECT_STREQ(selectAlgorithm(K::kAllReduce, 1 << 20, flat, none).name, "ring");
  try {
    selectAlgorithm(K::kAllReduce, 8, flat, parseAlgorithmOverrides("allreduce:hier_split"));
    ADD_FAILURE() << "hier_split accepted without host arenas";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("6 rank(s) on 2 host(s)"), std::string::npos) << e.what();
  }
}

TEST(Overrides, ParsesAllSpellingsAndWhitespace) {
  EXPECT_TRUE(parseAlgorithmOverrides("").empty());
  EXPECT_TRUE(parseAlgorithmOverrides(" ; ;").empty());
  const AlgorithmOverrides o = parseAlgorithmOverrides(
      "  all_reduce : recursive_doubling ;allgather:RING;; Broadcast:binomial ; "
      "barrier:dissemination;");
  ASSERT_EQ(o.size(), 4u);
  EXPECT_EQ(o.at(K::kAllReduce), "recursive_doubling");
  EXPECT_EQ(o.at(K::kAllGather), "ring");
  EXPECT_EQ(o.at(K::kBroadcast), "binomial");
  EXPECT_EQ(o.at(K::kBarrier), "dissemination");
  const AlgorithmOverrides p = parseAlgorithmOverrides("allreduce:ring,all_gather:bruck");
  EXPECT_EQ(p.at(K::kAllReduce), "ring");
  EXPECT_EQ(p.at(K::kAllGather), "bruck");
  EXPECT_EQ(parseAlgorithmOverrides("allreduce:ring;all_reduce:ring").size(), 1u);
}

TEST(Overrides, TheArenaAlgorithmsFormerNamesStillParse) {
  const AlgorithmOverrides o =
      parseAlgorithmOverrides("allreduce:shm_split;broadcast:SHM_EAGER;allgather:shm;barrier:shm");
  EXPECT_EQ(o.at(K::kAllReduce), "arena_split");
  EXPECT_EQ(o.at(K::kBroadcast), "arena_eager");
  EXPECT_EQ(o.at(K::kAllGather), "arena");
  EXPECT_EQ(o.at(K::kBarrier), "arena");
  EXPECT_EQ(parseAlgorithmOverrides("all_reduce:shm_direct").at(K::kAllReduce), "arena_direct");
  EXPECT_EQ(parseAlgorithmOverrides("broadcast:arena").at(K::kBroadcast), "arena");
}

void expectParseError(const std::string& spec, const std::vector<std::string>& mentions) {
  try {
    parseAlgorithmOverrides(spec);
    ADD_FAILURE() << "\"" << spec << "\" parsed without error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << spec;
    for (const std::string& m : mentions) {
      EXPECT_NE(std::string(e.what()).find(m), std::string::npos)
          << "\"" << spec << "\": message lacks \"" << m << "\": " << e.what();
    }
  }
}

TEST(Overrides, ErrorsNameTheEntryAndTheValidNames) {
  expectParseError("allreduce", {"allreduce", "collective:algorithm"});
  expectParseError("sendrecv:ring",
                   {"sendrecv", "all_reduce", "broadcast", "all_gather", "barrier",
                    "reduce_scatter", "reduce", "gather", "scatter", "all_to_all"});
  expectParseError("alltoall:ring", {"unknown all_to_all algorithm \"ring\"", "pairwise, arena"});
  expectParseError("allreduce:tree", {"tree", "recursive_doubling", "ring"});
  expectParseError("broadcast:ring", {"broadcast", "binomial", "chain"});
  expectParseError("allgather:chain", {"bruck", "ring"});
  expectParseError("barrier:", {"barrier", "dissemination"});
  expectParseError("allreduce:ring;broadcast:chain;all_reduce:recursive_doubling",
                   {"already set", "ring"});
}

// The collectives' list in the error is derived from the parser's names: this is its text.
TEST(Overrides, UnknownCollectiveListsEveryNameWithItsSpellings) {
  expectParseError("sendrecv:ring",
                   {"valid: all_reduce (allreduce), broadcast, all_gather (allgather), barrier, "
                    "reduce_scatter (reducescatter), reduce, gather, scatter, all_to_all "
                    "(alltoall)"});
}

// Each collective's table is one run of the registry, in the order its errors list.
TEST(Registry, EachCollectivesTableIsOneRun) {
  size_t total = 0;
  for (K k : {K::kAllReduce, K::kBroadcast, K::kAllGather, K::kBarrier, K::kReduceScatter,
              K::kReduce, K::kGather, K::kScatter, K::kAllToAll, K::kAllToAllV}) {
    for (const Algorithm& a : algorithmsOf(k)) {
      EXPECT_EQ(a.kind, k) << a.name;
      ++total;
    }
  }
  EXPECT_EQ(total, registry().size());
  EXPECT_EQ(algorithmsOf(K::kSend).begin(), algorithmsOf(K::kSend).end());
  std::string names;
  for (const Algorithm& a : algorithmsOf(K::kAllReduce)) names += std::string(a.name) + " ";
  EXPECT_EQ(names,
            "recursive_doubling ring hier_direct hier_leader hier_split arena_direct arena_split "
            "pooled fixed_order ");
}

// SMDDP_DETERMINISTIC: the rank-order forms of one host's arena where the selector takes the
// arena (pooled's one-host fallback, arena_split, for large buffers), fixed_order everywhere
// else; never an algorithm that reduces in another order.
TEST(Deterministic, RankOrderFormsOnly) {
  Topology one;
  one.ranks = 4;
  one.arena = true;
  one.pool = true;
  EXPECT_STREQ(deterministicAlgorithm(K::kAllReduce, 64, one).name, "arena_direct");
  EXPECT_STREQ(deterministicAlgorithm(K::kAllReduce, 256 << 10, one).name, "arena_split");
  EXPECT_STREQ(deterministicAlgorithm(K::kAllReduce, 64 << 20, one).name, "arena_split");
  EXPECT_STREQ(deterministicAlgorithm(K::kReduceScatter, 64 << 20, one).name, "arena");
  EXPECT_STREQ(deterministicAlgorithm(K::kReduce, 64, one).name, "arena");
  Topology flat;
  flat.ranks = 4;
  Topology hosts = one;
  hosts.hosts = 2;
  hosts.hostArenas = true;
  for (const Topology& t : {flat, hosts}) {
    for (K k : {K::kAllReduce, K::kReduceScatter, K::kReduce}) {
      for (size_t bytes : {size_t{4}, size_t{1} << 20, size_t{64} << 20}) {
        EXPECT_STREQ(deterministicAlgorithm(k, bytes, t).name, "fixed_order") << toString(k);
      }
    }
  }
}

// The cross-host all_reduce goes from recursive doubling to the ring at 64 KiB per rank with 2
// hosts, later as the ring's 2 (H - 1) steps outgrow recursive doubling's: never earlier with
// more hosts of the same kind (powers of two), above 1 MiB per rank with 128.
TEST(Selector, CrossHostRingStartsLaterWithMoreHosts) {
  EXPECT_EQ(crossRingMinBytes(1), 64u * 1024);
  EXPECT_EQ(crossRingMinBytes(2), 64u * 1024);
  EXPECT_EQ(crossRingMinBytes(3),
            32u * 1024 * 4 / 3);                // 4 ring steps, 1 + 2 for recursive doubling
  EXPECT_EQ(crossRingMinBytes(4), 96u * 1024);  // 6 against 2
  size_t last = 0;
  for (int h = 2; h <= 1024; h *= 2) {
    EXPECT_GE(crossRingMinBytes(h), last) << h << " hosts";
    last = crossRingMinBytes(h);
  }
  EXPECT_GT(crossRingMinBytes(128), 1u << 20);
  EXPECT_LT(crossRingMinBytes(128), 2u << 20);
}

}  // namespace
}  // namespace smddp::algo
