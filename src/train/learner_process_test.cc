#include "train/learner_process.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "train/train_config.h"

namespace kgym::train {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(LearnerPlacement, DefaultsAreOneProcessOnTheVisibleGpus) {
  nlohmann::json rl, sft;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {}, &rl).ok());
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kSft, "", {}, &sft).ok());
  for (const auto* cfg : {&rl, &sft}) {
    LearnerLaunch l;
    l.nproc_per_node = 7;
    l.devices = {3};
    ASSERT_TRUE(LearnerPlacement((*cfg)["trainer"], &l).ok());
    EXPECT_EQ(l.nproc_per_node, 1);
    EXPECT_TRUE(l.devices.empty());
    EXPECT_EQ(ConfigAt(*cfg, "trainer.sharding"), "auto");
  }
}

TEST(LearnerPlacement, ReadsAndChecksNprocAndDevices) {
  nlohmann::json c;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {"trainer.nproc_per_node=2", "trainer.devices=[1, 2]"}, &c).ok());
  LearnerLaunch l;
  ASSERT_TRUE(LearnerPlacement(c["trainer"], &l).ok());
  EXPECT_EQ(l.nproc_per_node, 2);
  EXPECT_EQ(l.devices, (std::vector<int>{1, 2}));
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {"trainer.nproc_per_node=3", "trainer.devices=[1, 2]"}, &c).ok());
  Status s = LearnerPlacement(c["trainer"], &l);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("trainer.devices names only 2"), std::string::npos) << s.message();
  for (const char* bad : {"trainer.nproc_per_node=0", "trainer.nproc_per_node=two", "trainer.devices=[]",
                          "trainer.devices=[-1]", "trainer.devices=cuda:1"}) {
    ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {bad}, &c).ok()) << bad;
    s = LearnerPlacement(c["trainer"], &l);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("trainer."), std::string::npos) << s.message();
  }
}

TEST(LearnerCommand, OneProcessDirectlySeveralUnderTorchrun) {
  EXPECT_EQ(LearnerCommand("py", 1, {"sft", "--config", "c.json"}),
            (std::vector<std::string>{"py", "-u", "-m", "kgym_train", "sft", "--config", "c.json"}));
  const auto a = LearnerCommand("py", 3, {"serve", "--port", "0"});
  EXPECT_EQ(
      std::vector<std::string>(a.begin(), a.begin() + 7),
      (std::vector<std::string>{"py", "-u", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "3"}));
  const auto tail = std::vector<std::string>(a.end() - 5, a.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"-m", "kgym_train", "serve", "--port", "0"}));
  // ranks 1.. teed (prefixed), rank 0 untouched so its ready line stays bare
  EXPECT_TRUE(Has(a, "1:1,2:1"));
  EXPECT_FALSE(Has(a, "0:1"));
}

TEST(LearnerEnvironment, SetsNvlsVariablesAndTheLearnersGpus) {
  const std::vector<std::string> base = {"HOME=/h", "PYTHONPATH=/old", "CUDA_VISIBLE_DEVICES=0,1,2",
                                         "NCCL_NVLS_ENABLE=1", "PATH=/bin"};
  auto env = LearnerEnvironment(base, "/pkg", "/pkgs", {1, 2});
  for (const char* kv : {"HOME=/h", "PATH=/bin", "PYTHONPATH=/pkg", "KGYM_TRAIN_PKGS=/pkgs", "PYTHONUNBUFFERED=1",
                         "CUDA_VISIBLE_DEVICES=1,2", "NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1",
                         "NVSHMEM_DISABLE_NVLS=1"})
    EXPECT_TRUE(Has(env, kv)) << kv;
  EXPECT_FALSE(Has(env, "PYTHONPATH=/old"));
  EXPECT_FALSE(Has(env, "NCCL_NVLS_ENABLE=1"));
  EXPECT_FALSE(Has(env, "CUDA_VISIBLE_DEVICES=0,1,2"));
  env = LearnerEnvironment(base, "/pkg", "", {});  // no devices: kgym's own CUDA_VISIBLE_DEVICES stays
  EXPECT_TRUE(Has(env, "CUDA_VISIBLE_DEVICES=0,1,2"));
  EXPECT_TRUE(Has(env, "NVSHMEM_DISABLE_NVLS=1"));
  EXPECT_EQ(
      std::count_if(env.begin(), env.end(), [](const std::string& kv) { return kv.rfind("KGYM_TRAIN_PKGS", 0) == 0; }),
      0);
}

}  // namespace
}  // namespace kgym::train
