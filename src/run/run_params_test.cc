#include "run/run_params.h"

#include <gtest/gtest.h>

#include <set>

namespace kgym::run {
namespace {

// A value unlike the default for every parameter: as a command-line word and as JSON.
struct Probe {
  std::vector<std::string> argv;  // flag and value words
  nlohmann::json value;
};

Probe ProbeFor(const RunParam& p) {
  RunSpec defaults;
  if (p.request && (p.request->type == request::FieldType::kInt || p.request->type == request::FieldType::kNumber)) {
    const int v = static_cast<int>(p.request->lo) + 1;  // within the request table's limits, no default
    return {{p.flag, std::to_string(v)}, v};
  }
  return std::visit(
      [&](auto* ptr) -> Probe {
        using T = std::remove_pointer_t<decltype(ptr)>;
        if constexpr (std::is_same_v<T, bool>) {
          return {{p.flag}, true};
        } else if constexpr (std::is_same_v<T, double>) {
          return {{p.flag, "0.25"}, 0.25};
        } else if constexpr (std::is_same_v<T, std::string>) {
          std::string v = std::string("x") + (p.flag + 2);
          if (*p.choices) {  // the last choice, which no default is
            std::string c = p.choices;
            v = c.substr(c.rfind('|') + 1);
          }
          return {{p.flag, v}, v};
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return {{p.flag, "a", p.flag, "b"}, nlohmann::json::array({"a", "b"})};
        } else {
          return {{p.flag, "7"}, 7};
        }
      },
      p.Field(&defaults));
}

nlohmann::json Nested(const std::string& dotted, const nlohmann::json& v) {
  nlohmann::json j = v;
  std::string rest = dotted;
  for (size_t dot = rest.rfind('.');; dot = rest.rfind('.')) {
    j = nlohmann::json{{dot == std::string::npos ? rest : rest.substr(dot + 1), j}};
    if (dot == std::string::npos) return j;
    rest = rest.substr(0, dot);
  }
}

RunSpec FromFlags(const std::vector<std::string>& words) {
  RunSpec spec;
  CLI::App app{"test"};
  AddRunFlags(
      &app, &spec,
      {RunGroup::kLlm, RunGroup::kSampling, RunGroup::kGym, RunGroup::kReward, RunGroup::kSkills, RunGroup::kLoop});
  std::vector<std::string> args(words.rbegin(), words.rend());  // CLI11 takes them reversed
  app.parse(args);
  return spec;
}

TEST(RunParams, EveryFlagIsDefinedOnceAndEveryKeyOnce) {
  std::set<std::string> flags, keys;
  for (const auto& p : RunParams()) {
    EXPECT_TRUE(flags.insert(p.flag).second) << p.flag;
    EXPECT_EQ(std::string(p.flag).rfind("--", 0), 0u) << p.flag;
    EXPECT_NE(std::string(p.help), "") << p.flag;
    std::string k = p.keys;
    for (size_t at = 0; !k.empty() && at != std::string::npos;) {
      const size_t comma = k.find(',', at);
      EXPECT_TRUE(keys.insert(k.substr(at, comma == std::string::npos ? comma : comma - at)).second) << p.flag;
      at = comma == std::string::npos ? comma : comma + 1;
    }
  }
  EXPECT_GE(flags.size(), 45u);
}

TEST(RunParams, FlagsAndYamlGiveTheSameSpec) {
  std::vector<std::string> words;
  nlohmann::json config = nlohmann::json::object();
  size_t compared = 0;
  for (const auto& p : RunParams()) {
    std::string keys = p.keys;
    if (keys.empty()) continue;
    const Probe probe = ProbeFor(p);
    words.insert(words.end(), probe.argv.begin(), probe.argv.end());
    config.merge_patch(Nested(keys.substr(0, keys.find(',')), probe.value));
    ++compared;
  }
  EXPECT_GE(compared, 20u);
  RunSpec from_yaml;
  ASSERT_TRUE(ReadRunConfig(config, &from_yaml).ok());
  const RunSpec from_flags = FromFlags(words);
  EXPECT_EQ(from_flags.ToJson(), from_yaml.ToJson());
  EXPECT_NE(from_flags.ToJson(), RunSpec().ToJson());
  // And each parameter arrived where its probe put it.
  const nlohmann::json j = from_yaml.ToJson();
  for (const auto& p : RunParams())
    if (*p.keys) {
      EXPECT_EQ(j[std::string(p.flag).substr(2)], ProbeFor(p).value) << p.flag;
    }
}

TEST(RunParams, EveryFlagReachesItsField) {
  for (const auto& p : RunParams()) {
    const Probe probe = ProbeFor(p);
    const nlohmann::json j = FromFlags(probe.argv).ToJson(), d = RunSpec().ToJson();
    const std::string name = std::string(p.flag).substr(2);
    EXPECT_EQ(j[name], probe.value) << p.flag;
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != name) {
        EXPECT_EQ(it.value(), d[it.key()]) << p.flag << " also changed " << it.key();
      }
  }
}

TEST(RunParams, LaterYamlKeysWinAndNullsAreSkipped) {
  RunSpec s;
  ASSERT_TRUE(ReadRunConfig({{"gym", {{"num_perf_trials", 100}, {"size", nullptr}}},
                             {"eval", {{"num_perf_trials", 10}, {"size", "small"}}}},
                            &s)
                  .ok());
  EXPECT_EQ(s.gym.request.num_perf_trials, 10);
  EXPECT_EQ(s.gym.request.size, "small");
  ASSERT_TRUE(ReadRunConfig({{"gym", {{"size", nullptr}}}}, &s).ok());
  EXPECT_EQ(s.gym.request.size, "small");
}

TEST(RunParams, AWrongYamlValueNamesItsKey) {
  RunSpec s;
  Status st = ReadRunConfig({{"rollout", {{"n", "many"}}}}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rollout.n: expected an integer, got \"many\""), std::string::npos) << st.message();
  st = ReadRunConfig({{"rollout", {{"layout", "sideways"}}}}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rollout.layout: expected concurrent|lockstep"), std::string::npos) << st.message();
  st = ReadRunConfig({{"gym", {{"unsafe_no_sandbox", "yes"}}}}, &s);
  EXPECT_NE(st.message().find("gym.unsafe_no_sandbox: expected true or false"), std::string::npos) << st.message();
}

TEST(RunParams, AFieldOfTheRequestHasTheRequestTablesLimitsInYamlAndFlags) {
  // gym.num_perf_trials is the request's num_perf_trials: 1000 at most, as over HTTP and in `kgym eval`.
  size_t checked = 0;
  for (const auto& p : RunParams()) {
    if (!p.request || !*p.keys || p.request->type != request::FieldType::kInt) continue;
    const std::string key = std::string(p.keys).substr(0, std::string(p.keys).find(','));
    for (double v : {p.request->lo - 1, p.request->lo, p.request->hi, p.request->hi + 1}) {
      const bool in = v >= p.request->lo && v <= p.request->hi;
      RunSpec s;
      const Status st = ReadRunConfig(Nested(key, static_cast<int64_t>(v)), &s);
      EXPECT_EQ(st.ok(), in) << key << " = " << v << ": " << st.message();
      if (!in) {
        EXPECT_NE(st.message().find(key + ": Input should be"), std::string::npos) << st.message();
      }
      bool parsed = true;
      try {
        FromFlags({p.flag, std::to_string(static_cast<int64_t>(v))});
      } catch (const CLI::ParseError&) {
        parsed = false;
      }
      EXPECT_EQ(parsed, in) << p.flag << " " << v;
      ++checked;
    }
  }
  EXPECT_GE(checked, 12u);  // num_correct_trials, num_perf_trials, timeout
}

TEST(RunParams, AnOldNameSetsTheNewParameterAndSaysSo) {
  RunSpec spec;
  CLI::App app{"kgym"};
  CLI::App* agent = app.add_subcommand("agent");
  AddRunFlags(agent, &spec, {RunGroup::kLlm, RunGroup::kGym});
  AddOldRunFlag(agent, "--timeout", "--llm-timeout", &spec);
  AddOldRunFlag(agent, "--retries", "--max-retries", &spec);
  testing::internal::CaptureStderr();
  app.parse(std::vector<std::string>{"9", "--retries", "123", "--timeout", "agent"});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(spec.llm.timeout_s, 123);
  EXPECT_EQ(spec.llm.max_retries, 9);
  EXPECT_EQ(spec.gym.request.timeout_s, RunSpec().gym.request.timeout_s);
  EXPECT_NE(err.find("kgym agent: --timeout is now --llm-timeout"), std::string::npos) << err;
  EXPECT_NE(err.find("kgym agent: --retries is now --max-retries"), std::string::npos) << err;
  // Old names stay out of the help.
  EXPECT_EQ(agent->help().find("--retries"), std::string::npos);
}

}  // namespace
}  // namespace kgym::run
