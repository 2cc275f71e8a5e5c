#include "core/runtime_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace kgym {
namespace {

namespace fs = std::filesystem;

// Sets (or unsets, with nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(RuntimeFiles, TheInterpreterIsConfiguredThenKgymPythonThenDebians) {
  ScopedEnv env("KGYM_PYTHON", "/opt/py/bin/python3");
  EXPECT_EQ(PythonInterpreter("/my/python"), "/my/python");
  EXPECT_EQ(PythonInterpreter(), "/opt/py/bin/python3");
  ScopedEnv unset("KGYM_PYTHON", nullptr);
  // Debian's interpreter, where python3-torch is (setup.sh installs it), before any python3 on PATH.
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3 here";
  EXPECT_EQ(PythonInterpreter(), "/usr/bin/python3");
}

TEST(RuntimeFiles, ATestBinaryInItsBuildTreeRunsTheSourceTreesPackages) {
  ScopedEnv h("KGYM_HARNESS_PATH", nullptr), t("KGYM_TRAIN_PATH", nullptr);
  const char* src = std::getenv("KGYM_SOURCE_DIR");  // set by CTest (CMakeLists.txt: kgym_test)
  if (!src) GTEST_SKIP() << "run through ctest";
  const std::string python = fs::weakly_canonical(fs::path(src) / "python").string();
  EXPECT_EQ(PythonPackageDir("kgym_harness"), python);
  EXPECT_EQ(PythonPackageDir("kgym_train"), python);
  EXPECT_EQ(PythonPackageDir("no_such_package"), "");
  EXPECT_NE(RuntimeSearchDescription("kgym_harness").find(python), std::string::npos);
}

TEST(RuntimeFiles, AnEnvironmentVariableNamesThePackagesFolder) {
  const fs::path dir = fs::temp_directory_path() / ("kgym_rt_" + std::to_string(::getpid()));
  fs::create_directories(dir / "kgym_train");
  ScopedEnv t("KGYM_TRAIN_PATH", dir.c_str());
  EXPECT_EQ(PythonPackageDir("kgym_train"), dir.string());
  ScopedEnv h("KGYM_HARNESS_PATH", dir.c_str());
  EXPECT_EQ(PythonPackageDir("kgym_harness"), "");  // named, but it does not hold the package: not found
  EXPECT_NE(RuntimeSearchDescription("kgym_harness").find("$KGYM_HARNESS_PATH = " + dir.string()), std::string::npos);
  ScopedEnv p("KGYM_TRAIN_PKGS", "/somewhere/pkgs");
  EXPECT_EQ(LearnerPackagesDir(), "/somewhere/pkgs");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kgym
