#include "eval/extension_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace kgym {
namespace {
namespace fs = std::filesystem;

struct TempRoot {
  fs::path dir;
  TempRoot() {
    char t[] = "/tmp/kgym-ext-cache-test-XXXXXX";
    dir = ::mkdtemp(t);
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

void Write(const fs::path& p, size_t bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << std::string(bytes, 'x');
}

TEST(ExtensionCache, OneDirectoryPerSourceAndHitOnlyWithABuild) {
  TempRoot t;
  ExtensionCache cache((t.dir / "cache").string());
  ExtensionCache::Entry a, a2, b;
  ASSERT_TRUE(cache.Prepare("source A", &a).ok());
  EXPECT_FALSE(a.hit);
  EXPECT_TRUE(fs::is_directory(a.dir));
  struct stat st {};
  ASSERT_EQ(::stat(cache.root().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_TRUE(cache.Prepare("source B", &b).ok());
  EXPECT_NE(a.dir, b.dir);
  ASSERT_TRUE(cache.Prepare("source A", &a2).ok());
  EXPECT_EQ(a.dir, a2.dir);
  EXPECT_FALSE(a2.hit);  // the directory exists but holds no build
  Write(fs::path(a.dir) / "ext_name" / "ext_name.so", 10);
  ASSERT_TRUE(cache.Prepare("source A", &a2).ok());
  EXPECT_TRUE(a2.hit);
  ASSERT_TRUE(cache.Prepare("source B", &b).ok());
  EXPECT_FALSE(b.hit);
}

TEST(ExtensionCache, KeepsTheNewestAndDropsOversizedDirectories) {
  TempRoot t;
  ExtensionCache cache((t.dir / "cache").string(), /*keep=*/3, /*max_dir_bytes=*/1000);
  std::vector<ExtensionCache::Entry> e(5);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(cache.Prepare("src " + std::to_string(i), &e[i]).ok());
    // Distinct last-used times even on coarse-grained file systems.
    auto when = fs::file_time_type::clock::now() - std::chrono::hours(10 - i);
    fs::last_write_time(e[i].dir, when);
  }
  // The last Prepare evicted down to 3 (the newest two before it and itself).
  EXPECT_FALSE(fs::exists(e[0].dir));
  EXPECT_FALSE(fs::exists(e[1].dir));
  EXPECT_TRUE(fs::exists(e[2].dir) && fs::exists(e[3].dir) && fs::exists(e[4].dir));
  Write(fs::path(e[3].dir) / "junk" / "big.bin", 5000);
  ExtensionCache::Entry again;
  ASSERT_TRUE(cache.Prepare("src 4", &again).ok());
  EXPECT_FALSE(fs::exists(e[3].dir));  // over the cap: removed
  // A source whose own directory outgrew the cap starts afresh (a miss, not the junk).
  Write(fs::path(e[4].dir) / "x" / "x.so", 5000);
  ASSERT_TRUE(cache.Prepare("src 4", &again).ok());
  EXPECT_FALSE(again.hit);
  EXPECT_TRUE(fs::is_directory(again.dir));
  EXPECT_TRUE(fs::is_empty(again.dir));
}

TEST(ExtensionCache, RefusesARootItDoesNotOwnOrThatIsALink) {
  TempRoot t;
  fs::create_directories(t.dir / "real");
  fs::create_directory_symlink(t.dir / "real", t.dir / "link");
  ExtensionCache cache((t.dir / "link").string());
  ExtensionCache::Entry e;
  EXPECT_FALSE(cache.Prepare("x", &e).ok());
}

TEST(CompilerErrorLines, GccErrorsWithTheQuotedLine) {
  std::string log =
      "Error building extension 'bad_ext': [1/2] c++ -MMD -MF main.o.d "
      "-DTORCH_EXTENSION_NAME=bad_ext -fPIC "
      "-std=c++14 -c /tmp/kgym-1/torch_extensions/bad_ext/main.cpp -o main.o \n"
      "FAILED: main.o \n"
      "/tmp/kgym-1/torch_extensions/bad_ext/main.cpp: In function 'at::Tensor relu3(at::Tensor)':\n"
      "/tmp/kgym-1/torch_extensions/bad_ext/main.cpp:4:61: error: expected ';' before '}' token\n"
      "    4 | torch::Tensor relu3(torch::Tensor x) { return torch::relu(x) }\n"
      "      |                                                             ^~\n"
      "ninja: build stopped: subcommand failed.\n";
  EXPECT_EQ(CompilerErrorLines(log),
            "main.cpp:4:61: error: expected ';' before '}' token\n"
            "  4 | torch::Tensor relu3(torch::Tensor x) { return torch::relu(x) }");
}

TEST(CompilerErrorLines, NvccErrorsAndTheLimit) {
  std::string log =
      "[1/3] /usr/local/cuda/bin/nvcc -c /tmp/e/x/cuda.cu -o cuda.cuda.o\n"
      "FAILED: cuda.cuda.o\n"
      "/tmp/e/x/cuda.cu(12): error: identifier \"foo\" is undefined\n"
      "      foo(a);\n"
      "      ^\n"
      "\n"
      "/tmp/e/x/cuda.cu(13): error: expected a \";\"\n"
      "\n"
      "/tmp/e/x/cuda.cu(14): error: third\n"
      "2 errors detected in the compilation of \"/tmp/e/x/cuda.cu\".\n";
  EXPECT_EQ(CompilerErrorLines(log, 2),
            "cuda.cu(12): error: identifier \"foo\" is undefined\n  foo(a);\ncuda.cu(13): error: "
            "expected a \";\"");
  EXPECT_EQ(CompilerErrorLines("RuntimeError: Error building extension 'x'\nninja: build stopped\n"), "");
  EXPECT_EQ(CompilerErrorLines("nvcc fatal   : Unsupported gpu architecture 'compute_100'\n"),
            "nvcc fatal   : Unsupported gpu architecture 'compute_100'");
  EXPECT_EQ(CompilerErrorLines("/usr/bin/ld: cannot find -lfoo\ncollect2: error: ld returned 1 exit status\n"),
            "collect2: error: ld returned 1 exit status");
}

}  // namespace
}  // namespace kgym
