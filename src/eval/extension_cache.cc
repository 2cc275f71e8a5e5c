#include "eval/extension_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <regex>
#include <sstream>
#include <vector>

namespace kgym {
namespace fs = std::filesystem;

namespace {

std::mutex& EvictMutex() {
  static std::mutex m;
  return m;
}

bool IsKeyName(const std::string& n) {
  return n.size() == 32 && std::all_of(n.begin(), n.end(), [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

// Walks `dir` without following symlinks (the candidate wrote what is in it); stops early once
// `limit` is passed.
uint64_t TreeBytes(const fs::path& dir, uint64_t limit, bool* has_so) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    auto st = it->symlink_status(ec);
    if (ec) break;
    if (!fs::is_regular_file(st)) continue;
    total += it->file_size(ec);
    if (has_so && it->path().extension() == ".so") *has_so = true;
    if (total > limit) break;
  }
  return total;
}

}  // namespace

ExtensionCache::ExtensionCache(std::string root, int keep, uint64_t max_dir_bytes)
    : root_(std::move(root)), keep_(std::max(1, keep)), max_dir_bytes_(max_dir_bytes) {
  if (root_.empty()) {
    const char* t = std::getenv("TMPDIR");
    root_ = std::string(t && *t ? t : "/tmp") + "/kgym-ext-cache";
  }
}

Status ExtensionCache::Prepare(const std::string& source, Entry* out) {
  if (::mkdir(root_.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::IOError("cannot create the extension cache " + root_ + ": " + std::strerror(errno));
  struct stat st {};
  // lstat: a symlink planted at the root's path (the default lives in a shared /tmp) is refused,
  // not followed.
  if (::lstat(root_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    return Status::IOError("the extension cache " + root_ + " is not a directory owned by this user");
  if ((st.st_mode & 077) != 0) ::chmod(root_.c_str(), 0700);
  out->key = ContentKey(source);
  out->dir = root_ + "/" + out->key;
  std::lock_guard<std::mutex> l(EvictMutex());
  bool has_so = false;
  if (::lstat(out->dir.c_str(), &st) == 0) {
    std::error_code ec;
    // What an earlier run of this source left that no build explains (too large, not a directory)
    // is dropped.
    if (!S_ISDIR(st.st_mode) || TreeBytes(out->dir, max_dir_bytes_, &has_so) > max_dir_bytes_) {
      fs::remove_all(out->dir, ec);
      has_so = false;
    }
  }
  if (::mkdir(out->dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::IOError("cannot create " + out->dir + ": " + std::strerror(errno));
  out->hit = has_so;
  ::utimensat(AT_FDCWD, out->dir.c_str(), nullptr,
              AT_SYMLINK_NOFOLLOW);  // last used: now (eviction order)
  Evict(out->key);
  return Status::Ok();
}

void ExtensionCache::Evict(const std::string& keep_name) {
  struct Dir {
    fs::path path;
    fs::file_time_type used;
  };
  std::vector<Dir> dirs;
  std::error_code ec;
  for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name == keep_name || !IsKeyName(name)) continue;
    auto st = it->symlink_status(ec);
    if (ec || !fs::is_directory(st)) continue;
    if (TreeBytes(it->path(), max_dir_bytes_, nullptr) > max_dir_bytes_) {  // no build is that large: junk
      fs::remove_all(it->path(), ec);
      continue;
    }
    dirs.push_back({it->path(), fs::last_write_time(it->path(), ec)});
  }
  if (static_cast<int>(dirs.size()) < keep_) return;
  std::sort(dirs.begin(), dirs.end(), [](const Dir& a, const Dir& b) { return a.used > b.used; });
  for (size_t i = keep_ - 1; i < dirs.size(); ++i) fs::remove_all(dirs[i].path, ec);  // remove_all never follows links
}

std::string ContentKey(std::string_view s) {
  XXH128_hash_t h = XXH3_128bits(s.data(), s.size());
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::string CompilerErrorLines(const std::string& log, int max_errors) {
  static const std::regex kError(R"re((^|[\s:)])((fatal|catastrophic) )?error\s*:|nvcc fatal\s*:)re");
  static const std::regex kGccQuote(R"re(^\s*\d+\s+\|)re");
  static const std::regex kDirs(R"re((^|[\s"'(`])/(?:[^\s:()"'`/]+/)+)re");
  std::vector<std::string> lines;
  {
    std::istringstream in(log);
    for (std::string l; std::getline(in, l);) {
      if (!l.empty() && l.back() == '\r') l.pop_back();
      lines.push_back(std::move(l));
    }
  }
  auto tidy = [&](std::string s) {
    s = std::regex_replace(s, kDirs, "$1");
    size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    s = a == std::string::npos ? "" : s.substr(a, b - a + 1);
    if (s.size() > 300) s = s.substr(0, 297) + "...";
    return s;
  };
  std::string out;
  int found = 0;
  for (size_t i = 0; i < lines.size() && found < max_errors; ++i) {
    const std::string& l = lines[i];
    // Compiler command lines (ninja -v echoes them) mention no "error:", but keep them out whatever
    // their flags.
    if (l.size() > 400 || l.rfind("FAILED:", 0) == 0 || !std::regex_search(l, kError)) continue;
    out += (out.empty() ? "" : "\n") + tidy(l);
    ++found;
    if (i + 1 < lines.size()) {  // the source line the compiler quotes under the error, if it does
      const std::string& q = lines[i + 1];
      bool gcc = std::regex_search(q, kGccQuote);
      bool nvcc = !q.empty() && (q[0] == ' ' || q[0] == '\t') && q.find_first_not_of(" \t^~") != std::string::npos &&
                  !std::regex_search(q, kError);
      if (gcc || nvcc) {
        out += "\n  " + tidy(q);
        ++i;
      }
    }
  }
  return out;
}

}  // namespace kgym
