// SPDX-License-Identifier: Apache-2.0
// A CUDA call's pinned-block layout (staged_layout.h).
#include "planes/smddp/staged_layout.h"

#include <algorithm>

#include "smddp/error.h"

namespace smddp::planes {
namespace {

constexpr size_t kAlign = 64;

struct Region {
  uintptr_t begin;
  size_t bytes;
  bool out;
};

// The bytes this rank's call reads (out false) and writes (out true), as validate left them.
std::vector<Region> regionsOf(const algo::CollectiveArgs& a, int rank, int size) {
  std::vector<Region> r;
  auto add = [&r](const void* p, size_t bytes, bool out) {
    if (bytes > 0) r.push_back({reinterpret_cast<uintptr_t>(p), bytes, out});
  };
  const size_t n = static_cast<size_t>(size);
  const bool root = a.root == rank;
  switch (a.kind) {
    case CollectiveKind::kAllReduce:
      add(a.send, a.bytes(), false);
      add(a.recv, a.bytes(), true);
      break;
    case CollectiveKind::kBroadcast:
      if (root) add(a.send, a.bytes(), false);
      add(a.recv, a.bytes(), true);
      break;
    case CollectiveKind::kReduce:
      add(a.send, a.bytes(), false);
      if (root) add(a.recv, a.bytes(), true);
      break;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kGather:
      add(a.send, a.bytes(), false);
      if (a.kind == CollectiveKind::kGather && !root) break;
      if (a.blocks.empty()) add(a.recv, a.bytes() * n, true);  // one buffer: kept contiguous
      for (size_t q = 0; q < a.blocks.size(); ++q) add(a.blocks[q], a.bytes(), true);
      break;
    case CollectiveKind::kScatter:
      if (root && a.blocks.empty()) add(a.send, a.bytes() * n, false);
      for (size_t q = 0; root && q < a.blocks.size(); ++q) add(a.blocks[q], a.bytes(), false);
      add(a.recv, a.bytes(), true);
      break;
    case CollectiveKind::kReduceScatter:
      add(a.send, a.bytes() * n, false);
      add(a.recv, a.bytes(), true);
      break;
    case CollectiveKind::kAllToAll:
      add(a.send, a.bytes() * n, false);
      add(a.recv, a.bytes() * n, true);
      break;
    case CollectiveKind::kSend:
      add(a.send, a.bytes(), false);
      break;
    case CollectiveKind::kRecv:
      add(a.recv, a.bytes(), true);
      break;
    case CollectiveKind::kAllToAllV:
      for (size_t q = 0; q < n; ++q) {
        add(a.sendPiece(q), a.sendPieceBytes(q), false);
        add(a.recvPiece(q), a.recvPieceBytes(q), true);
      }
      break;
    default:
      break;
  }
  return r;
}

struct Range {
  uintptr_t begin;
  uintptr_t end;
  size_t offset;
};

class BlockMap {
 public:
  explicit BlockMap(std::vector<Region> regions) {
    std::sort(regions.begin(), regions.end(),
              [](const Region& x, const Region& y) { return x.begin < y.begin; });
    for (const Region& g : regions) {
      if (!ranges_.empty() && g.begin <= ranges_.back().end) {  // touching ranges stay one
        ranges_.back().end = std::max(ranges_.back().end, g.begin + g.bytes);
      } else {
        ranges_.push_back({g.begin, g.begin + g.bytes, 0});
      }
    }
    for (Range& r : ranges_) {
      r.offset = bytes_;
      bytes_ += (r.end - r.begin + kAlign - 1) / kAlign * kAlign;
    }
  }
  size_t bytes() const { return bytes_; }
  // The block offset of a device address inside one of the ranges (an empty piece's address may
  // lie outside every range: it maps to offset 0 and is never dereferenced).
  size_t offsetOf(const void* p) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    for (const Range& r : ranges_) {
      if (a >= r.begin && a < r.end) return r.offset + (a - r.begin);
    }
    return 0;
  }

 private:
  std::vector<Range> ranges_;
  size_t bytes_ = 0;
};

bool segmentable(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kBroadcast ||
         kind == CollectiveKind::kReduce;
}

}  // namespace

StagedLayout layoutStaged(const algo::CollectiveArgs& args, int rank, int size, size_t segmentBytes,
                          char* base) {
  if (segmentBytes == 0) {
    throw Error(ErrorCode::kInvalidArgument, "smddp: the staging segment must be positive");
  }
  const std::vector<Region> regions = regionsOf(args, rank, size);
  const BlockMap map(regions);
  auto host = [&map, base](const void* p) -> char* {
    return p == nullptr ? nullptr : base + map.offsetOf(p);
  };
  auto pieces = [&](bool out, size_t from, size_t bytes, StagedSegment& s) {
    for (const Region& g : regions) {
      if (g.out != out) continue;
      const size_t len = std::min(bytes, g.bytes - std::min(g.bytes, from));
      if (len == 0) continue;
      const auto* p = reinterpret_cast<const char*>(g.begin) + from;
      (out ? s.out : s.in).push_back({p, len, map.offsetOf(p)});
    }
  };
  StagedLayout layout;
  layout.blockBytes = map.bytes();
  algo::CollectiveArgs whole = args;
  whole.memory = MemoryType::kHost;
  whole.device = -1;
  whole.stream = nullptr;
  whole.send = host(args.send);
  whole.recv = host(args.recv);
  for (void*& b : whole.blocks) b = host(b);
  const size_t es = args.elementSize();
  const size_t perSegment = std::max<size_t>(1, segmentBytes / std::max<size_t>(es, 1));
  if (!segmentable(args.kind) || args.count <= perSegment) {
    StagedSegment s;
    s.host = whole;
    for (const Region& g : regions) {
      (g.out ? s.out : s.in)
          .push_back({reinterpret_cast<const void*>(g.begin), g.bytes,
                      map.offsetOf(reinterpret_cast<const void*>(g.begin))});
    }
    layout.segments.push_back(std::move(s));
    return layout;
  }
  for (size_t first = 0; first < args.count; first += perSegment) {
    const size_t count = std::min(perSegment, args.count - first);
    StagedSegment s;
    s.host = whole;
    s.host.count = count;
    if (whole.send != nullptr) s.host.send = static_cast<const char*>(whole.send) + first * es;
    if (whole.recv != nullptr) s.host.recv = static_cast<char*>(whole.recv) + first * es;
    pieces(false, first * es, count * es, s);
    pieces(true, first * es, count * es, s);
    layout.segments.push_back(std::move(s));
  }
  return layout;
}

}  // namespace smddp::planes
