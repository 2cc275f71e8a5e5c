#include "gpu/roofline.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kgym::gpu {
namespace {

TEST(RooflineTest, MemoryBoundFloor) {
  // A 64 MiB fp32 vector add: read 2 inputs, write 1 output, at 3.8 TB/s.
  RooflineInputs in;
  in.bytes_moved = 3.0 * 64 * 1024 * 1024;
  in.bandwidth_bytes_per_s = 3.8e12;
  RooflineFloor f;
  ASSERT_TRUE(ComputeRooflineFloor(in, &f).ok());
  EXPECT_NEAR(f.memory_floor_ns, in.bytes_moved / 3.8e12 * 1e9, 1e-6);
  EXPECT_DOUBLE_EQ(f.compute_floor_ns, 0);
  EXPECT_DOUBLE_EQ(f.floor_ns, f.memory_floor_ns);
  EXPECT_NEAR(f.floor_ns / 1e3, 52.98, 0.01);
}

TEST(RooflineTest, ComputeBoundFloorWins) {
  RooflineInputs in;
  in.bytes_moved = 3 * 4096.0 * 4096 * 2;  // fp16 GEMM 4096^3
  in.bandwidth_bytes_per_s = 4.0e12;
  in.flops = 2.0 * 4096 * 4096 * 4096;
  in.peak_flops_per_s = 989e12;
  RooflineFloor f;
  ASSERT_TRUE(ComputeRooflineFloor(in, &f).ok());
  EXPECT_GT(f.compute_floor_ns, f.memory_floor_ns);
  EXPECT_DOUBLE_EQ(f.floor_ns, f.compute_floor_ns);
  RooflineCheck c = CheckAgainstRoofline(10e3, f, 0.1);  // 10 us for a 139 us GEMM
  EXPECT_TRUE(c.below_floor);
  EXPECT_NE(c.explanation.find("FLOP at the peak 989 TFLOP/s"), std::string::npos) << c.explanation;
}

TEST(RooflineTest, FlagsOnlyBelowFloorLessMargin) {
  RooflineInputs in;
  in.bytes_moved = 1e9;
  in.bandwidth_bytes_per_s = 4e12;  // floor 250 us
  RooflineFloor f;
  ASSERT_TRUE(ComputeRooflineFloor(in, &f).ok());

  RooflineCheck fast_but_possible = CheckAgainstRoofline(240e3, f, 0.1);  // limit 225 us
  EXPECT_FALSE(fast_but_possible.below_floor);
  EXPECT_DOUBLE_EQ(fast_but_possible.limit_ns, 225e3);
  EXPECT_NE(fast_but_possible.explanation.find("not below"), std::string::npos);

  RooflineCheck impossible = CheckAgainstRoofline(20e3, f, 0.1);
  EXPECT_TRUE(impossible.below_floor);
  EXPECT_EQ(impossible.explanation,
            "measured 20.000 us is below the physical floor 250.000 us less 10% margin (225.000 us): 1000000000 "
            "bytes must move at the measured 4.000 TB/s, which takes 250.000 us.");
  nlohmann::json j = impossible.ToJson();
  EXPECT_EQ(j["below_floor"], true);
  EXPECT_DOUBLE_EQ(j["floor_us"].get<double>(), 250.0);
  EXPECT_TRUE(CheckAgainstRoofline(224.9e3, f, 0.1).below_floor);
  EXPECT_FALSE(CheckAgainstRoofline(225e3, f, 0.1).below_floor);
}

TEST(RooflineTest, RejectsInputsThatCannotDefineAFloor) {
  RooflineFloor f;
  RooflineInputs in;
  in.bytes_moved = 0;
  in.bandwidth_bytes_per_s = 1e12;
  EXPECT_FALSE(ComputeRooflineFloor(in, &f).ok());
  in.bytes_moved = 1e6;
  in.bandwidth_bytes_per_s = 0;
  Status s = ComputeRooflineFloor(in, &f);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bandwidth_bytes_per_s"), std::string::npos);
  in.bandwidth_bytes_per_s = std::nan("");
  EXPECT_FALSE(ComputeRooflineFloor(in, &f).ok());
  in.bandwidth_bytes_per_s = 1e12;
  in.flops = 1e9;  // without a peak
  EXPECT_FALSE(ComputeRooflineFloor(in, &f).ok());
  in.peak_flops_per_s = 1e15;
  EXPECT_TRUE(ComputeRooflineFloor(in, &f).ok());
}

}  // namespace
}  // namespace kgym::gpu
