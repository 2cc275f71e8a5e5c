// How `kgym serve` and `kgym worker` stop. The first SIGTERM or SIGINT starts a drain: new work is refused, running
// evaluations may finish until the drain timeout, and those still running then are stopped (their jobs stay
// unfinished in the store, or leased in Redis, and run after the next start). A second signal cuts the drain short:
// running evaluations are stopped at once. If stopping them takes longer than kStopGraceS (an evaluation that does
// not honour its cancel), the process exits anyway: the workers' cgroups (where they have them) are killed and removed,
// its zygote sees its control socket close and exits, and every worker it forked dies with it (parent-death signals),
// so nothing of ours outlives the process.
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace kgym::cli {

// Seconds allowed, after the drain's deadline or a second signal, for the stopped evaluations to end.
constexpr double kStopGraceS = 5.0;

// Installs the SIGTERM/SIGINT handlers (and ignores SIGPIPE).
void InstallStopSignals();
// Stop signals received so far.
int StopSignalCount();
// Blocks until the first stop signal.
void AwaitStopSignal();

// Runs shutdown() on a thread (it drains for up to drain_timeout_s, then stops what still runs) and watches it: a
// second signal sets *cut_short (which shutdown must watch); when the drain's deadline (or the second signal) is
// kStopGraceS behind and shutdown has not returned, the process exits with status 1 after one line on stderr naming
// `who`. Returns what shutdown returned.
int DrainOrExit(const std::string& who, double drain_timeout_s, std::atomic<bool>* cut_short,
                const std::function<int()>& shutdown);

}  // namespace kgym::cli
