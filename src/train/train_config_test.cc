#include "train/train_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace kgym::train {
namespace {

TEST(TrainConfig, DefaultsCarryTheRecipe) {
  nlohmann::json rl, sft;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {}, &rl).ok());
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kSft, "", {}, &sft).ok());
  EXPECT_EQ(ConfigAt(rl, "algorithm.adv_estimator"), "trloo");
  EXPECT_DOUBLE_EQ(ConfigAt(rl, "actor.clip_ratio_high").get<double>(), 0.28);
  EXPECT_DOUBLE_EQ(ConfigAt(rl, "actor.optim.lr").get<double>(), 1e-6);
  EXPECT_EQ(ConfigAt(rl, "rollout.n").get<int>(), 16);
  EXPECT_DOUBLE_EQ(ConfigAt(rl, "algorithm.rollout_token_veto_threshold").get<double>(), 1e-4);
  EXPECT_DOUBLE_EQ(ConfigAt(sft, "optim.lr").get<double>(), 2e-5);
  EXPECT_EQ(ConfigAt(sft, "data.max_length").get<int>(), 18432);
  EXPECT_TRUE(ConfigAt(sft, "model.path").is_null());
  EXPECT_TRUE(ConfigAt(rl, "no.such.key").is_null());
}

TEST(TrainConfig, FileThenOverridesWithYamlValues) {
  const std::string file = ::testing::TempDir() + "/cfg.yaml";
  std::ofstream(file) << "actor:\n  optim:\n    lr: 3.0e-4\nrollout:\n  n: 8\n";
  nlohmann::json c;
  Status s = LoadTrainConfig(ConfigKind::kRl, file,
                             {"rollout.n=4", "algorithm.rollout_rs=null", "data.only=[level1/relu, rmsnorm]",
                              "trainer.val_before_train=false", "model.init.rope_theta=10000", "gym.size='small'"},
                             &c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_DOUBLE_EQ(ConfigAt(c, "actor.optim.lr").get<double>(), 3e-4);
  EXPECT_EQ(ConfigAt(c, "rollout.n").get<int>(), 4);  // the command line wins over the file
  EXPECT_TRUE(ConfigAt(c, "algorithm.rollout_rs").is_null());
  EXPECT_EQ(ConfigAt(c, "data.only"), nlohmann::json({"level1/relu", "rmsnorm"}));
  EXPECT_EQ(ConfigAt(c, "trainer.val_before_train"), false);
  EXPECT_EQ(ConfigAt(c, "model.init.rope_theta").get<int>(), 10000);  // open map: any Qwen3Config field
  EXPECT_EQ(ConfigAt(c, "model.init.hidden_size").get<int>(), 256);   // ... merged, not replaced
  EXPECT_EQ(ConfigAt(c, "gym.size"), "small");
  EXPECT_DOUBLE_EQ(ConfigAt(c, "actor.optim.betas")[1].get<double>(), 0.999);  // untouched siblings stay
}

TEST(TrainConfig, UnknownKeysAreRefusedWithTheNearestName) {
  nlohmann::json c;
  Status s = LoadTrainConfig(ConfigKind::kRl, "", {"actor.optim.lrr=1"}, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("actor.optim.lrr"), std::string::npos);
  EXPECT_NE(s.message().find("did you mean 'actor.optim.lr'"), std::string::npos);
  EXPECT_FALSE(LoadTrainConfig(ConfigKind::kRl, "", {"actor=3"}, &c).ok());  // a section, not a value
  EXPECT_FALSE(LoadTrainConfig(ConfigKind::kRl, "", {"no_equals_sign"}, &c).ok());
  EXPECT_FALSE(LoadTrainConfig(ConfigKind::kSft, "", {"algorithm.gamma=1"}, &c).ok());  // an RL key in SFT
  const std::string bad = ::testing::TempDir() + "/bad.yaml";
  std::ofstream(bad) << "actor: [unclosed\n";
  s = LoadTrainConfig(ConfigKind::kRl, bad, {}, &c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bad.yaml"), std::string::npos);
  EXPECT_EQ(LoadTrainConfig(ConfigKind::kRl, "/no/such/file.yaml", {}, &c).code(), Status::Code::kNotFound);
}

TEST(TrainConfig, JsonFilesAndRelativePaths) {
  const std::string file = ::testing::TempDir() + "/cfg.json";
  std::ofstream(file) << R"({"data": {"train_files": ["rel/tasks"]}, "trainer": {"out_dir": "runs/x"}})";
  nlohmann::json c;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, file, {"model.path=ckpt/final"}, &c).ok());
  const auto cwd = std::filesystem::current_path();
  EXPECT_EQ(ConfigAt(c, "data.train_files")[0], (cwd / "rel/tasks").string());
  EXPECT_EQ(ConfigAt(c, "trainer.out_dir"), (cwd / "runs/x").string());
  EXPECT_EQ(ConfigAt(c, "model.path"), (cwd / "ckpt/final").string());
  EXPECT_EQ(ConfigAt(c, "trainer.resume"), "auto");  // keywords are not paths
}

TEST(TrainConfig, YamlScalarsFollowTheCoreSchema) {
  nlohmann::json j;
  ASSERT_TRUE(YamlToJson("{a: 1, b: 1.5e-3, c: true, d: ~, e: '1', f: text, g: -2, h: .5}", &j).ok());
  EXPECT_TRUE(j["a"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["b"].get<double>(), 1.5e-3);
  EXPECT_EQ(j["c"], true);
  EXPECT_TRUE(j["d"].is_null());
  EXPECT_EQ(j["e"], "1");  // quoted stays a string
  EXPECT_EQ(j["f"], "text");
  EXPECT_EQ(j["g"].get<int>(), -2);
  EXPECT_DOUBLE_EQ(j["h"].get<double>(), 0.5);
}

}  // namespace
}  // namespace kgym::train
