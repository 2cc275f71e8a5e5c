#include "gpu/kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>

namespace kgym::gpu {

std::string Demangle(std::string_view raw) {
  if (raw.size() < 2 || raw[0] != '_' || raw[1] != 'Z') return std::string(raw);
  std::string copy(raw);
  int status = 0;
  char* out = abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return copy;
  }
  std::string result(out);
  std::free(out);
  return result;
}

namespace {

bool IsOpen(char c) { return c == '(' || c == '<' || c == '[' || c == '{'; }
bool IsClose(char c) { return c == ')' || c == '>' || c == ']' || c == '}'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::string QualifiedKernelName(std::string_view demangled) {
  std::string_view s = Trim(demangled);
  // Drop trailing qualifiers of a member signature ("... ) const").
  for (std::string_view q : {std::string_view(" const"), std::string_view(" volatile")}) {
    while (s.size() > q.size() && s.substr(s.size() - q.size()) == q) s.remove_suffix(q.size());
  }
  // Drop the trailing parameter list: walk back from the final ')' to its matching '('.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (IsClose(s[i])) {
        ++depth;
      } else if (IsOpen(s[i])) {
        if (--depth == 0) {
          if (s[i] == '(' && i > 0) s = s.substr(0, i);
          break;
        }
      }
    }
  }
  // Drop a leading return type: everything up to the last space outside brackets.
  int depth = 0;
  size_t cut = std::string_view::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if (IsOpen(s[i])) {
      ++depth;
    } else if (IsClose(s[i])) {
      --depth;
    } else if (s[i] == ' ' && depth == 0) {
      cut = i;
    }
  }
  if (cut != std::string_view::npos) s = s.substr(cut + 1);
  return std::string(Trim(s));
}

std::string UntemplatedKernelName(std::string_view qualified) {
  std::string out;
  int depth = 0;
  for (char c : qualified) {
    if (c == '<') {
      ++depth;
    } else if (c == '>') {
      if (depth > 0) --depth;
    } else if (depth == 0) {
      out.push_back(c);
    }
  }
  return out;
}

std::string StripLegacyTritonSuffix(std::string_view raw) {
  size_t us = raw.rfind('_');
  if (us == std::string_view::npos || us == 0 || us + 1 >= raw.size()) return "";
  std::string_view suffix = raw.substr(us + 1);
  if (suffix[0] < '0' || suffix[0] > '9') return "";
  for (char c : suffix) {
    bool ok = (c >= '0' && c <= '9') || c == 'd' || c == 'c' || c == 'e';
    if (!ok) return "";
  }
  return std::string(raw.substr(0, us));
}

void CandidateKernelNames::AddTritonKernel(std::string_view name) {
  std::string_view n = Trim(name);
  // Launch-hook strings look like "<fn> grid=... module=..."; the name is the first token.
  size_t sp = n.find(' ');
  if (sp != std::string_view::npos) n = n.substr(0, sp);
  if (!n.empty()) triton_.emplace(n);
}

void CandidateKernelNames::AddCudaSymbol(std::string_view symbol) {
  std::string_view s = Trim(symbol);
  if (s.empty()) return;
  std::string demangled = Demangle(s);
  cuda_exact_.emplace(s);
  cuda_exact_.insert(demangled);
  std::string qualified = QualifiedKernelName(demangled);
  if (!qualified.empty()) {
    cuda_untemplated_.insert(UntemplatedKernelName(qualified));
    cuda_qualified_.insert(std::move(qualified));
  }
}

bool CandidateKernelNames::Matches(std::string_view raw) const {
  if (triton_.count(raw) > 0) return true;
  if (!triton_.empty()) {
    std::string base = StripLegacyTritonSuffix(raw);
    if (!base.empty() && triton_.count(base) > 0) return true;
  }
  if (cuda_exact_.empty()) return false;
  if (cuda_exact_.count(raw) > 0) return true;
  std::string demangled = Demangle(raw);
  if (cuda_exact_.count(demangled) > 0) return true;
  std::string qualified = QualifiedKernelName(demangled);
  if (qualified.empty()) return false;
  if (cuda_qualified_.count(qualified) > 0) return true;
  return cuda_untemplated_.count(UntemplatedKernelName(qualified)) > 0;
}

}  // namespace kgym::gpu
