// SPDX-License-Identifier: Apache-2.0
// FileStore in a shared directory: what another user or another job leaves in it cannot get in
// (links planted at the temp, value or lock names are never followed), crash or bloat a store
// (value files over 64 MiB and special files are refused), or hang it (a FIFO, a directory of
// another job: refused at once). Files are private (0600, directories 0700), and a directory of
// another user, or writable by others without the sticky bit, is refused naming owner and mode.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "mp/fork_ranks.h"
#include "smddp/error.h"
#include "smddp/store.h"

namespace smddp {
namespace {

using std::chrono::milliseconds;
constexpr size_t kMaxValue = 64u << 20;

class FileStoreSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::makeTempDir("smddp-store-safety");
    ASSERT_FALSE(dir_.empty());
    store_ = dir_ + "/store";
    victim_ = dir_ + "/victim";  // outside the store directory: what a planted link aims at
    std::ofstream(victim_) << "precious";
  }
  void TearDown() override { test::removeTree(dir_); }

  std::string victim() const {
    std::stringstream text;
    text << std::ifstream(victim_).rdbuf();
    return text.str();
  }

  std::string dir_, store_, victim_;
};

// The message of the Error(code) that `call` throws; "" and a test failure when it throws none.
std::string errorOf(const std::function<void()>& call, ErrorCode code = ErrorCode::kStore) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

mode_t modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

void sparseFile(const std::string& path, off_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::ftruncate(fd, bytes), 0);
  ::close(fd);
}

TEST_F(FileStoreSafetyTest, LinksPlantedAtTheTempNamesAreNeverWrittenThrough) {
  auto store = makeFileStore(store_);
  // The names a store of this process would have drawn before the fix: .tmp.<pid>.<counter>.
  for (int i = 0; i < 16; ++i) {
    const std::string name =
        store_ + "/.tmp." + std::to_string(::getpid()) + "." + std::to_string(i);
    ASSERT_EQ(::symlink(victim_.c_str(), name.c_str()), 0);
  }
  for (int i = 0; i < 8; ++i) store->set("key" + std::to_string(i), "evil");
  store->add("counter", 1);
  EXPECT_EQ(victim(), "precious");
  EXPECT_EQ(store->get("key7", milliseconds(100)), "evil");
  EXPECT_EQ(modeOf(store_ + "/k_key7"), 0600u) << "not a link into the victim";
}

TEST_F(FileStoreSafetyTest, ALinkPlantedAsAValueFileIsRefused) {
  auto store = makeFileStore(store_);
  sparseFile(dir_ + "/big", off_t{1} << 30);
  ASSERT_EQ(::symlink((dir_ + "/big").c_str(), (store_ + "/k_big").c_str()), 0);
  ASSERT_EQ(::symlink(victim_.c_str(), (store_ + "/k_small").c_str()), 0);
  for (const char* key : {"big", "small"}) {
    const std::string msg = errorOf([&] { store->get(key, milliseconds(100)); });
    EXPECT_NE(msg.find(store_ + ": 'k_" + key + "' is a symbolic link, not a regular file"),
              std::string::npos)
        << msg;
    errorOf([&] { store->add(key, 0); });
  }
  ASSERT_EQ(::symlink(victim_.c_str(), (store_ + "/.lock.k_counter").c_str()), 0);
  EXPECT_NE(errorOf([&] { store->add("counter", 1); }).find("symbolic link"), std::string::npos);
}

TEST_F(FileStoreSafetyTest, AValueFileOver64MiBIsRefusedUnread) {
  auto store = makeFileStore(store_);
  sparseFile(store_ + "/k_huge", off_t{kMaxValue} + 1);
  const std::string msg = errorOf([&] { store->get("huge", milliseconds(100)); });
  EXPECT_NE(msg.find("'k_huge' holds more than the 67108864 bytes a store file may hold"),
            std::string::npos)
      << msg;
  errorOf([&] { store->add("huge", 0); });
  errorOf([&] { store->add("huge", 1); });
  sparseFile(store_ + "/k_edge", off_t{kMaxValue});  // the largest value is read whole
  EXPECT_EQ(store->get("edge", milliseconds(100)).size(), kMaxValue);
  errorOf([&] { store->set("big", std::string(kMaxValue + 1, 'x')); }, ErrorCode::kInvalidArgument);
}

TEST_F(FileStoreSafetyTest, AFifoOrADirectoryAsValueFileFailsAtOnce) {
  const std::string dir = store_;
  makeFileStore(dir);
  ASSERT_EQ(::mkfifo((dir + "/k_fifo").c_str(), 0600), 0);
  ASSERT_EQ(::mkdir((dir + "/k_dir").c_str(), 0700), 0);
  // In a child: before the fix, opening the FIFO blocked for good.
  EXPECT_EQ(test::forkRanks(1, milliseconds(5000),
                            [dir](int) {
                              auto store = makeFileStore(dir);
                              for (const char* key : {"fifo", "dir"}) {
                                try {
                                  store->get(key, milliseconds(100));
                                  return 1;
                                } catch (const Error& e) {
                                  if (std::string(e.what()).find("not a regular file") ==
                                      std::string::npos) {
                                    return 2;
                                  }
                                }
                              }
                              return 0;
                            }),
            "");
}

TEST_F(FileStoreSafetyTest, FilesArePrivateAndCreatedDirectoriesToo) {
  auto store = makeFileStore(store_ + "/a/b");
  store->set("value", "v");
  store->add("counter", 1);
  EXPECT_EQ(modeOf(store_), 0700u);
  EXPECT_EQ(modeOf(store_ + "/a"), 0700u);
  EXPECT_EQ(modeOf(store_ + "/a/b"), 0700u);
  EXPECT_EQ(modeOf(store_ + "/a/b/k_value"), 0600u);
  EXPECT_EQ(modeOf(store_ + "/a/b/k_counter"), 0600u);
  EXPECT_EQ(modeOf(store_ + "/a/b/.lock.k_counter"), 0600u);
  EXPECT_EQ(modeOf(store_ + "/a/b/.job"), 0600u);
}

TEST_F(FileStoreSafetyTest, ADirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another uid";
  ASSERT_EQ(::mkdir(store_.c_str(), 0700), 0);
  ASSERT_EQ(::chown(store_.c_str(), 12345, 12345), 0);
  const std::string msg = errorOf([&] { makeFileStore(store_); });
  EXPECT_NE(msg.find("file store " + store_ +
                     ": the directory is another user's (owner uid "
                     "12345, mode 0700; this process runs as uid 0)"),
            std::string::npos)
      << msg;
  // Only the store directory itself is checked: above it, /tmp is root's and everyone's (sticky).
  makeFileStore(dir_ + "/mine");
}

TEST_F(FileStoreSafetyTest, ADirectoryOthersMayWriteIsRefusedUnlessSticky) {
  ASSERT_EQ(::mkdir(store_.c_str(), 0700), 0);
  for (mode_t mode : {0777, 0770, 0702}) {
    ASSERT_EQ(::chmod(store_.c_str(), mode), 0);
    const std::string msg = errorOf([&] { makeFileStore(store_); });
    char octal[8];
    std::snprintf(octal, sizeof(octal), "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(msg.find(store_ + ": the directory is writable by other users and not sticky"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(std::string("mode ") + octal), std::string::npos) << msg;
  }
  ASSERT_EQ(::chmod(store_.c_str(), 01777), 0);  // like /tmp: others cannot replace our files
  makeFileStore(store_)->set("k", "v");
  ASSERT_EQ(::chmod(store_.c_str(), 0755), 0);
  EXPECT_EQ(makeFileStore(store_)->get("k", milliseconds(100)), "v");
}

TEST_F(FileStoreSafetyTest, AnotherJobIsRefusedAtOnce) {
  auto first = makeFileStore(store_, "job-A");
  first->set("k", "v");
  EXPECT_EQ(makeFileStore(store_, "job-A")->get("k", milliseconds(100)), "v");  // same job
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = errorOf([&] { makeFileStore(store_, "job-B"); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(msg, "file store " + store_ + ": the directory belongs to job job-A (created by pid " +
                     std::to_string(::getpid()) + " on host " + host +
                     "); this is job job-B: use a fresh directory");
  EXPECT_NE(errorOf([&] { makeFileStore(store_); }).find("this is a job without a job id"),
            std::string::npos);
  makeFileStore(dir_ + "/anonymous");
  EXPECT_NE(errorOf([&] {
              makeFileStore(dir_ + "/anonymous", "job-A");
            }).find("belongs to a job without a job id"),
            std::string::npos);
  errorOf([&] { makeFileStore(dir_ + "/bad", "line\nbreak"); }, ErrorCode::kInvalidArgument);
}

// Processes of two jobs race for one fresh directory: exactly the ranks of one of them get in.
TEST_F(FileStoreSafetyTest, RacingJobsLeaveTheDirectoryToOne) {
  constexpr int kProcs = 6;
  const std::string dir = store_;
  ASSERT_EQ(test::forkRanks(kProcs, milliseconds(20000),
                            [dir](int rank) {
                              const std::string job = "job-" + std::to_string(rank % 2);
                              std::shared_ptr<Store> store;
                              try {
                                store = makeFileStore(dir, job);
                              } catch (const Error& e) {
                                const bool named = std::string(e.what()).find(
                                                       "this is job " + job) != std::string::npos;
                                return named ? 0 : 1;
                              }
                              store->add("opened", 1);
                              return 0;
                            }),
            "");
  int winners = 0;
  for (const char* job : {"job-0", "job-1"}) {
    try {
      EXPECT_EQ(makeFileStore(dir, job)->add("opened", 0), kProcs / 2) << job;
      ++winners;
    } catch (const Error&) {
    }
  }
  EXPECT_EQ(winners, 1);
}

}  // namespace
}  // namespace smddp
