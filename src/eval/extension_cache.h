// ExtensionCache: the build cache of CUDA-backend candidates
// (torch.utils.cpp_extension.load_inline), kept by the supervisor between evaluations so that the
// same source is not compiled again (30-90 s of nvcc).
//
// One directory per candidate source hash under a root the supervisor owns (0700): only
// byte-identical code shares a directory, so one candidate cannot plant a build that another's
// source would load. The directory is handed to the candidate worker as its TORCH_EXTENSIONS_DIR
// (the sandbox bind-mounts it into the private /tmp); the reference worker never sees it. The cache
// is bounded: at each Prepare() directories over a size cap are removed (this source's own
// included: a run that wrote junk into it does not keep it), then the oldest (by the time they were
// last used) beyond `keep`. The cap is checked between evaluations, not during one: while it runs,
// a candidate can write into its directory beyond the cap (each file is bounded by RLIMIT_FSIZE).
//
// Also here: CompilerErrorLines, which finds the first compiler error lines in a build log, for the
// outcome detail of a candidate whose extension failed to build.
//
// Thread-safe: Prepare() may be called from many evaluations at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace kgym {

class ExtensionCache {
 public:
  struct Entry {
    std::string dir;  // absolute path of this source's directory (exists after Prepare)
    std::string key;  // its hex name
    // The directory already held a built extension (a .so) before this evaluation.
    bool hit = false;
  };

  // `root` "" = <$TMPDIR or /tmp>/kgym-ext-cache.
  explicit ExtensionCache(std::string root = "", int keep = 64, uint64_t max_dir_bytes = uint64_t{512} << 20);

  // Creates the root (0700) and this source's directory, marks it used now, evicts beyond the
  // bounds (never the directory returned). Fails when the root cannot be made or is not a directory
  // this process owns.
  Status Prepare(const std::string& source, Entry* out);

  const std::string& root() const { return root_; }

 private:
  void Evict(const std::string& keep_name);
  std::string root_;
  int keep_;
  uint64_t max_dir_bytes_;
};

// 32 hex digits of the XXH3-128 hash of `s`: this cache's directory names, and the evaluator's reference keys.
std::string ContentKey(std::string_view s);

// The first `max_errors` compiler error lines of a build log (nvcc "x.cu(12): error: ...",
// gcc/clang "x.cpp:5:3: error: ...", "fatal error:", ptxas/linker "error   :"), each followed by
// the source line the compiler quotes under it when it does; directories are stripped from file
// names. "" when the log holds none.
std::string CompilerErrorLines(const std::string& log, int max_errors = 5);

}  // namespace kgym
