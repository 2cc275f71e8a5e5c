#include "sandbox/policy.h"

#include <cstdlib>
#include <random>

namespace kgym {

nlohmann::json BuildPolicy(const PolicyInputs& in) {
  nlohmann::json p;
  p["enabled"] = in.enabled;
  p["net"] = true;
  p["pidns"] = true;
  p["mountns"] = true;
  p["uid"] = 65534;
  std::random_device rd;
  p["scratch"] = "/tmp/kgym-" + std::to_string(rd()) + std::to_string(rd());
  p["scratch_mb"] = 4096;
  if (in.role == "candidate" && !in.extension_cache_dir.empty()) p["extension_cache"] = in.extension_cache_dir;
  std::vector<std::string> hide = in.hidden_paths;
  if (const char* home = std::getenv("HOME"); home && *home && std::string(home) != "/") hide.push_back(home);
  p["hide"] = hide;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  // CUDA reserves a large virtual address space, so on a GPU the address-space limit is only a backstop.
  double as = in.cuda ? std::max(in.memory_limit_gb, 64.0) : in.memory_limit_gb;
  p["rlimits"] = {{"as", static_cast<long long>(as * gib)},
                  {"nofile", 4096},
                  {"nproc", 4096},
                  // Tensors cross between processes as memfds, which RLIMIT_FSIZE caps: room for the largest
                  // tensor a task may hold (full-size GPU tasks have 6 GB inputs); the scratch tmpfs has its own cap.
                  {"fsize", static_cast<long long>(std::max(4.0 * gib, in.cuda ? 64.0 * gib : as))},
                  {"cpu", static_cast<long long>(in.timeout_s * 8 + 60)},
                  {"core", 0}};
  // OMP_WAIT_POLICY=PASSIVE: an OpenMP pool's threads sleep when a parallel region ends instead of spinning (~2 ms a
  // thread with libgomp's default), CPU time that would land "between calls" whenever the next call comes late and be
  // read as deferred work (eval/hack_rules.h). Reference and candidate run under the same policy.
  p["env"] = {{"CUDA_VISIBLE_DEVICES", in.cuda ? std::to_string(in.device_index) : std::string("")},
              {"OMP_NUM_THREADS", "4"},
              {"OMP_WAIT_POLICY", "PASSIVE"},
              {"PYTHONDONTWRITEBYTECODE", "1"}};
  // torch.compile in a candidate compiles in its own process: Inductor's default pool of compile workers would be
  // processes outliving the call, which a candidate's process may not leave behind (nor their CPU time unseen).
  if (in.role == "candidate") p["env"]["TORCHINDUCTOR_COMPILE_THREADS"] = "1";
  return p;
}

std::vector<std::string> MissingProtections(const nlohmann::json& p) {
  std::vector<std::string> missing;
  auto why = [&](const char* key) {
    for (const char* k : {"namespaces_error", "user_namespace_error", "filesystem_error", "setuid_error"})
      if (p.contains(k)) return std::string(" (") + p[k].get<std::string>() + ")";
    (void)key;
    return std::string();
  };
  if (!p.value("network_namespace", false)) missing.push_back("network namespace" + why("network_namespace"));
  if (!p.value("pid_namespace", false)) missing.push_back("PID namespace" + why("pid_namespace"));
  if (!p.value("mount_namespace", false) || !p.value("private_tmp", false))
    missing.push_back("private filesystem" + why("mount_namespace"));
  if (!p.value("env_scrubbed", false)) missing.push_back("scrubbed environment");
  if (!p.contains("uid") && !p.value("user_namespace", false)) missing.push_back("unprivileged user" + why("uid"));
  return missing;
}

}  // namespace kgym
