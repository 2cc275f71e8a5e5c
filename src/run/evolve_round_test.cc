#include "run/evolve_round.h"

#include <gtest/gtest.h>

namespace kgym::run {
namespace {

TEST(BuildEvolveOptions, TakesTheSpecsPartsAndTheRoundsRules) {
  RunSpec spec;
  spec.skills.library = "lib";
  spec.skills.summaries = 3;
  spec.sampling.seed = 7;
  spec.gym.eval_concurrency = 5;
  spec.gym.request.num_perf_trials = 42;
  EvolveRound round;
  round.run_dir = "run";
  round.verify.require_second_task = true;
  round.second_task_seed = 9;
  const skills::EvolveOptions o = BuildEvolveOptions(spec, round);
  EXPECT_EQ(o.library_dir, "lib");
  EXPECT_EQ(o.run_dir, "run");
  EXPECT_EQ(o.summaries_per_task, 3);
  EXPECT_EQ(o.concurrency, 5);
  EXPECT_EQ(o.eval.num_perf_trials, 42);
  EXPECT_EQ(o.summary_sampling.seed, 7);
  EXPECT_EQ(o.verify_sampling.seed, 7);
  EXPECT_TRUE(o.verify.require_second_task);
  EXPECT_EQ(o.seed, 9u);
  round.seed_calls = false;  // kgym train's rounds
  round.library_dir = "other";
  const skills::EvolveOptions t = BuildEvolveOptions(spec, round);
  EXPECT_EQ(t.summary_sampling.seed, -1);
  EXPECT_EQ(t.library_dir, "other");
}

TEST(BuildEvolveOptions, TheRoundsDefaultsAreTheOptionsDefaults) {
  // `kgym skills evolve` without flags runs daVinci's rules, as EvolveOptions states them.
  const skills::EvolveOptions def;
  const skills::EvolveOptions o = BuildEvolveOptions(RunSpec{}, EvolveRound{});
  EXPECT_EQ(o.summary_sampling.temperature, def.summary_sampling.temperature);
  EXPECT_EQ(o.summary_sampling.max_tokens, def.summary_sampling.max_tokens);
  EXPECT_EQ(o.verify_sampling.max_tokens, def.verify_sampling.max_tokens);
  EXPECT_EQ(o.verify_sampling.temperature, def.verify_sampling.temperature);
  EXPECT_EQ(o.trigger.improve_over_turn1, def.trigger.improve_over_turn1);
  EXPECT_EQ(o.trigger.min_absolute, def.trigger.min_absolute);
  EXPECT_EQ(o.verify.min_absolute, def.verify.min_absolute);
  EXPECT_EQ(o.verify.min_vs_turn1, def.verify.min_vs_turn1);
  EXPECT_EQ(o.flush.near_duplicate_threshold, def.flush.near_duplicate_threshold);
  EXPECT_EQ(o.usage_success_speedup, def.usage_success_speedup);
}

}  // namespace
}  // namespace kgym::run
