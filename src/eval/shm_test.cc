#include "sandbox/shm.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "eval/tensor.h"
#include "sandbox/channel.h"
#include "sandbox/worker_session.h"

namespace kgym {
namespace {

int UnsealedMemfd(const std::string& bytes) {
  int fd = ::memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return fd;
}

TEST(Region, RefusesUnsealedMemfdAndPlainFiles) {
  std::shared_ptr<const Region> r;
  EXPECT_FALSE(Region::FromSealedMemfd(UnsealedMemfd("abcd"), &r).ok());
  int fd = UnsealedMemfd("abcd");
  ASSERT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), 0);  // write seal alone: it could still shrink
  EXPECT_FALSE(Region::FromSealedMemfd(fd, &r).ok());
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  ::close(pipefd[1]);
  EXPECT_FALSE(Region::FromSealedMemfd(pipefd[0], &r).ok());
}

TEST(Region, SealedCopyCannotBeWrittenByAnyone) {
  std::shared_ptr<const Region> r;
  ASSERT_TRUE(Region::SealedCopy("hello world", &r).ok());
  EXPECT_EQ(r->view(), "hello world");
  EXPECT_TRUE(IsWriteSealed(r->fd()));
  EXPECT_LT(::pwrite(r->fd(), "X", 1, 0), 0);
  EXPECT_EQ(::mmap(nullptr, 11, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd(), 0), MAP_FAILED);
  EXPECT_NE(::ftruncate(r->fd(), 2), 0);
  EXPECT_EQ(r->view(), "hello world");
}

TEST(Region, LentBufferTakesWritesButNeverChangesSize) {
  std::shared_ptr<const Region> r;
  ASSERT_TRUE(Region::Lent(1 << 20, &r).ok());
  ASSERT_EQ(r->size(), size_t{1} << 20);
  EXPECT_FALSE(IsWriteSealed(r->fd()));  // the worker writes into it...
  void* w = ::mmap(nullptr, r->size(), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd(), 0);
  ASSERT_NE(w, MAP_FAILED);
  std::memcpy(static_cast<char*>(w) + 4096, "outputs", 7);
  EXPECT_EQ(r->view().substr(4096, 7), "outputs");  // ...and the supervisor's mapping sees it
  ::munmap(w, r->size());
  EXPECT_NE(::ftruncate(r->fd(), 4096), 0);  // but nobody can shrink it under the supervisor's reads
  EXPECT_NE(::ftruncate(r->fd(), 2 << 20), 0);
  EXPECT_NE(::fcntl(r->fd(), F_ADD_SEALS, F_SEAL_WRITE), 0);  // nor change its seals
  std::shared_ptr<const Region> refused;
  EXPECT_FALSE(Region::FromSealedMemfd(::dup(r->fd()), &refused).ok());  // never taken for an immutable region
  EXPECT_FALSE(Region::Lent(0, &refused).ok());
}

TEST(Wire, RegionsTravelWithTheFrameAndUnsealedOnesAreRefused) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::shared_ptr<const Region> a, b;
  ASSERT_TRUE(Region::SealedCopy(std::string(1000, 'a'), &a).ok());
  ASSERT_TRUE(Region::SealedCopy(std::string(10, 'b'), &b).ok());
  ASSERT_TRUE(SendFrame(sv[0], {{"type", "x"}}, "payload", {a, b}).ok());
  ASSERT_TRUE(SendFrame(sv[0], {{"type", "y"}}, "").ok());
  Frame f;
  auto dl = Clock::now() + std::chrono::seconds(5);
  ASSERT_TRUE(RecvFrame(sv[1], dl, &f).ok());
  EXPECT_EQ(f.header["type"], "x");
  EXPECT_EQ(f.payload, "payload");
  ASSERT_EQ(f.regions.size(), 2u);
  EXPECT_EQ(f.regions[0]->view(), std::string(1000, 'a'));
  EXPECT_EQ(f.regions[1]->view(), std::string(10, 'b'));
  ASSERT_TRUE(RecvFrame(sv[1], dl, &f).ok());  // the next frame carries none
  EXPECT_EQ(f.header["type"], "y");
  EXPECT_TRUE(f.regions.empty());

  // A peer that sends an unsealed memfd (it could keep writing while the supervisor compares) is refused.
  int fd = UnsealedMemfd("zzzz");
  std::string h = R"({"type":"z","regions":1})";
  char prefix[12];
  uint32_t hl = static_cast<uint32_t>(h.size());
  uint64_t pl = 0;
  std::memcpy(prefix, &hl, 4);
  std::memcpy(prefix + 4, &pl, 8);
  iovec iov{prefix, sizeof prefix};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ASSERT_EQ(::sendmsg(sv[0], &msg, 0), 12);
  ASSERT_EQ(::write(sv[0], h.data(), h.size()), static_cast<ssize_t>(h.size()));
  Status s = RecvFrame(sv[1], dl, &f);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("sealed"), std::string::npos);
  // A frame that announces a region it does not carry is refused too.
  ASSERT_TRUE(SendFrame(sv[0], {{"type", "w"}, {"regions", 1}}, "").ok());
  EXPECT_EQ(RecvFrame(sv[1], dl, &f).code(), Status::Code::kInvalidArgument);
  ::close(fd);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(Tensor, DecodeFromRegionsAndForwardWithoutCopy) {
  std::vector<float> xs = {1, 2, 3, 4, 5, 6};
  std::string bytes(reinterpret_cast<const char*>(xs.data()), xs.size() * 4);
  std::shared_ptr<const Region> reg;
  ASSERT_TRUE(Region::SealedCopy(std::string(64, '\0') + bytes, &reg).ok());
  nlohmann::json h = {
      {"inputs", {{{"kind", "tensor"}, {"index", 0}}, {{"kind", "json"}, {"value", 3}}}},
      {"tensors", {{{"dtype", "float32"}, {"shape", {2, 3}}, {"offset", 64}, {"nbytes", 24}, {"region", 0}}}}};
  Values v;
  ASSERT_TRUE(DecodeValues(h, "inputs", "", {reg}, &v).ok());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].tensor.At(5), 6.0);
  EXPECT_EQ(v[0].tensor.region, reg);
  EXPECT_EQ(v[1].json, 3);
  // A description that points past the region or at a missing region is refused.
  auto bad = h;
  bad["tensors"][0]["offset"] = 80;
  EXPECT_FALSE(DecodeValues(bad, "inputs", "", {reg}, &v).ok());
  bad = h;
  bad["tensors"][0]["region"] = 1;
  EXPECT_FALSE(DecodeValues(bad, "inputs", "", {reg}, &v).ok());
  ASSERT_TRUE(DecodeValues(h, "inputs", "", {reg}, &v).ok());
  nlohmann::json out;
  std::string payload;
  std::vector<std::shared_ptr<const Region>> fds;
  EncodeValues(v, "inputs", &out, &payload, &fds);
  EXPECT_TRUE(payload.empty());  // forwarded by fd, not copied
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_EQ(out["tensors"][0]["region"], 0);
  EXPECT_EQ(out["tensors"][0]["offset"], 64);
  // Without a place for fds the bytes are copied inline.
  nlohmann::json out2;
  EncodeValues(v, "inputs", &out2, &payload);
  EXPECT_EQ(payload, bytes);
}

Tensor Floats(const std::vector<float>& xs) {
  Tensor t;
  t.dtype = DType::kFloat32;
  t.shape = {static_cast<int64_t>(xs.size())};
  t.SetBytes(std::string(reinterpret_cast<const char*>(xs.data()), xs.size() * 4));
  return t;
}

// The threaded comparison of a large output gives the same statistics as a plain loop written here.
TEST(Tensor, LargeComparisonMatchesPlainLoop) {
  const size_t n = (1u << 24) + 12345;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  std::vector<float> r(n), c(n);
  for (size_t i = 0; i < n; ++i) {
    r[i] = nd(rng);
    c[i] = r[i] + 0.001f * nd(rng);
  }
  c[n - 3] = r[n - 3] + 1.0f;  // the worst mismatch
  c[n / 2] = r[n / 2] + 0.5f;  // another mismatch
  c[100] = std::nanf("");
  Tolerance tol;
  Comparison cmp = CompareTensors(Floats(r), Floats(c), tol);
  int64_t mism = 0;
  double max_abs = 0, sum_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(c[i])) {
      ++mism;
      continue;
    }
    double d = std::fabs(static_cast<double>(c[i]) - r[i]);
    sum_abs += d;
    max_abs = std::max(max_abs, d);
    if (d > tol.atol + tol.rtol * std::fabs(static_cast<double>(r[i]))) ++mism;
  }
  EXPECT_FALSE(cmp.ok);
  EXPECT_EQ(cmp.mismatched, mism);
  EXPECT_EQ(cmp.mismatched, 3);
  EXPECT_DOUBLE_EQ(cmp.max_abs_diff, max_abs);
  EXPECT_NEAR(cmp.mean_abs_diff, sum_abs / static_cast<double>(n), 1e-12);
  EXPECT_EQ(cmp.worst_index, 100);  // the non-finite element is shown first
  c[100] = r[100];
  cmp = CompareTensors(Floats(r), Floats(c), tol);
  EXPECT_EQ(cmp.worst_index, static_cast<int64_t>(n - 3));
  EXPECT_NE(cmp.problem.find("2 of"), std::string::npos);
}

// Non-finite values in the blocked float32 comparison: the same infinity on both sides is no mismatch, anything
// else non-finite is one, and the element shown is the first non-finite one.
TEST(Tensor, NonFiniteValuesInsideLargeComparisons) {
  const size_t n = 3 * 4096 + 7;
  std::vector<float> r(n, 1.0f), c(n, 1.0f);
  r[5000] = c[5000] = std::numeric_limits<float>::infinity();
  Comparison cmp = CompareTensors(Floats(r), Floats(c), Tolerance{});
  EXPECT_TRUE(cmp.ok) << cmp.problem;
  c[9000] = std::numeric_limits<float>::infinity();
  c[n - 1] = std::nanf("");
  c[100] = 1.5f;
  cmp = CompareTensors(Floats(r), Floats(c), Tolerance{});
  EXPECT_FALSE(cmp.ok);
  EXPECT_EQ(cmp.mismatched, 3);
  EXPECT_EQ(cmp.worst_index, 9000);
  EXPECT_NE(cmp.problem.find("2 NaN/Inf"), std::string::npos) << cmp.problem;
  EXPECT_DOUBLE_EQ(cmp.max_abs_diff, 0.5);
}

// Outputs far below atol (a wide softmax): the elementwise test would accept anything of that scale, so the error is
// judged relative to the outputs; honest rounding (bf16-sized, 0.4 %) passes, a 30 % error does not.
TEST(Tensor, OutputsBelowAtolAreJudgedAtTheirOwnScale) {
  const size_t n = 1 << 16;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  std::vector<float> r(n), honest(n), off(n);
  for (size_t i = 0; i < n; ++i) {
    r[i] = u(rng) / static_cast<float>(n);  // ~1.5e-5, every value below atol = 1e-2
    honest[i] = r[i] * (1.0f + (i % 2 ? 0.004f : -0.004f));
    off[i] = r[i] * 0.7f;
  }
  Tolerance tol;
  Comparison ok = CompareTensors(Floats(r), Floats(honest), tol);
  EXPECT_TRUE(ok.ok) << ok.problem;
  Comparison bad = CompareTensors(Floats(r), Floats(off), tol);
  EXPECT_FALSE(bad.ok);
  EXPECT_NEAR(bad.rel_l2, 0.3, 1e-3);
  EXPECT_NE(bad.problem.find("at the outputs' scale"), std::string::npos) << bad.problem;
  // Where some reference value reaches atol the plain elementwise test stands alone (the same 30 % error on
  // values that small still passes it, as KernelBench's allclose would).
  r[0] = off[0] = 0.5f;
  std::vector<float> off2 = off;
  off2[0] = r[0];
  EXPECT_TRUE(CompareTensors(Floats(r), Floats(off2), tol).ok);
  // All-zero references have no scale to judge against: exact zeros pass, anything within atol too.
  std::vector<float> z(n, 0.0f), zc(n, 1e-4f);
  EXPECT_TRUE(CompareTensors(Floats(z), Floats(z), tol).ok);
  EXPECT_TRUE(CompareTensors(Floats(z), Floats(zc), tol).ok);
}

// The supervisor's thread count comes from the kernel's view of the process (/proc/PID/stat).
TEST(ProcessThreads, SeesAThreadStartAndEnd) {
  const int before = ProcessThreads(::getpid());
  ASSERT_GT(before, 0);
  std::atomic<bool> stop{false};
  std::thread t([&] {
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  EXPECT_EQ(ProcessThreads(::getpid()), before + 1);
  stop = true;
  t.join();
  EXPECT_EQ(ProcessThreads(::getpid()), before);
  EXPECT_EQ(ProcessThreads(-1), -1);
  EXPECT_EQ(ProcessThreads(0), -1);
}

// CPU time summed over a process's threads: a thread spinning for ~30 ms of its own CPU time shows up in it.
TEST(ProcessCpuNs, CountsWorkOfEveryThread) {
  const int64_t before = ProcessCpuNs(::getpid());
  ASSERT_GE(before, 0);
  std::thread t([before] {
    timespec a{}, b{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile double x = 0;
    do {
      for (int i = 0; i < 10000; ++i) x = x + 1;
      ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < 30000000LL);
    // Read while this thread still exists: an ended thread's time leaves the per-thread files.
    EXPECT_GE(ProcessCpuNs(::getpid()) - before, 25000000LL);
  });
  t.join();
  EXPECT_EQ(ProcessCpuNs(-1), -1);
}

}  // namespace
}  // namespace kgym
