#include "gpu/record_stream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "gpu/cupti_format.h"

namespace kgym::gpu {
namespace {

KernelExec Kernel(std::string name, uint64_t start, uint64_t end, uint32_t corr, uint32_t stream = 7) {
  KernelExec k;
  k.name = std::move(name);
  k.start_ns = start;
  k.end_ns = end;
  k.correlation_id = corr;
  k.stream_id = stream;
  k.grid = {128, 2, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 40;
  k.dynamic_shared_bytes = 4096;
  return k;
}

std::string SampleStream() {
  RecordStreamWriter w(4242, 111, 222);
  w.AddMarker({true, kgym_make_tag(KGYM_PHASE_TIMING, 3), 1000, 2000, 9});
  w.AddKernel(Kernel("_Z10add_kernelPfS_i", 1100, 1500, 17));
  MemoryOp m;
  m.kind = MemoryOpKind::kMemcpy;
  m.start_ns = 1600;
  m.end_ns = 1700;
  m.bytes = 4096;
  m.correlation_id = 18;
  m.copy_kind = 8;
  w.AddMemoryOp(m);
  w.AddExternalCorrelation(17, kgym_make_tag(KGYM_PHASE_TIMING, 3));
  w.AddExternalCorrelation(18, kgym_make_tag(KGYM_PHASE_TIMING, 3));
  w.AddExternalCorrelation(19, 99, /*external_kind=*/4);  // CUSTOM1: not ours, ignored
  w.AddMarker({false, kgym_make_tag(KGYM_PHASE_TIMING, 3), 1800, 2900, 9});
  w.AddError(17, "cuptiActivityEnable(MEMSET): not supported");
  w.AddDropped(3);
  w.AddFlush(1, 5000);
  return w.bytes();
}

TEST(RecordStreamTest, RoundTripsEveryRecordType) {
  RecordStream rs;
  ASSERT_TRUE(ParseRecordStream(SampleStream(), {}, &rs).ok());
  EXPECT_EQ(rs.version, KGYM_STREAM_VERSION);
  EXPECT_EQ(rs.pid, 4242u);
  EXPECT_EQ(rs.open_host_ns, 111u);
  EXPECT_EQ(rs.open_gpu_ns, 222u);
  ASSERT_EQ(rs.kernels.size(), 1u);
  const KernelExec& k = rs.kernels[0];
  EXPECT_EQ(k.name, "_Z10add_kernelPfS_i");
  EXPECT_EQ(k.start_ns, 1100u);
  EXPECT_EQ(k.end_ns, 1500u);
  EXPECT_EQ(k.stream_id, 7u);
  EXPECT_EQ(k.grid[0], 128);
  EXPECT_EQ(k.grid[1], 2);
  EXPECT_EQ(k.block[0], 256);
  EXPECT_EQ(k.registers_per_thread, 40);
  EXPECT_EQ(k.dynamic_shared_bytes, 4096);
  ASSERT_EQ(rs.memory_ops.size(), 1u);
  EXPECT_EQ(rs.memory_ops[0].bytes, 4096u);
  EXPECT_EQ(rs.memory_ops[0].copy_kind, 8);
  EXPECT_EQ(rs.tag_of_correlation.size(), 2u);  // the CUSTOM1 join is not a tag
  EXPECT_EQ(rs.tag_of_correlation.at(17), kgym_make_tag(KGYM_PHASE_TIMING, 3));
  ASSERT_EQ(rs.markers.size(), 2u);
  EXPECT_TRUE(rs.markers[0].begin);
  EXPECT_FALSE(rs.markers[1].begin);
  EXPECT_EQ(rs.markers[1].host_ns, 2900u);
  ASSERT_EQ(rs.errors.size(), 1u);
  EXPECT_EQ(rs.errors[0].cupti_result, 17);
  EXPECT_EQ(rs.errors[0].message, "cuptiActivityEnable(MEMSET): not supported");
  EXPECT_EQ(rs.dropped_records, 3u);
  EXPECT_EQ(rs.last_flush_sequence, 1u);
  EXPECT_EQ(rs.bytes_consumed, SampleStream().size());
}

TEST(RecordStreamTest, TagEncodingSplitsPhaseAndCall) {
  uint64_t tag = kgym_make_tag(KGYM_PHASE_DETECT_GRAD, 0xfffffffeu);
  EXPECT_EQ(tag, (uint64_t{4} << 32) | 0xfffffffeu);
  EXPECT_EQ(kgym_tag_phase(tag), 4u);
  EXPECT_EQ(kgym_tag_call(tag), 0xfffffffeu);
}

TEST(RecordStreamTest, HeaderOnlyStreamIsEmpty) {
  RecordStreamWriter w;
  RecordStream rs;
  ASSERT_TRUE(ParseRecordStream(w.bytes(), {}, &rs).ok());
  EXPECT_TRUE(rs.kernels.empty());
  EXPECT_EQ(rs.bytes_consumed, sizeof(KgymStreamHeader));
}

TEST(RecordStreamTest, RejectsBadMagicAndVersion) {
  std::string bytes = SampleStream();
  RecordStream rs;
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  Status s = ParseRecordStream(bad_magic, {}, &rs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("offset 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("magic"), std::string::npos);

  std::string bad_version = bytes;
  uint32_t v = 99;
  std::memcpy(&bad_version[8], &v, 4);
  s = ParseRecordStream(bad_version, {}, &rs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("version 99"), std::string::npos) << s.message();

  s = ParseRecordStream(bytes.substr(0, 10), {}, &rs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("shorter than the 32-byte header"), std::string::npos) << s.message();
}

TEST(RecordStreamTest, EveryTruncationIsAnErrorNamingTheRecordOffset) {
  const std::string bytes = SampleStream();
  // Record boundaries: a clean cut at one of them parses; any other cut must fail at that record's offset.
  std::vector<size_t> boundaries{sizeof(KgymStreamHeader)};
  for (size_t off = sizeof(KgymStreamHeader); off < bytes.size();) {
    KgymRecordHeader h;
    std::memcpy(&h, bytes.data() + off, sizeof(h));
    off += sizeof(h) + h.size;
    boundaries.push_back(off);
  }
  for (size_t cut = sizeof(KgymStreamHeader); cut < bytes.size(); ++cut) {
    RecordStream rs;
    Status s = ParseRecordStream(std::string_view(bytes).substr(0, cut), {}, &rs);
    bool at_boundary = std::find(boundaries.begin(), boundaries.end(), cut) != boundaries.end();
    if (at_boundary) {
      EXPECT_TRUE(s.ok()) << "cut " << cut << ": " << s.ToString();
      continue;
    }
    ASSERT_FALSE(s.ok()) << "cut " << cut;
    size_t record_start = *(std::upper_bound(boundaries.begin(), boundaries.end(), cut) - 1);
    EXPECT_NE(s.message().find("offset " + std::to_string(record_start) + ":"), std::string::npos)
        << "cut " << cut << ": " << s.message();
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();

    // Tolerant mode keeps every complete record and says where the tail starts.
    RecordStream tolerant;
    ASSERT_TRUE(ParseRecordStream(std::string_view(bytes).substr(0, cut), {true}, &tolerant).ok());
    EXPECT_EQ(tolerant.bytes_consumed, record_start);
  }
}

TEST(RecordStreamTest, RejectsMalformedRecords) {
  RecordStream rs;
  {
    RecordStreamWriter w;
    w.AddRaw(42, "abcd");
    Status s = ParseRecordStream(w.bytes(), {}, &rs);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("unknown record type 42"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("offset 32"), std::string::npos) << s.message();
  }
  {
    RecordStreamWriter w;
    w.AddRaw(KGYM_REC_KERNEL, std::string(20, '\0'));  // shorter than the 72-byte layout
    Status s = ParseRecordStream(w.bytes(), {}, &rs);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("shorter than its 72-byte layout"), std::string::npos) << s.message();
  }
  {
    KgymKernelRecord r;
    std::memset(&r, 0, sizeof(r));
    r.start_ns = 10;
    r.end_ns = 20;
    r.name_len = 1000;  // claims more name than the record holds
    RecordStreamWriter w;
    w.AddRaw(KGYM_REC_KERNEL, std::string(reinterpret_cast<const char*>(&r), sizeof(r)) + "abc");
    Status s = ParseRecordStream(w.bytes(), {}, &rs);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("name length 1000"), std::string::npos) << s.message();
  }
  {
    RecordStreamWriter w;
    w.AddKernel(Kernel("k", 500, 400, 1));
    Status s = ParseRecordStream(w.bytes(), {}, &rs);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("before it starts"), std::string::npos) << s.message();
  }
  {
    RecordStreamWriter w;
    KgymRecordHeader h{KGYM_REC_KERNEL, 0, KGYM_MAX_RECORD_SIZE + 1};
    std::string bytes = w.bytes() + std::string(reinterpret_cast<const char*>(&h), sizeof(h));
    Status s = ParseRecordStream(bytes, {true}, &rs);  // an absurd size is corrupt even in tolerant mode
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("exceeds the 1 MiB limit"), std::string::npos) << s.message();
  }
}

TEST(RecordStreamTest, AcceptsLongerPayloadsFromALaterMinorVersion) {
  KernelExec k = Kernel("kern", 10, 30, 5);
  RecordStreamWriter w;
  w.AddKernel(k);
  std::string bytes = w.bytes();
  // Grow the payload by 8 bytes after the name, as a writer appending a field would.
  KgymRecordHeader h;
  std::memcpy(&h, bytes.data() + 32, sizeof(h));
  h.size += 8;
  std::memcpy(bytes.data() + 32, &h, sizeof(h));
  bytes += std::string(8, '\x7f');
  RecordStream rs;
  ASSERT_TRUE(ParseRecordStream(bytes, {}, &rs).ok());
  ASSERT_EQ(rs.kernels.size(), 1u);
  EXPECT_EQ(rs.kernels[0].name, "kern");
}

TEST(RecordStreamTest, RandomGarbageNeverCrashes) {
  std::mt19937_64 rng(12345);
  const std::string good = SampleStream();
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = good;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) {
      size_t pos = sizeof(KgymStreamHeader) + rng() % (bytes.size() - sizeof(KgymStreamHeader));
      bytes[pos] = static_cast<char>(rng());
    }
    if (trial % 3 == 0) bytes.resize(sizeof(KgymStreamHeader) + rng() % (bytes.size() - sizeof(KgymStreamHeader)));
    RecordStream rs;
    Status s = ParseRecordStream(bytes, {trial % 2 == 0}, &rs);
    if (!s.ok()) {
      EXPECT_NE(s.message().find("byte offset"), std::string::npos) << s.message();
    }
    EXPECT_LE(rs.bytes_consumed, bytes.size());
  }
  // Pure noise after a valid header.
  for (int trial = 0; trial < 500; ++trial) {
    std::string bytes = RecordStreamWriter().bytes();
    size_t n = rng() % 400;
    for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>(rng()));
    RecordStream rs;
    (void)ParseRecordStream(bytes, {}, &rs);
  }
}

TEST(RecordStreamTest, ReadsFilesAndReportsMissingOnes) {
  std::string path = ::testing::TempDir() + "/kgym_record_stream_test.kgym";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::string bytes = SampleStream();
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  RecordStream rs;
  ASSERT_TRUE(ReadRecordStreamFile(path, {}, &rs).ok());
  EXPECT_EQ(rs.kernels.size(), 1u);
  Status s = ReadRecordStreamFile(path + ".missing", {}, &rs);
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kgym::gpu
