// SPDX-License-Identifier: Apache-2.0
// Reconfigure handles (python/csrc/member_handle.h) without torch: the round trip, what parse()
// refuses, the member order of a list and of a set, and each refusal's message as the extension
// raises it (tests/python/workers_reconfigure.py expects the same texts through torch).
#include <gtest/gtest.h>

#include "member_handle.h"

namespace smddp::torch_shim {
namespace {

std::string handle(const std::string& host, int pid, const std::string& id) {
  return MemberHandle{host, pid, id, "pg;0"}.encode();
}

TEST(MemberHandle, RoundTripsAndRefusesWhatIsNotOne) {
  const MemberHandle self = MemberHandle::self("pg;0");
  const auto back = MemberHandle::parse(self.encode());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->encode(), self.encode());
  EXPECT_EQ(back->group, "pg;0") << "the group is the rest of the handle, ';' included";
  for (const char* text :
       {"", "gloo:1:-1", "smddp/2;host=h;pid=1;id=a;group=g", "smddp/1;host=h;pid=;id=a;group=g",
        "smddp/1;host=h;pid=x;id=a;group=g", "smddp/1;host=h;pid=1;id=;group=g",
        "smddp/1;pid=1;host=h;id=a;group=g", "smddp/1;host=h;pid=99999999999;id=a;group=g"}) {
    EXPECT_FALSE(MemberHandle::parse(text).has_value()) << text;
  }
}

TEST(MemberHandle, OrdersAListAsGivenAndASetByHostThenPid) {
  const std::vector<std::string> hs = {handle("b", 1, "x"), handle("a", 7, "y"),
                                       handle("a", 3, "z")};
  const MemberHandle self = *MemberHandle::parse(hs[1]);
  MemberOrder order = orderMemberHandles(hs, true, self, 0, "reconfigure");
  ASSERT_EQ(order.error, "");
  EXPECT_EQ(order.rank, 1);
  order = orderMemberHandles(hs, false, self, 0, "reconfigure");
  ASSERT_EQ(order.error, "");
  ASSERT_EQ(order.members.size(), 3u);
  EXPECT_EQ(order.members[0].id, "z");
  EXPECT_EQ(order.members[2].id, "x");
  EXPECT_EQ(order.rank, 1);
}

TEST(MemberHandle, RefusalsNameTheCallerAndTheHandle) {
  const std::string mine = handle("a", 1, "m");
  const MemberHandle self = *MemberHandle::parse(mine);
  const std::string head = "smddp: rank 2: reconfigure to generation 9 (n members): ";
  auto refusal = [&](const std::vector<std::string>& hs) {
    return orderMemberHandles(hs, true, self, 2, "reconfigure to generation 9 (n members)").error;
  };
  EXPECT_EQ(refusal({}), head + "no member handles");
  EXPECT_EQ(refusal({mine, "gloo:1:-1"}),
            head +
                "'gloo:1:-1' is not an smddp reconfigure handle (every member must be an "
                "smddp group; handles come from get_reconfigure_handle())");
  EXPECT_EQ(refusal({MemberHandle{"b", 2, "o", "other"}.encode()}),
            head +
                "the handle of host b, pid 2 belongs to group 'other', this one is 'pg;0': "
                "members must be the same group of each process (same store and prefix)");
  EXPECT_EQ(refusal({mine, mine}), head + "host a, pid 1 is listed twice");
  EXPECT_EQ(refusal({handle("b", 2, "o")}),
            head +
                "this process (host a, pid 1) is not among the 1 member handles: only "
                "members call reconfigure");
}

}  // namespace
}  // namespace smddp::torch_shim
