// Loads the real libkgym_cupti.so (built only where CUPTI exists) the way the harness does, with dlopen,
// and checks the contract that holds with or without a GPU: init either succeeds or leaves ERROR records
// naming the failed CUPTI call, the stream always parses, and nothing crashes.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gpu/cupti_format.h"
#include "gpu/record_stream.h"

namespace kgym::gpu {
namespace {

TEST(CuptiLoadTest, InitSucceedsOrRecordsWhyNotAndTheStreamParses) {
  void* lib = dlopen(KGYM_CUPTI_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto init_output = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "kgym_cupti_init_output"));
  auto begin = reinterpret_cast<int (*)(uint64_t)>(dlsym(lib, "kgym_cupti_begin"));
  auto end = reinterpret_cast<int (*)()>(dlsym(lib, "kgym_cupti_end"));
  auto flush = reinterpret_cast<int64_t (*)()>(dlsym(lib, "kgym_cupti_flush"));
  ASSERT_NE(dlsym(lib, "InitializeInjection"), nullptr);
  ASSERT_NE(dlsym(lib, "kgym_cupti_init"), nullptr);
  ASSERT_NE(dlsym(lib, "kgym_cupti_gpu_timestamp"), nullptr);
  ASSERT_TRUE(init_output && begin && end && flush);

  std::string path = ::testing::TempDir() + "/kgym_cupti_load_test_" + std::to_string(getpid()) + ".kgym";
  int rc = init_output(path.c_str());
  EXPECT_EQ(init_output(path.c_str()), rc) << "init is idempotent";
  if (rc == 0) {
    EXPECT_EQ(begin(kgym_make_tag(KGYM_PHASE_TIMING, 0)), 0);
    EXPECT_EQ(end(), 0);
    EXPECT_GE(flush(), 1);
  } else {
    EXPECT_LT(begin(1), 0) << "calls after a failed init fail cleanly";
    EXPECT_LT(end(), 0);
    EXPECT_LT(flush(), 0);
  }

  RecordStream rs;
  Status s = ReadRecordStreamFile(path, ParseOptions{}, &rs);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rs.pid, static_cast<uint32_t>(getpid()));
  if (rc == 0) {
    EXPECT_EQ(rs.markers.size(), 2u);
    EXPECT_EQ(rs.last_flush_sequence, 1u);
  } else {
    ASSERT_FALSE(rs.errors.empty()) << "a failed init must say which CUPTI call failed";
    EXPECT_NE(rs.errors[0].message.find("cupti"), std::string::npos) << rs.errors[0].message;
  }
  std::remove(path.c_str());
  // Deliberately not dlclose()d: CUPTI may hold threads or callbacks into the library.
}

// Each case needs a library instance that has not been initialised yet (init is once per process), so each
// loads its own copy of the file: dlopen of a different path gives separate globals under RTLD_LOCAL.
int InitFreshCopy(const std::string& spec, int copy) {
  std::string copy_path =
      ::testing::TempDir() + "/kgym_cupti_copy_" + std::to_string(getpid()) + "_" + std::to_string(copy) + ".so";
  std::ifstream src(KGYM_CUPTI_LIBRARY_PATH, std::ios::binary);
  std::ofstream dst(copy_path, std::ios::binary);
  dst << src.rdbuf();
  dst.close();
  void* lib = dlopen(copy_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::remove(copy_path.c_str());
  if (lib == nullptr) {
    ADD_FAILURE() << dlerror();
    return 1;
  }
  auto init_output = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "kgym_cupti_init_output"));
  auto shutdown = reinterpret_cast<int (*)()>(dlsym(lib, "kgym_cupti_shutdown"));
  int rc = init_output(spec.c_str());
  EXPECT_EQ(shutdown(), 0);
  return rc;
}

TEST(CuptiLoadTest, RejectsUnusableOutputSpecsBeforeTouchingCupti) {
  EXPECT_EQ(InitFreshCopy("", 1), -1);
  EXPECT_EQ(InitFreshCopy("fd:", 2), -1);
  EXPECT_EQ(InitFreshCopy("fd:12x", 3), -1);
  EXPECT_EQ(InitFreshCopy("fd:987654", 4), -2);  // a descriptor that is not open
  EXPECT_EQ(InitFreshCopy("/nonexistent-dir/kgym/out.kgym", 5), -2);
}

}  // namespace
}  // namespace kgym::gpu
