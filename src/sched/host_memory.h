// Host-memory facts read from the kernel: what the machine (or this process's cgroup) has left, to size the memory
// budget of evaluations in flight (sched/admission.h; a worker's own peak is sandbox/process_stats.h). Every function
// returns 0 when the kernel does not tell (no /proc, no cgroup limit), never an error: callers treat 0 as "unknown".
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

// "12.3 GB" (decimal units; "850 MB" below 1 GB), for log lines.
std::string FormatGB(uint64_t bytes);

}  // namespace kgym
