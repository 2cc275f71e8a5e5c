// Facts about a worker process read from outside it, in /proc: its threads, their CPU time, its peak memory. Nothing
// the process does to its own interpreter changes these answers, so the supervisor's rules may rely on them
// (eval/process_watch.h). Every function returns -1 (or an empty result, or 0 for memory) when /proc does not tell.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace kgym {

// Number of threads of a process (/proc/PID/stat, field num_threads), or -1.
int ProcessThreads(pid_t pid);

// CPU time in nanoseconds used so far by each live thread of a process (run time from /proc/PID/task/TID/schedstat),
// by thread id. Threads that already ended are not listed: callers compare snapshots a call apart.
std::map<pid_t, int64_t> ThreadCpuNs(pid_t pid);

// CPU time in nanoseconds of the whole process, every thread's, those that already ended included: the kernel's
// process CPU clock (clock_getcpuclockid; one system call, whatever the thread count), else the sum of ThreadCpuNs.
// -1 where neither tells.
int64_t ProcessCpuNs(pid_t pid);

// The process CPU clock above counts a thread's time up to the kernel's last accounting of it (its last scheduler
// tick, or when it last left a CPU): read while a thread is on a CPU it lags by up to one tick (4 ms at HZ=250).
// SettledProcessCpuNs reads it once none of the process's threads is running or ready to run (state R), polling
// every 50 us for at most `max_wait_us`; past that it reads anyway and sets *unsettled. -1 as ProcessCpuNs.
int64_t SettledProcessCpuNs(pid_t pid, int max_wait_us, bool* unsettled = nullptr);

// How many of a process's live threads are running or ready to run (state R in /proc/PID/task/TID/stat), or -1.
int RunnableThreads(pid_t pid);

// One thread's CPU time in nanoseconds (/proc/PID/task/TID/schedstat), or -1.
int64_t ThreadRunNs(pid_t pid, pid_t tid);

// The ids of a process's live threads.
std::set<pid_t> ThreadIds(pid_t pid);

// The processes whose parent is `pid` (/proc/PID/task/PID/children; a scan of /proc where the kernel lacks that file).
std::vector<pid_t> ChildProcesses(pid_t pid);

// Peak resident memory of `pid` that is not file-backed: VmHWM - RssFile of /proc/PID/status. Includes the shared
// memory regions the process mapped and pages it shares copy-on-write with its zygote, so it errs high. 0 if the
// process is gone or /proc does not tell.
uint64_t ProcessPeakPrivateBytes(pid_t pid);

}  // namespace kgym
