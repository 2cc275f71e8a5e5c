// Host-memory facts read from the kernel: what the machine (or this process's cgroup) has left, and how much
// private memory a worker process reached. Used to size the memory budget of evaluations in flight
// (eval/admission.h) and to measure each evaluation's footprint. Every function returns 0 when the kernel
// does not tell (no /proc, no cgroup limit), never an error: callers treat 0 as "unknown".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace kgym {

// MemAvailable of /proc/meminfo, in bytes.
uint64_t MemAvailableBytes();

// Room left under this process's cgroup memory limit (limit - current usage), in bytes; 0 when no limit is
// set (cgroup v2 memory.max "max", or no memory controller). Checks cgroup v2, then v1.
uint64_t CgroupAvailableBytes();

// `fraction` of the smaller of MemAvailableBytes() and CgroupAvailableBytes() (when set).
uint64_t DefaultMemoryBudget(double fraction = 0.7);

// Peak resident memory of `pid` that is not file-backed: VmHWM - RssFile of /proc/PID/status. Includes the
// shared-memory regions the process mapped and pages it shares copy-on-write with its zygote, so it errs high.
// 0 if the process is gone or /proc does not tell.
uint64_t ProcessPeakPrivateBytes(pid_t pid);

// "12.3 GB" (decimal units; "850 MB" below 1 GB), for log lines.
std::string FormatGB(uint64_t bytes);

}  // namespace kgym
