// SPDX-License-Identifier: Apache-2.0
// shm endpoint names and the removal of regions dead processes left (shm_regions.h): only names
// of our format, our pid namespace and a pid that does not exist go; a live process's, another
// namespace's, the old format's and anyone else's files stay.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "transport/ofi/shm_regions.h"

namespace smddp::transport::ofi {
namespace {

namespace fs = std::filesystem;

TEST(ShmRegions, EndpointNamesCarryTheNamespaceAndPidAndAreUnique) {
  const std::string ns = pidNamespace();
  ASSERT_FALSE(ns.empty()) << "/proc/self/ns/pid unreadable";
  const std::string head = "smddp-" + ns + "-" + std::to_string(::getpid()) + "-";
  std::set<std::string> names;
  for (int i = 0; i < 100; ++i) {
    const std::string name = shmEndpointName();
    EXPECT_EQ(name.compare(0, head.size(), head), 0) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 100u);
}

TEST(ShmRegions, OnlyDeadProcessesOfThisNamespaceLoseTheirRegions) {
  const fs::path dir = fs::temp_directory_path() / ("smddp-shm-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string ns = "4026531836";
  const std::set<int> live = {4242, static_cast<int>(::getpid())};
  auto alive = [&](int pid) { return live.count(pid) > 0; };
  const std::set<std::string> gone = {"smddp-" + ns + "-777-0-0badcafe:0:0",
                                      "smddp-" + ns + "-777-1-12345678:0:1"};
  const std::set<std::string> kept = {
      "smddp-" + ns + "-4242-0-aaaaaaaa:0:0",                                 // alive
      "smddp-" + ns + "-" + std::to_string(::getpid()) + "-3-bbbbbbbb:0:0",  // this process
      "smddp-999-777-0-cccccccc:0:0",                                         // other namespace
      "smddp-777-0-dddddddd:0:0",                                             // old format
      "smddp-" + ns + "-x-0-eeeeeeee:0:0",                                    // no pid
      "other-777",                                                            // not ours
  };
  for (const auto& name : gone) std::ofstream(dir / name) << "x";
  for (const auto& name : kept) std::ofstream(dir / name) << "x";
  EXPECT_EQ(removeDeadRegions(dir.string(), ns, alive), 2);
  for (const auto& name : gone) EXPECT_FALSE(fs::exists(dir / name)) << name;
  for (const auto& name : kept) EXPECT_TRUE(fs::exists(dir / name)) << name;
  EXPECT_EQ(removeDeadRegions(dir.string(), "", alive), 0) << "no namespace: nothing goes";
  EXPECT_EQ(removeDeadRegions((dir / "missing").string(), ns, alive), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace smddp::transport::ofi
