// SPDX-License-Identifier: Apache-2.0
// Where a Machine comes from: priors by shape (ranks per CPU), the measured rates, and the
// parameter file (bench/model calibrate's JSON: numbers kept, other values skipped, unknown names
// and bad values refused naming the file and the key).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "model/params.h"
#include "smddp/error.h"

namespace smddp::model {
namespace {

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(ModelParams, PriorsByShape) {
  Rates r;
  r.copyRate = 5e9;
  r.gamma = 1e-10;
  Shape s;
  s.perNode = 2;
  s.hostCpus = 2;
  Machine m = priors(s, r);
  EXPECT_DOUBLE_EQ(m.cpu_share, 1.0);
  EXPECT_DOUBLE_EQ(m.copy_rate, 5e9);
  EXPECT_DOUBLE_EQ(m.gamma, 1e-10);
  const double alone = m.arena_alpha;
  s.perNode = 4;  // 4 ranks on 2 CPUs: take turns
  m = priors(s, r);
  EXPECT_DOUBLE_EQ(m.cpu_share, 2.0);
  EXPECT_GT(m.arena_alpha, alone);
  s.hostCpus = 0;  // unknown: no sharing assumed
  EXPECT_DOUBLE_EQ(priors(s, r).cpu_share, 1.0);
}

TEST(ModelParams, MeasuredRatesArePlausible) {
  const Rates& r = measureRates();
  EXPECT_GT(r.copyRate, 1e8);   // > 100 MB/s
  EXPECT_LT(r.copyRate, 1e13);  // < 10 TB/s
  EXPECT_GT(r.gamma, 1e-13);
  EXPECT_LT(r.gamma, 1e-8);
  EXPECT_EQ(&measureRates(), &r);  // once per process
}

TEST(ModelParams, ReadsBenchModelsFile) {
  const std::string text = R"({"net_alpha": 7.2e-06, "net_eff": 0.96, "arena_alpha": 3e-06,
    "msg_alpha": 8.5e-6, "net_rate": 125000000.0, "link_burst": 65536, "msg_share": 1,
    "calibrated_on": {"testbed": {"hosts": 2, "rate": "1gbit", "x": [1, {"y": "}"}]},
                      "runs": 2, "sizes": [8, 64]}, "note": "a \"quoted\" }", "ok": true})";
  const auto p = parseParams(text, "p.json");
  EXPECT_EQ(p.size(), 7u);
  Machine m;
  applyParams(m, p, "p.json");
  EXPECT_DOUBLE_EQ(m.net_alpha, 7.2e-6);
  EXPECT_DOUBLE_EQ(m.net_eff, 0.96);
  EXPECT_DOUBLE_EQ(m.net_rate, 125e6);
  EXPECT_DOUBLE_EQ(m.link_burst, 65536);
  EXPECT_DOUBLE_EQ(m.msg_alpha, 8.5e-6);
  EXPECT_DOUBLE_EQ(parseParams("{}", "e").size(), 0u);
}

TEST(ModelParams, RefusesBadFiles) {
  Machine m;
  EXPECT_NE(errorOf([&] { parseParams("[1, 2]", "a.json"); }).find("a.json"), std::string::npos);
  EXPECT_NE(errorOf([&] { parseParams(R"({"net_alpha": })", "b.json"); }).find("b.json"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { parseParams(R"({"x": {"y": 1)", "c.json"); }).find("unterminated"),
            std::string::npos);
  const std::string typo = errorOf([&] { applyParams(m, {{"net_alpah", 1.0}}, "d.json"); });
  EXPECT_NE(typo.find("d.json"), std::string::npos);
  EXPECT_NE(typo.find("\"net_alpah\" is not a parameter"), std::string::npos) << typo;
  EXPECT_NE(errorOf([&] { applyParams(m, {{"net_rate", 0.0}}, "e.json"); }).find("must be > 0"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { applyParams(m, {{"net_alpha", -1.0}}, "f.json"); }).find(">= 0"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { applyParamsFile(m, "/nonexistent/params.json"); })
                .find("/nonexistent/params.json"),
            std::string::npos);
  const std::string path = testing::TempDir() + "model_params_test.json";
  std::ofstream(path) << R"({"arena_alpha": 4e-6, "call_alpha": 2e-5})";
  applyParamsFile(m, path);
  EXPECT_DOUBLE_EQ(m.arena_alpha, 4e-6);
  EXPECT_DOUBLE_EQ(m.call_alpha, 2e-5);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace smddp::model
