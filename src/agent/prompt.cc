#include "agent/prompt.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/builtin_templates.h"

namespace kgym::agent {

namespace fs = std::filesystem;

namespace {
Status ReadWhole(const fs::path& p, std::string* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return Status::NotFound("cannot read prompt template " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return Status::Ok();
}

}  // namespace

Status PromptTemplates::Load(const std::string& dir, PromptTemplates* out) {
  if (dir.empty()) {
    *out = {kBuiltinFirstTurn, kBuiltinExampleRefCode, kBuiltinExampleKernelCode, kBuiltinRefinement};
    return Status::Ok();
  }
  fs::path d(dir);
  PromptTemplates t;
  Status s = ReadWhole(d / "first_turn.txt", &t.first_turn);
  if (s.ok()) s = ReadWhole(d / "example_ref_code.py", &t.example_ref_code);
  if (s.ok()) s = ReadWhole(d / "example_kernel_code.py", &t.example_kernel_code);
  if (s.ok()) s = ReadWhole(d / "refinement.txt", &t.refinement);
  if (!s.ok()) return s;
  *out = std::move(t);
  return Status::Ok();
}

std::string RenderTemplate(const std::string& tmpl, const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(tmpl.size());
  size_t i = 0;
  while (i < tmpl.size()) {
    if (tmpl[i] == '{') {
      size_t close = tmpl.find('}', i + 1);
      if (close != std::string::npos) {
        auto it = vars.find(tmpl.substr(i + 1, close - i - 1));
        if (it != vars.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += tmpl[i++];
  }
  return out;
}

std::string RenderFirstTurn(const PromptTemplates& t, const std::string& ref_code) {
  return RenderTemplate(t.first_turn, {{"example_ref_code", t.example_ref_code},
                                       {"example_kernel_code", t.example_kernel_code},
                                       {"ref_code", ref_code}});
}

std::string RenderRefinement(const PromptTemplates& t, const std::string& feedback) {
  return RenderTemplate(t.refinement, {{"feedback", feedback}});
}

}  // namespace kgym::agent
