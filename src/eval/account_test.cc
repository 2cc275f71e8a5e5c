#include "eval/account.h"

#include <gtest/gtest.h>

#include "gpu/cupti_format.h"
#include "gpu/record_stream.h"

namespace kgym {
namespace {

// A timeline of 1 ms kernels, each with its tag (0 = untagged), one after the other.
class Timeline {
 public:
  Timeline& Op(uint32_t phase, uint32_t call, uint64_t us = 1000) {
    gpu::KernelExec k;
    k.name = "k";
    k.start_ns = at_;
    k.end_ns = at_ + us * 1000;
    k.correlation_id = ++corr_;
    at_ = k.end_ns + 500000;  // a gap between operations: unions never merge them
    rs_.kernels.push_back(k);
    if (phase != KGYM_PHASE_NONE) rs_.tag_of_correlation[k.correlation_id] = kgym_make_tag(phase, call);
    return *this;
  }
  Timeline& Copy(uint8_t copy_kind, uint64_t us = 1000) {  // an untagged memcpy (1 = HtoD, 8 = DtoD)
    gpu::MemoryOp m;
    m.kind = gpu::MemoryOpKind::kMemcpy;
    m.copy_kind = copy_kind;
    m.start_ns = at_;
    m.end_ns = at_ + us * 1000;
    m.bytes = 1 << 20;
    m.correlation_id = ++corr_;
    at_ = m.end_ns + 500000;
    rs_.memory_ops.push_back(m);
    return *this;
  }
  gpu::KernelTimeline Build() const { return gpu::KernelTimeline::FromRecords(rs_); }

 private:
  gpu::RecordStream rs_;
  uint64_t at_ = 1000000;
  uint32_t corr_ = 0;
};

TEST(AccountTest, DeviceWorkIsSplitIntoRequiredAndChecking) {
  Timeline t;
  t.Op(KGYM_PHASE_NONE, 0, 4000);  // construction, before the first call: load
  t.Op(KGYM_PHASE_CORRECTNESS, 0).Op(KGYM_PHASE_CORRECTNESS, 1).Op(KGYM_PHASE_CORRECTNESS, 2);  // 2 default, 1 signed
  t.Op(KGYM_PHASE_NONE, 0, 100);                                                                // a refill + flush
  t.Op(KGYM_PHASE_WARMUP, 1).Op(KGYM_PHASE_HARNESS, 0, 10);
  t.Op(KGYM_PHASE_TIMING, 0).Op(KGYM_PHASE_TIMING, 1).Op(KGYM_PHASE_TIMING, 2);  // reported attempt's calls 0..2
  t.Op(KGYM_PHASE_TIMING, 3);                                                    // a fresh-set call (id past them)
  t.Op(KGYM_PHASE_DETECT_GRAD, 0).Op(KGYM_PHASE_BURST, 0);
  t.Copy(1, 2000).Copy(8, 300);  // an upload (a transfer) and a device-to-device copy (the harness's)
  RequiredCalls req;
  req.default_trial = {true, true, false};
  req.first_call = 0;
  req.timed_calls = 3;
  const GpuWork w = GpuWorkOf(t.Build(), req);
  ASSERT_TRUE(w.known);
  EXPECT_DOUBLE_EQ(w.correctness_s, 0.002);
  EXPECT_DOUBLE_EQ(w.timed_s, 0.003);
  EXPECT_DOUBLE_EQ(w.checks_s, 0.004);     // signed trial, fresh call, detection, burst
  EXPECT_DOUBLE_EQ(w.harness_s, 0.00141);  // refill, warmup, null call, device-to-device copy
  EXPECT_DOUBLE_EQ(w.transfers_s, 0.002);
  EXPECT_DOUBLE_EQ(w.load_s, 0.004);
  const nlohmann::json j = w.ToJson();
  EXPECT_DOUBLE_EQ(j["required_s"].get<double>(), 0.005);
  EXPECT_NEAR(j["checking_share"].get<double>(), 0.00541 / 0.005, 1e-12);
}

TEST(AccountTest, AnAttemptTimedAgainReportsOnlyItsOwnCalls) {
  Timeline t;
  t.Op(KGYM_PHASE_TIMING, 0).Op(KGYM_PHASE_TIMING, 1);            // first attempt: shared the device, timed again
  t.Op(KGYM_PHASE_TIMING, 100000).Op(KGYM_PHASE_TIMING, 100001);  // the reported attempt
  RequiredCalls req;
  req.first_call = 100000;
  req.timed_calls = 2;
  const GpuWork w = GpuWorkOf(t.Build(), req);
  EXPECT_DOUBLE_EQ(w.timed_s, 0.002);
  EXPECT_DOUBLE_EQ(w.checks_s, 0.002);
}

TEST(AccountTest, WallPartsAddUpToTheEvaluationAndTimingIsSplitByTheLock) {
  nlohmann::json md = {
      {"phase_s", {{"setup", 0.01}, {"reference", 2.0}, {"load", 3.0}, {"correctness", 1.5}, {"timing", 2.0}}},
      {"worker_start_s", 1.2},
      {"timing_lock", {{"wait_s", 0.5}, {"freeze_s", 0.1}, {"hold_s", 0.6}, {"hold", {{"calls_s", 0.5}}}}},
      {"timing_kept_fetch_s", 0.3},
      {"frozen_s", 0.9}};
  nlohmann::json a = AccountFromMetadata(md);
  const auto& w = a["wall"];
  EXPECT_DOUBLE_EQ(w["worker_start"].get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(w["load"].get<double>(), 1.8);
  EXPECT_DOUBLE_EQ(w["lock_wait"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(w["freeze"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(w["hold"].get<double>(), 0.6);
  EXPECT_DOUBLE_EQ(w["kept_fetch"].get<double>(), 0.3);
  EXPECT_NEAR(w["timing_other"].get<double>(), 0.5, 1e-12);
  EXPECT_FALSE(w.contains("timing"));
  double sum = 0;
  for (const auto& [k, v] : w.items()) sum += v.get<double>();
  EXPECT_NEAR(sum, 8.51, 1e-12);
  EXPECT_NEAR(a["wall_s"].get<double>(), 8.51, 1e-12);
  EXPECT_DOUBLE_EQ(a["frozen_s"].get<double>(), 0.9);
  EXPECT_FALSE(a["gpu"]["known"].get<bool>());
  AddToAccount(&md, "queue", 1.0);  // no account yet: nothing
  EXPECT_FALSE(md.contains("account"));
  md["account"] = a;
  AddToAccount(&md, "queue", 1.0);
  EXPECT_NEAR(md["account"]["wall_s"].get<double>(), 9.51, 1e-12);
  EXPECT_DOUBLE_EQ(md["account"]["wall"]["queue"].get<double>(), 1.0);
}

// Parts measured apart can overlap by clock noise; the split never makes a part negative or the sum larger.
TEST(AccountTest, TimingPartsNeverExceedThePhase) {
  nlohmann::json md = {{"phase_s", {{"timing", 1.0}}},
                       {"timing_lock", {{"wait_s", 0.7}, {"freeze_s", 0.2}, {"hold_s", 0.3}}}};
  nlohmann::json a = AccountFromMetadata(md);
  EXPECT_DOUBLE_EQ(a["wall"]["hold"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(a["wall"]["timing_other"].get<double>(), 0.0);
  EXPECT_NEAR(a["wall_s"].get<double>(), 1.0, 1e-12);
}

}  // namespace
}  // namespace kgym
