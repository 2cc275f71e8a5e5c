#include "request/request_fields.h"

#include <gtest/gtest.h>

#include <set>

namespace kgym::request {
namespace {

// Parses `args` (after the program name) with one flag of the table bound to `req`; "" or CLI11's error.
std::string ParseFlag(const RequestField& f, const std::vector<std::string>& args, EvalRequest* req) {
  CLI::App app;
  AddRequestFlag(&app, f, f.slot(req));
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

std::string Text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

TEST(RequestFields, EveryNameFlagAndKeyOnce) {
  std::set<std::string> names, flags, keys;
  for (const auto& f : RequestFields()) {
    if (*f.name) {
      EXPECT_TRUE(names.insert(f.name).second) << f.name;
    }
    if (*f.flag) {
      EXPECT_TRUE(flags.insert(f.flag).second) << f.flag;
    }
    EXPECT_TRUE(*f.name || *f.flag) << f.help;
    EXPECT_GT(std::string(f.help).size(), 10u);
    if (f.agent_sends) {
      EXPECT_TRUE(*f.name) << f.flag;
    }
    std::stringstream ss(f.keys);
    for (std::string k; std::getline(ss, k, ',');) EXPECT_TRUE(keys.insert(k).second) << k;
  }
}

TEST(RequestFields, DefaultsAreWithinTheLimits) {
  // A default EvalRequest is a valid request, except min_perf_trials' -1 ("the evaluator's default").
  const EvalRequest def;
  for (const auto& f : RequestFields()) {
    if (std::string(f.name) == "min_perf_trials" || std::string(f.name) == "task_id") continue;
    EXPECT_FALSE(CheckJson(f, Get(f, def)).has_value()) << f.name << f.flag << " = " << Get(f, def);
  }
}

TEST(RequestFields, AFlagHasTheLimitsOfItsField) {
  // The flag and the JSON value are checked by the same rule: at each limit accepted, past it refused.
  for (const auto& f : RequestFields()) {
    if (!*f.flag || (f.type != FieldType::kInt && f.type != FieldType::kNumber)) continue;
    for (double v : {f.lo, f.hi, f.lo - 1, f.hi + 1}) {
      if (std::isinf(v)) continue;
      const bool in = v >= f.lo && v <= f.hi;
      EvalRequest req;
      const std::string err = ParseFlag(f, {f.flag, Text(v)}, &req);
      EXPECT_EQ(err.empty(), in) << f.flag << " " << v << ": " << err;
      EXPECT_EQ(!CheckJson(f, v).has_value(), in) << f.flag << " " << v;
      if (in) {
        EXPECT_EQ(Get(f, req).get<double>(), v) << f.flag;
      }
    }
  }
}

TEST(RequestFields, ChoicesAndTypesRefusedAlike) {
  const RequestField& backend = *FindRequestField("backend");
  EvalRequest req;
  EXPECT_NE(ParseFlag(backend, {"--backend", "tilelang"}, &req), "");
  auto p = CheckJson(backend, "tilelang");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->msg, "Input should be 'triton' or 'cuda'");
  EXPECT_EQ(p->type, "enum");
  const RequestField& trials = *FindRequestField("num_perf_trials");
  EXPECT_EQ(CheckJson(trials, 1001)->msg, "Input should be less than or equal to 1000");
  EXPECT_EQ(CheckJson(trials, 2.5)->type, "int_type");
  nlohmann::json v;
  EXPECT_FALSE(CheckJson(trials, 7.0, &v).has_value());  // a whole float is an integer, as pydantic takes it
  EXPECT_TRUE(v.is_number_integer());
  EXPECT_NE(ParseFlag(*FindRequestFlag("--eval-timeout"), {"--eval-timeout", "12.5"}, &req), "");
  EXPECT_EQ(CheckJson(*FindRequestField("task_id"), std::string(101, 'x'))->type, "string_too_long");
}

TEST(RequestFields, TableJsonShowsDefaultsAndLimits) {
  const nlohmann::json t = TableJson();
  ASSERT_EQ(t.size(), RequestFields().size());
  bool seen = false;
  for (const auto& e : t)
    if (e["name"] == "timeout") {
      seen = true;
      EXPECT_EQ(e["flag"], "--eval-timeout");
      EXPECT_EQ(e["default"], 300);
      EXPECT_EQ(e["lo"], 10.0);
      EXPECT_EQ(e["hi"], 3600.0);
      EXPECT_EQ(e["type"], "integer");
    }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace kgym::request
