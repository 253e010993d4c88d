// SPDX-License-Identifier: Apache-2.0
// all_to_all and all_to_allv (hier) for a communicator over H hosts with L ranks each
// (hierarchical.h). Rank (h, i) is local index i of host h; its cross group is (0, i) .. (H-1, i).
//   0. all_to_allv only, arena: the host's ranks publish their n send sizes, so every rank of the
//      host knows what each of them sends to every rank (the pieces it will forward).
//   1. arena: an all_to_all among the host's ranks, of packs: (h, j) hands (h, i) the pieces it
//      sends to (0, i) .. (H-1, i), host by host.
//   2. network: a pairwise all_to_all in the cross group. (h, i) sends (g, i) one message, the L
//      pieces (h, 0) .. (h, L-1) -> (g, i), and receives from (g, i) the L pieces
//      (g, 0) .. (g, L-1) -> (h, i): straight into the output when they are adjacent there in
//      that order (host-major ranks, all_to_all_single's layout), through scratch otherwise.
// Each rank sends H-1 network messages instead of (H-1) L; a host's link carries the same bytes
// as the flat exchange (no all_to_all's bytes can shrink), in fewer, larger messages. The cost:
// every byte is copied into a pack, through the arena (in and out) and into the cross pack
// before it leaves; data never changes, so the result equals the flat one bit for bit.
// hier_leader (all_to_all of equal blocks B): the host's leader (local index 0) gathers its
// host's L send buffers through the arena, exchanges with every other host's leader one message
// of the L x L blocks that cross between the two hosts (pairwise among the leaders), and hands
// each rank its whole output back through the arena: H-1 network messages per host instead of
// (H-1) L, at the price of the leader's copies and two arena passes of every byte. Hosts may hold
// different numbers of ranks: between hosts of L_h and L_g ranks the message is L_h x L_g blocks.
// all_to_allv counts that disagree: within a host every rank of the host fails in step 0 naming
// the pair; across hosts the receiver fails the cross step's size check (kMismatch, naming the
// counterpart that forwards the pieces).
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/algorithms.h"
#include "algorithms/arena/collectives.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "smddp/error.h"

namespace smddp::algo {
namespace {

// sizes[j * n + q]: the bytes local rank j of this host sends to rank q. all_to_allv: the host's
// ranks publish what they send and what they expect to receive; each checks every pair within
// the host, so all of them fail alike, naming the same pair, before anything moves.
std::vector<size_t> hostSendSizes(Exec& exec, const HostGroups& groups,
                                  const CollectiveArgs& args) {
  const auto n = static_cast<size_t>(exec.size());
  const size_t ranksHere = groups.local.size();
  std::vector<size_t> sizes(ranksHere * n, args.bytes());
  if (!args.uneven()) return sizes;
  std::vector<size_t> expects(ranksHere * n);
  {
    Exec local(exec, groups.local, groups.localSettings, 0);
    const size_t perUse =
        arena::SlotStep::chunkBytes(local, 2 * sizeof(uint64_t)) / (2 * sizeof(uint64_t));
    for (size_t at = 0; at < n; at += perUse) {
      const size_t m = std::min(perUse, n - at);
      arena::SlotStep step(local);
      step.acquire();
      auto* mine = reinterpret_cast<uint64_t*>(step.mine());
      for (size_t q = 0; q < m; ++q) {
        mine[2 * q] = args.sendPieceBytes(at + q);
        mine[2 * q + 1] = args.recvPieceBytes(at + q);
      }
      step.publish(1);
      step.awaitAll(1);
      for (size_t j = 0; j < ranksHere; ++j) {
        const auto* theirs = reinterpret_cast<const uint64_t*>(step.slotOf(static_cast<int>(j)));
        for (size_t q = 0; q < m; ++q) {
          sizes[j * n + at + q] = theirs[2 * q];
          expects[j * n + at + q] = theirs[2 * q + 1];
        }
      }
      step.release();
    }
  }
  for (size_t j = 0; j < ranksHere; ++j) {
    for (size_t k = 0; k < ranksHere; ++k) {
      const auto from = static_cast<size_t>(groups.local[j]);
      const auto to = static_cast<size_t>(groups.local[k]);
      if (sizes[j * n + to] == expects[k * n + from]) continue;
      throw Error(ErrorCode::kMismatch, exec.head() + ": rank " + std::to_string(from) + " sends " +
                                            formatBytes(sizes[j * n + to]) + " to rank " +
                                            std::to_string(to) + ", which expects " +
                                            formatBytes(expects[k * n + from]) +
                                            ": the ranks' send and receive counts differ");
    }
  }
  return sizes;
}

// The rank of local index i on host h.
size_t rankAt(const patterns::HostLayout& layout, size_t h, size_t i) {
  return static_cast<size_t>(layout.ranksOf[h][i]);
}

// Byte pieces for a sub-collective: send pieces then receive pieces, as all_to_allv's args.
CollectiveArgs bytePieces(const std::vector<unsigned char*>& sends,
                          const std::vector<size_t>& sendBytes,
                          const std::vector<unsigned char*>& recvs,
                          const std::vector<size_t>& recvBytes) {
  CollectiveArgs a(Call::of(CollectiveKind::kAllToAllV, DataType::kUInt8, 0), nullptr, nullptr);
  a.blocks.assign(sends.begin(), sends.end());
  a.blocks.insert(a.blocks.end(), recvs.begin(), recvs.end());
  a.counts = sendBytes;
  a.counts.insert(a.counts.end(), recvBytes.begin(), recvBytes.end());
  return a;
}

}  // namespace

void allToAllHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const patterns::HostLayout& layout = groups.layout;
  const auto n = static_cast<size_t>(exec.size());
  const auto hosts = static_cast<size_t>(layout.hosts());
  const size_t ranksHere = groups.local.size();
  const auto index = static_cast<size_t>(layout.localIndex(exec.rank()));
  const std::vector<size_t> sizes = hostSendSizes(exec, groups, args);
  const auto sent = [&](size_t j, size_t q) { return sizes[j * n + q]; };

  // 1. arena: pack[j] = my pieces for (0, j) .. (H-1, j); got[j] = (h, j)'s for (0, i) .. (H-1, i).
  std::vector<unsigned char*> packs(ranksHere), gots(ranksHere);
  std::vector<size_t> packBytes(ranksHere, 0), gotBytes(ranksHere, 0);
  size_t packTotal = 0, gotTotal = 0;
  for (size_t j = 0; j < ranksHere; ++j) {
    for (size_t g = 0; g < hosts; ++g) {
      packBytes[j] += sent(index, rankAt(layout, g, j));
      gotBytes[j] += sent(j, rankAt(layout, g, index));
    }
    packTotal += packBytes[j];
    gotTotal += gotBytes[j];
  }
  auto* pack = static_cast<unsigned char*>(exec.scratch(packTotal, 0));
  auto* got = static_cast<unsigned char*>(exec.scratch(gotTotal, 1));
  for (size_t j = 0, p = 0, q = 0; j < ranksHere; ++j) {
    packs[j] = pack + p;
    gots[j] = got + q;
    for (size_t g = 0; g < hosts; ++g) {
      const size_t to = rankAt(layout, g, j);
      if (sent(index, to) > 0) std::memcpy(pack + p, args.sendPiece(to), sent(index, to));
      p += sent(index, to);
    }
    q += gotBytes[j];
  }
  {
    Exec local(exec, groups.local, groups.localSettings, 0);
    if (args.uneven()) {
      arena::allToAll(local, bytePieces(packs, packBytes, gots, gotBytes));
    } else {  // packs of H blocks each, contiguous: the equal form (no size agreement)
      const Call packed =
          Call::of(CollectiveKind::kAllToAll, DataType::kUInt8, hosts * args.bytes());
      arena::allToAll(local, CollectiveArgs(packed, pack, got));
    }
  }

  // 2. network: the cross pack for (g, i) is the pieces (h, 0..L-1) -> (g, i), taken from got.
  std::vector<unsigned char*> crossSends(hosts), crossRecvs(hosts);
  std::vector<size_t> crossSendBytes(hosts, 0), crossRecvBytes(hosts, 0);
  std::vector<bool> direct(hosts, true);
  size_t crossTotal = 0, landTotal = 0;
  for (size_t g = 0; g < hosts; ++g) {
    for (size_t j = 0; j < ranksHere; ++j) {
      crossSendBytes[g] += sent(j, rankAt(layout, g, index));
      const size_t from = rankAt(layout, g, j);
      crossRecvBytes[g] += args.recvPieceBytes(from);
      if (j > 0) {
        const size_t prev = rankAt(layout, g, j - 1);
        direct[g] = direct[g] && static_cast<unsigned char*>(args.recvPiece(prev)) +
                                         args.recvPieceBytes(prev) ==
                                     static_cast<unsigned char*>(args.recvPiece(from));
      }
    }
    crossTotal += crossSendBytes[g];
    if (!direct[g]) landTotal += crossRecvBytes[g];
  }
  auto* crossPack = static_cast<unsigned char*>(exec.scratch(crossTotal, 2));
  auto* land = static_cast<unsigned char*>(exec.scratch(landTotal, 3));
  std::vector<size_t> within(ranksHere, 0);  // how far into got[j] the next host's pieces start
  for (size_t g = 0, c = 0, l = 0; g < hosts; ++g) {
    crossSends[g] = crossPack + c;
    for (size_t j = 0; j < ranksHere; ++j) {
      const size_t len = sent(j, rankAt(layout, g, index));
      if (len > 0) std::memcpy(crossPack + c, gots[j] + within[j], len);
      within[j] += len;
      c += len;
    }
    if (direct[g]) {
      crossRecvs[g] = static_cast<unsigned char*>(args.recvPiece(rankAt(layout, g, 0)));
    } else {
      crossRecvs[g] = land + l;
      l += crossRecvBytes[g];
    }
  }
  {
    Exec cross(exec, groups.cross, groups.crossSettings, 0);
    allToAllPairwise(cross, bytePieces(crossSends, crossSendBytes, crossRecvs, crossRecvBytes));
  }
  for (size_t g = 0; g < hosts; ++g) {
    if (direct[g]) continue;
    const unsigned char* from = crossRecvs[g];
    for (size_t j = 0; j < ranksHere; ++j) {
      const size_t src = rankAt(layout, g, j);
      const size_t len = args.recvPieceBytes(src);
      if (len > 0) std::memcpy(args.recvPiece(src), from, len);
      from += len;
    }
  }
}

void allToAllHierLeader(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const patterns::HostLayout& layout = groups.layout;
  const auto n = static_cast<size_t>(exec.size());
  const auto hosts = static_cast<size_t>(layout.hosts());
  const size_t ranksHere = groups.local.size();
  const size_t block = args.bytes();
  const size_t row = n * block;  // one rank's send (or receive) buffer
  const size_t es = args.elementSize();
  Exec local(exec, groups.local, groups.localSettings, 0);
  const bool leader = local.rank() == 0;
  // The leader's: the host's send buffers in local order, later its ranks' outputs.
  auto* rows = leader ? static_cast<unsigned char*>(exec.scratch(ranksHere * row, 0)) : nullptr;
  hier::hostGather(local, 0, static_cast<const unsigned char*>(args.send), row, es, rows);
  if (leader) {
    // To host g of L_g ranks, [j][k]: block (h, j) -> (g, k); from g, [j][k]: (g, j) -> (h, k).
    auto* out = static_cast<unsigned char*>(exec.scratch(ranksHere * row, 1));
    auto* in = static_cast<unsigned char*>(exec.scratch(ranksHere * row, 2));
    std::vector<unsigned char*> sends(hosts), recvs(hosts);
    std::vector<size_t> pairBytes(hosts);
    for (size_t g = 0, at = 0; g < hosts; ++g) {
      const size_t there = layout.ranksOf[g].size();
      sends[g] = out + at;
      recvs[g] = in + at;
      pairBytes[g] = ranksHere * there * block;
      for (size_t j = 0; j < ranksHere; ++j) {
        for (size_t k = 0; k < there; ++k) {
          std::memcpy(sends[g] + (j * there + k) * block, rows + j * row + rankAt(layout, g, k) * block,
                      block);
        }
      }
      at += pairBytes[g];
    }
    {
      Exec cross(exec, groups.cross, groups.crossSettings, 0);
      allToAllPairwise(cross, bytePieces(sends, pairBytes, recvs, pairBytes));
    }
    for (size_t g = 0; g < hosts; ++g) {
      const size_t there = layout.ranksOf[g].size();
      for (size_t j = 0; j < there; ++j) {
        for (size_t k = 0; k < ranksHere; ++k) {
          std::memcpy(rows + k * row + rankAt(layout, g, j) * block,
                      recvs[g] + (j * ranksHere + k) * block, block);
        }
      }
    }
  }
  hier::hostScatter(local, 0, rows, row, es, static_cast<unsigned char*>(args.recv));
}

}  // namespace smddp::algo
