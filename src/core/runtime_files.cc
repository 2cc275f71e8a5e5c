#include "core/runtime_files.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

extern char** environ;

namespace kgym {

namespace fs = std::filesystem;

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "";
}

fs::path ExeDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

bool Within(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const std::string a = fs::weakly_canonical(inner, ec).string(), b = fs::weakly_canonical(outer, ec).string();
  return !b.empty() && a.size() > b.size() && a.compare(0, b.size(), b) == 0 && a[b.size()] == '/';
}

// Whether `python` (a path, or a name looked up on PATH) has torch: importlib finds it, without importing it.
bool HasTorch(const std::string& python) {
  const char* argv[] = {python.c_str(), "-c",
                        "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)", nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, python.c_str(), &fa, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The roots a moved or installed binary's files hang from, nearest layout first.
std::vector<fs::path> Roots() {
  const fs::path exe = ExeDir();
  if (exe.empty()) return {};
  return {exe / "..", exe / ".." / "..", exe};
}

// A binary that still sits in its build folder, with that build's source tree present.
bool InBuildTree() {
  static const bool in =
      Within(ExeDir(), KGYM_BUILD_BINARY_DIR) && fs::exists(fs::path(KGYM_BUILD_SOURCE_DIR) / "python");
  return in;
}

std::string Canonical(const fs::path& p) {
  std::error_code ec;
  return fs::weakly_canonical(p, ec).string();
}

const char* PackageEnv(const std::string& package) {
  return package == "kgym_train" ? "KGYM_TRAIN_PATH" : "KGYM_HARNESS_PATH";
}

std::vector<fs::path> PackageCandidates() {
  std::vector<fs::path> out;
  if (InBuildTree()) out.push_back(fs::path(KGYM_BUILD_SOURCE_DIR) / "python");
  for (const auto& root : Roots()) out.push_back(root / "share" / "kgym" / "python");
  return out;
}

}  // namespace

std::string PythonInterpreter(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (std::string p = Env("KGYM_PYTHON"); !p.empty()) return p;
  static const std::string found = [] {
    const bool debian = ::access("/usr/bin/python3", X_OK) == 0;
    if (debian && HasTorch("/usr/bin/python3")) return std::string("/usr/bin/python3");
    if (HasTorch("python3")) return std::string("python3");
    return std::string(debian ? "/usr/bin/python3" : "python3");
  }();
  return found;
}

std::string PythonPackageDir(const std::string& package) {
  std::error_code ec;
  if (std::string p = Env(PackageEnv(package)); !p.empty()) return fs::exists(fs::path(p) / package, ec) ? p : "";
  // The bench scripts name the source tree's python/ once, in $KGYM_HARNESS_PATH, for both packages.
  if (std::string p = Env("KGYM_HARNESS_PATH"); !p.empty() && fs::exists(fs::path(p) / package / "__init__.py", ec))
    return p;
  for (const auto& cand : PackageCandidates())
    if (fs::exists(cand / package / "__init__.py", ec)) return Canonical(cand);
  return "";
}

std::string LearnerPackagesDir() {
  if (std::string p = Env("KGYM_TRAIN_PKGS"); !p.empty()) return p;
  std::vector<fs::path> cands;
  if (InBuildTree()) cands.push_back(fs::path(KGYM_BUILD_BINARY_DIR) / "train-pkgs");
  for (const auto& root : Roots()) {
    cands.push_back(root / "train-pkgs");
    cands.push_back(root / "share" / "kgym" / "train-pkgs");
  }
  std::error_code ec;
  for (const auto& c : cands)
    if (fs::is_directory(c, ec)) return Canonical(c);
  return "";
}

std::string RuntimeSearchDescription(const std::string& package) {
  const std::string var = PackageEnv(package);
  if (!Env(var.c_str()).empty()) return "$" + var + " = " + Env(var.c_str());
  std::string where = "$" + var + " (unset)";
  for (const auto& c : PackageCandidates()) where += ", " + Canonical(c);
  return where;
}

}  // namespace kgym
