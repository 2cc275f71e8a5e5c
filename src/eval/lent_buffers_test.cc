#include "eval/lent_buffers.h"

#include <gtest/gtest.h>

#include <cstring>

#include "eval/trial_checks.h"

namespace kgym {
namespace {

// One float32 tensor of `n` elements, all `x`, in `region` at `offset` (or in a heap region of its own).
Values Floats(int64_t n, float x, std::shared_ptr<const Region> region = nullptr, size_t offset = 0) {
  Value v;
  v.is_tensor = true;
  v.tensor.shape = {n};
  std::string bytes(static_cast<size_t>(n) * 4, '\0');
  for (int64_t i = 0; i < n; ++i) std::memcpy(&bytes[static_cast<size_t>(i) * 4], &x, 4);
  if (region) {
    v.tensor.region = std::move(region);
    v.tensor.offset = offset;
    v.tensor.nbytes = bytes.size();
  } else {
    v.tensor.SetBytes(bytes);
  }
  return {v};
}

TEST(LentBuffers, LayoutMatchesTheWorkersPacking) {
  Values v = Floats(3, 1.0f);  // 12 bytes -> 64
  Values two = Floats(100, 1.0f);
  two.push_back(v[0]);
  Value plain;
  plain.json = 3;
  two.push_back(plain);
  EXPECT_EQ(LentBuffers::LayoutBytes(v), 64u);
  EXPECT_EQ(LentBuffers::LayoutBytes(two), 448u + 64u);
}

TEST(LentBuffers, HeldOutputsAreBoundedByTheBuffersWhereOutputsAreLarge) {
  ReferenceData big, small;
  for (int i = 0; i < 5; ++i) {
    big.trials.push_back({"default", false, {}, Floats(1 << 19, 1.0f), {}, {}});  // 2 MiB each
    small.trials.push_back({"default", false, {}, Floats(1000, 1.0f), {}, {}});
  }
  big.pool.push_back(
      {"default", false, {}, Floats((1 << 19) + 16, 1.0f), {}, {}});  // the largest sets the buffers' size
  EXPECT_EQ(LendBytes(big, 3), (size_t{1} << 21) + 64);
  EXPECT_EQ(LendBytes(big, 0), 0u);    // lending off
  EXPECT_EQ(LendBytes(small, 3), 0u);  // outputs under kLendMinBytes
  EXPECT_EQ(HeldOutputBytes(big, 3), 3 * ((uint64_t{1} << 21) + 64));
  EXPECT_EQ(HeldOutputBytes(big, 0), 5 * (uint64_t{1} << 21));  // no lending: every trial's outputs
  EXPECT_EQ(HeldOutputBytes(big, 8), 5 * (uint64_t{1} << 21));  // never more than the trials themselves
  EXPECT_EQ(HeldOutputBytes(small, 3), 5 * 4000u);              // below kLendMinBytes: nothing is lent
}

TEST(LentBuffers, ABufferIsLentAgainOnlyOnceNothingReadFromItIsLeft) {
  LentBuffers pool(4096, 2);
  std::shared_ptr<const Region> a = pool.Free();
  ASSERT_TRUE(a);
  Values read = Floats(4, 0.0f, a);  // values decoded from it
  std::shared_ptr<const Region> b = pool.Free();
  ASSERT_TRUE(b);
  EXPECT_NE(a, b);
  EXPECT_TRUE(pool.Holds(read));
  EXPECT_FALSE(pool.Holds(Floats(4, 0.0f)));
  const Region* first = a.get();
  a.reset();
  EXPECT_FALSE(pool.Free());  // `read` still refers to the first, the second is lent out
  read.clear();
  EXPECT_EQ(pool.Free().get(), first);
  EXPECT_EQ(pool.made(), 2);
  EXPECT_FALSE(LentBuffers(0, 3).Free());
}

TEST(TrialChecks, LaterTrialsAreComparedWithTheFirstAndDropped) {
  ReferenceTrial ref;
  ref.outputs = Floats(8, 1.0f);
  TrialChecks checks({1e-2, 1e-2}, {1e-2, 1e-2});
  LentBuffers pool(64, 3);
  auto lent = pool.Free();
  ASSERT_TRUE(lent);
  for (float x : {1.0f, 1.0f, 1.001f}) {
    auto t = std::make_unique<TrialChecks::Trial>();
    t->ref = &ref;
    t->got = Floats(8, x);
    checks.Submit(std::move(t));
  }
  auto on_lent = std::make_unique<TrialChecks::Trial>();
  on_lent->ref = &ref;
  on_lent->got = Floats(8, 0.0f, lent);  // the buffer's bytes: zeros
  const Region* lent_raw = lent.get();
  lent.reset();
  checks.Submit(std::move(on_lent));
  auto& trials = checks.Finish();
  ASSERT_EQ(trials.size(), 4u);  // the last one failed
  EXPECT_TRUE(trials[0]->c.ok && trials[1]->c.ok && trials[2]->c.ok);
  EXPECT_FALSE(trials[3]->c.ok);
  EXPECT_TRUE(trials[1]->same_as_first);
  EXPECT_FALSE(trials[2]->same_as_first);
  EXPECT_FALSE(trials[0]->got.empty());  // the first stays
  EXPECT_TRUE(trials[1]->got.empty() && trials[3]->got.empty());
  EXPECT_EQ(pool.Free().get(), lent_raw);  // free again after its comparison: lent, not a new one made
  EXPECT_EQ(pool.made(), 1);
}

}  // namespace
}  // namespace kgym
