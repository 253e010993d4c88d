// SPDX-License-Identifier: Apache-2.0
// Segment: layout, heap backing for thread-ranks, and the POSIX shared-memory bootstrap.
#include "algorithms/arena/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "smddp/error.h"
#include "smddp/store.h"
#include "store/backoff.h"

namespace smddp::algo::arena {
namespace {

constexpr size_t kPage = 4096;
constexpr int64_t kFailed = int64_t{1} << 20;  // added to the join counter by a rank that failed

// One mapping of the whole arena; unmapped when the last view goes.
struct Mapping {
  void* address = MAP_FAILED;
  size_t bytes = 0;
  ~Mapping() {
    if (address != MAP_FAILED) munmap(address, bytes);
  }
};

std::string sysError(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

// Rank 0: creates, sizes and maps the object; "" on success, else the reason.
std::string createObject(const std::string& name, size_t bytes, Mapping& map) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return sysError(("shm_open " + name).c_str(), errno);
  std::string why;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    why = sysError("ftruncate", errno);
  } else if (const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); rc != 0) {
    why = sysError(("reserving " + std::to_string(bytes) + " bytes in /dev/shm").c_str(), rc);
  } else {
    map.address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map.address == MAP_FAILED) why = sysError("mmap", errno);
    map.bytes = bytes;
  }
  close(fd);
  if (!why.empty()) shm_unlink(name.c_str());
  return why;
}

std::string openObject(const std::string& name, size_t bytes, Mapping& map) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return sysError(("shm_open " + name).c_str(), errno);
  std::string why;
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    why = "shared object " + name + " has an unexpected size";
  } else {
    map.address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map.address == MAP_FAILED) why = sysError("mmap", errno);
    map.bytes = bytes;
  }
  close(fd);
  return why;
}

std::string objectName(const std::string& prefix) {
  static std::atomic<unsigned> counter{0};
  std::string name = "/smddp-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-";
  for (char c : prefix) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name.substr(0, 200);
}

}  // namespace

size_t Segment::roundSlot(size_t slotBytes) {
  return (std::max<size_t>(slotBytes, 64) + kPage - 1) / kPage * kPage;
}

size_t Segment::eagerStride(size_t eagerBytes) {
  return (sizeof(EagerHeader) + std::max<size_t>(eagerBytes, 1) + kLine - 1) / kLine * kLine;
}

namespace {
size_t ringBytes(size_t eagerBytes) {
  return (Segment::kEagerDepth * Segment::eagerStride(eagerBytes) + kPage - 1) / kPage * kPage;
}
}  // namespace

size_t Segment::mailPayload(size_t mailBytes, int size) {
  if (mailBytes == 0 || size < 2) return 0;
  const size_t perLetter = kMailBudget / (static_cast<size_t>(size) * kMailDepth);
  const size_t fits =
      perLetter > kMailHeaderBytes + kLine ? perLetter - kMailHeaderBytes - kLine : 0;
  const size_t payload = std::min(mailBytes, fits / kLine * kLine);
  return payload < kLine ? 0 : payload;
}

size_t Segment::mailAreaBytes(size_t payload, int size) {
  if (payload == 0) return 0;
  const size_t n = static_cast<size_t>(size);
  return (n * kLine + n * kMailDepth * mailStride(payload) + kPage - 1) / kPage * kPage;
}

size_t Segment::regionBytes(size_t slotBytes, size_t eagerBytes, size_t mailBytes, int size) {
  return kControlBytes + ringBytes(eagerBytes) + mailAreaBytes(mailPayload(mailBytes, size), size) +
         2 * roundSlot(slotBytes);
}

Segment::Segment(std::shared_ptr<void> memory, unsigned char* base, int rank, int size,
                 size_t slotBytes, size_t eagerBytes, size_t mailBytes)
    : memory_(std::move(memory)),
      base_(base),
      rank_(rank),
      size_(size),
      slotBytes_(roundSlot(slotBytes)),
      eagerBytes_(eagerBytes),
      eagerStride_(eagerStride(eagerBytes)),
      mailPayload_(mailPayload(mailBytes, size)),
      mailStride_(mailStride(mailPayload_)),
      mailOffset_(kControlBytes + ringBytes(eagerBytes)),
      slotsOffset_(mailOffset_ + mailAreaBytes(mailPayload_, size)),
      regionBytes_(slotsOffset_ + 2 * slotBytes_) {}

HeapSegments::HeapSegments(int size, size_t slotBytes, size_t eagerBytes, size_t mailBytes)
    : size_(size), slotBytes_(slotBytes), eagerBytes_(eagerBytes), mailBytes_(mailBytes) {
  const size_t bytes =
      Segment::regionBytes(slotBytes, eagerBytes, mailBytes, size) * static_cast<size_t>(size);
  void* p = std::aligned_alloc(kPage, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  memory_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

std::unique_ptr<Segment> HeapSegments::view(int rank) const {
  return std::make_unique<Segment>(memory_, static_cast<unsigned char*>(memory_.get()), rank, size_,
                                   slotBytes_, eagerBytes_, mailBytes_);
}

std::unique_ptr<Segment> createSegment(Store& store, const std::string& prefix, int rank, int size,
                                       size_t slotBytes, size_t eagerBytes, size_t mailBytes,
                                       std::chrono::milliseconds timeout, bool wanted,
                                       std::string& why) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const size_t bytes =
      Segment::regionBytes(slotBytes, eagerBytes, mailBytes, size) * static_cast<size_t>(size);
  auto map = std::make_shared<Mapping>();
  std::string name;
  const char* const unwanted = "not wanted (SMDDP_ARENA=0 or Options::sharedMemory = false)";
  // The layout every rank must share: the slot size, the eager size, which also decides which
  // broadcasts take the ring (two eager sizes can give one entry size, hence one object size),
  // and the mail size. Rank 0 publishes it with the object's name ("<layout> <name>"; object
  // names have no spaces).
  const std::string layout = std::to_string(slotBytes) + "/" + std::to_string(eagerBytes) + "/" +
                             std::to_string(mailBytes);
  if (rank == 0) {
    if (wanted) {
      name = objectName(prefix);
      why = createObject(name, bytes, *map);
    } else {
      why = unwanted;
    }
    store.set(prefix + "/arena/name", why.empty() ? layout + " " + name : "!" + why);
    if (!why.empty()) return nullptr;  // every rank reads why: nothing to agree on
  } else {
    const std::string value = store.get(prefix + "/arena/name", timeout);
    if (!value.empty() && value[0] == '!') {
      why = "rank 0: " + value.substr(1);
      return nullptr;
    }
    const size_t space = value.find(' ');
    const std::string rootLayout = value.substr(0, space);
    if (!wanted) {
      why = unwanted;
    } else if (space == std::string::npos || rootLayout != layout) {
      why = "SMDDP_ARENA_SLOT_BYTES/SMDDP_ARENA_EAGER_BYTES/SMDDP_ARENA_MAIL_BYTES are " + layout +
            " here but " + rootLayout + " on rank 0";
    } else {
      name = value.substr(space + 1);
      why = openObject(name, bytes, *map);
    }
  }
  // Everyone reports; the object is unlinked once all ranks mapped it (or gave up). A rank that
  // gave up is done once it said so; the others learn of it from the count.
  store.add(prefix + "/arena/joined", why.empty() ? 1 : 1 + kFailed);
  if (!why.empty()) return nullptr;
  store::Backoff backoff(std::chrono::microseconds(50), std::chrono::milliseconds(10));
  int64_t joined = 0;
  while (((joined = store.add(prefix + "/arena/joined", 0)) % kFailed) < size) {
    if (!backoff.sleepUntil(deadline)) {
      if (rank == 0) shm_unlink(name.c_str());
      throw Error(ErrorCode::kStore,
                  errorHead(rank) + ": only " + std::to_string(joined % kFailed) + " of " +
                      std::to_string(size) + " ranks mapped the shared-memory arena in time");
    }
  }
  if (rank == 0) shm_unlink(name.c_str());  // every rank mapped it or gave up
  if (joined >= kFailed) {
    why = "another rank could not map the shared-memory arena";
    return nullptr;
  }
  auto* base = static_cast<unsigned char*>(map->address);
  return std::make_unique<Segment>(std::shared_ptr<void>(map, base), base, rank, size, slotBytes,
                                   eagerBytes, mailBytes);
}

}  // namespace smddp::algo::arena
