// SPDX-License-Identifier: Apache-2.0
// PrefixStore unit tests: two prefixes over one store never see each other's keys or counters,
// and the inner store sees "<prefix>/key".
#include <gtest/gtest.h>

#include "mp/fork_ranks.h"
#include "smddp/error.h"
#include "smddp/store.h"

namespace smddp {
namespace {

using std::chrono::milliseconds;

TEST(PrefixStoreTest, PrefixesAreIsolated) {
  std::string dir = test::makeTempDir("smddp-prefix");
  ASSERT_FALSE(dir.empty());
  auto inner = makeFileStore(dir);
  auto a = makePrefixStore("a", inner);
  auto b = makePrefixStore("b", inner);
  a->set("x", "from a");
  b->set("x", "from b");
  EXPECT_EQ(a->get("x", milliseconds(100)), "from a");
  EXPECT_EQ(b->get("x", milliseconds(100)), "from b");
  EXPECT_EQ(inner->get("a/x", milliseconds(100)), "from a");
  a->set("only-a", "1");
  EXPECT_THROW(b->get("only-a", milliseconds(30)), Error);
  EXPECT_EQ(a->add("n", 3), 3);
  EXPECT_EQ(b->add("n", 10), 10);
  EXPECT_EQ(a->add("n", 4), 7);
  // Nested prefixes compose.
  auto ab = makePrefixStore("b", a);
  ab->set("y", "nested");
  EXPECT_EQ(inner->get("a/b/y", milliseconds(100)), "nested");
  EXPECT_EQ(tcpStorePort(*ab), -1);
  test::removeTree(dir);
}

TEST(PrefixStoreTest, TimeoutMessageNamesTheFullKey) {
  std::string dir = test::makeTempDir("smddp-prefix");
  auto p = makePrefixStore("job7", makeFileStore(dir));
  try {
    p->get("addr/3", milliseconds(20));
    FAIL() << "get of an absent key returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("job7/addr/3"), std::string::npos) << e.what();
  }
  test::removeTree(dir);
}

}  // namespace
}  // namespace smddp
