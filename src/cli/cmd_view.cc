// `kgym view RUN_DIR...`: the dashboard's run pages for run folders (kgym agent / grade / train output), served
// on loopback: Fast@p per turn and level, best of history, hacking, the per-task leaderboard, the trajectory
// viewer and training curves. The folders are read on every request, so a run still being written updates.
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/command_registry.h"
#include "cli/shared_flags.h"
#include "server/dashboard/dashboard.h"
#include "server/listen_socket.h"

namespace {

volatile std::sig_atomic_t g_view_stop = 0;
void OnViewStop(int sig) { g_view_stop = sig; }

struct ViewFlags {
  std::vector<std::string> runs;
  std::string host = "127.0.0.1";
  int port = 10908;
};

int RunView(const ViewFlags& f) {
  kgym::dashboard::RunCatalog catalog(f.runs);
  const size_t found = catalog.List().size();
  if (found == 0) {
    std::fprintf(stderr,
                 "kgym view: no run folder in %s (a run folder holds trajectories.jsonl, metrics.jsonl, "
                 "rollouts/step_N or val/step_N)\n",
                 f.runs.front().c_str());
    return 2;
  }
  httplib::Server svr;
  svr.new_task_queue = [] { return new httplib::ThreadPool(8); };
  kgym::dashboard::RegisterPageRoutes(svr, {"runs"});
  kgym::dashboard::RegisterRunRoutes(svr, &catalog);
  svr.Get("/", [](const httplib::Request&, httplib::Response& res) { kgym::dashboard::SendPage(res); });
  int port = 0;
  kgym::Status bound = kgym::http::BindExclusive(svr, f.host, f.port, &port);
  if (!bound.ok()) {
    std::fprintf(stderr, "kgym view: %s\n", bound.ToString().c_str());
    return 1;
  }
  std::signal(SIGTERM, OnViewStop);
  std::signal(SIGINT, OnViewStop);
  std::signal(SIGPIPE, SIG_IGN);
  std::thread serving([&] { svr.listen_after_bind(); });
  std::printf("kgym view: listening on http://%s:%d (%zu run(s)); open it in a browser, Ctrl-C to stop\n",
              f.host.c_str(), port, found);
  std::fflush(stdout);
  while (!g_view_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  svr.stop();
  serving.join();
  return 0;
}

KGYM_REGISTER_COMMAND("view", "open run folders (agent, grade, train) in the dashboard's run pages",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto f = std::make_shared<ViewFlags>();
                        sub->add_option("runs", f->runs, "run folders, or folders of them")->required();
                        kgym::cli::AddSharedOption(sub, "--host", &f->host);
                        kgym::cli::AddSharedOption(sub, "--port", &f->port);
                        return [f] { return RunView(*f); };
                      });

}  // namespace
