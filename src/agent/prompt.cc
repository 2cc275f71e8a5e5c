#include "agent/prompt.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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

bool HasTemplates(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "first_turn.txt", ec) && fs::exists(dir / "refinement.txt", ec);
}
}  // namespace

std::string FindTemplateDir() {
  if (const char* env = std::getenv("KGYM_AGENT_TEMPLATES"); env && *env && HasTemplates(env)) return env;
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    buf[n] = 0;
    fs::path exe_dir = fs::path(buf).parent_path();
    for (const fs::path& cand : {exe_dir / "../share/kgym/agent_templates", exe_dir / "agent_templates"})
      if (HasTemplates(cand)) return fs::weakly_canonical(cand).string();
  }
#ifdef KGYM_AGENT_TEMPLATE_DIR
  if (HasTemplates(KGYM_AGENT_TEMPLATE_DIR)) return KGYM_AGENT_TEMPLATE_DIR;
#endif
  return "";
}

Status PromptTemplates::Load(const std::string& dir_in, PromptTemplates* out) {
  std::string dir = dir_in.empty() ? FindTemplateDir() : dir_in;
  if (dir.empty())
    return Status::NotFound("agent prompt templates not found; set KGYM_AGENT_TEMPLATES to src/agent/templates");
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
