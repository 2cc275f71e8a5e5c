// libkgym_cupti.so: see kgym_cupti.h for the contract and cupti_format.h for what it writes.
// Runs inside the candidate's process, so it stays small, allocates little and never throws or aborts:
// a failing CUPTI call becomes an ERROR record in the stream.
#include "gpu/kgym_cupti.h"

#include <cupti.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "gpu/cupti_format.h"

namespace {

constexpr size_t kBufferSize = 8u << 20;  // per CUPTI activity buffer
constexpr size_t kBufferAlign = 8;
constexpr CUpti_ExternalCorrelationKind kTagKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
static_assert(kTagKind == KGYM_EXTERNAL_KIND_CUSTOM0, "cupti_format.h names the tag kind");

pthread_mutex_t g_write_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
int g_fd = -1;
bool g_fd_owned = false;       // opened from a path here (an inherited fd:N belongs to the caller)
bool g_output_broken = false;  // a write failed: stop writing rather than spin
std::atomic<bool> g_active{false};
int g_init_result = 1;  // 1: not attempted yet
uint64_t g_flush_seq = 0;

uint64_t HostNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Writes all of iov or marks the output broken. Caller holds g_write_mu.
void WriteAllLocked(struct iovec* iov, int n) {
  if (g_fd < 0 || g_output_broken) return;
  while (n > 0) {
    ssize_t w = writev(g_fd, iov, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      g_output_broken = true;
      return;
    }
    size_t left = static_cast<size_t>(w);
    while (n > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
}

void WriteRecord(uint16_t type, const void* payload, uint32_t size, const void* tail, uint32_t tail_len) {
  KgymRecordHeader h;
  h.type = type;
  h.reserved = 0;
  h.size = size + tail_len;
  struct iovec iov[3];
  iov[0] = {&h, sizeof(h)};
  iov[1] = {const_cast<void*>(payload), size};
  iov[2] = {const_cast<void*>(tail), tail_len};
  pthread_mutex_lock(&g_write_mu);
  WriteAllLocked(iov, tail_len > 0 ? 3 : 2);
  pthread_mutex_unlock(&g_write_mu);
}

void WriteError(int32_t code, const char* call, const char* detail) {
  char msg[512];
  int n = snprintf(msg, sizeof(msg), "%s: %s", call, detail ? detail : "");
  if (n < 0) n = 0;
  if (n >= static_cast<int>(sizeof(msg))) n = sizeof(msg) - 1;
  KgymErrorRecord e;
  e.cupti_result = code;
  e.message_len = static_cast<uint32_t>(n);
  WriteRecord(KGYM_REC_ERROR, &e, sizeof(e), msg, e.message_len);
}

// Returns true when `r` is success; otherwise writes an ERROR record naming `call`.
bool Check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  WriteError(static_cast<int32_t>(r), call, text);
  return false;
}

uint32_t ClampName(const char* name) {
  if (name == nullptr) return 0;
  size_t n = strnlen(name, KGYM_MAX_RECORD_SIZE - sizeof(KgymKernelRecord));
  return static_cast<uint32_t>(n);
}

void EmitKernel(const CUpti_ActivityKernel10* k) {
  KgymKernelRecord r;
  memset(&r, 0, sizeof(r));
  r.start_ns = k->start;
  r.end_ns = k->end;
  r.correlation_id = k->correlationId;
  r.device_id = k->deviceId;
  r.context_id = k->contextId;
  r.stream_id = k->streamId;
  r.grid_x = k->gridX;
  r.grid_y = k->gridY;
  r.grid_z = k->gridZ;
  r.block_x = k->blockX;
  r.block_y = k->blockY;
  r.block_z = k->blockZ;
  r.static_shared_bytes = k->staticSharedMemory;
  r.dynamic_shared_bytes = k->dynamicSharedMemory;
  r.registers_per_thread = k->registersPerThread;
  r.is_graph = k->graphId != 0 ? 1 : 0;
  r.name_len = ClampName(k->name);
  WriteRecord(KGYM_REC_KERNEL, &r, sizeof(r), k->name, r.name_len);
}

void EmitMemcpy(const CUpti_ActivityMemcpy6* m) {
  KgymMemcpyRecord r;
  memset(&r, 0, sizeof(r));
  r.start_ns = m->start;
  r.end_ns = m->end;
  r.bytes = m->bytes;
  r.correlation_id = m->correlationId;
  r.device_id = m->deviceId;
  r.context_id = m->contextId;
  r.stream_id = m->streamId;
  r.copy_kind = m->copyKind;
  r.src_kind = m->srcKind;
  r.dst_kind = m->dstKind;
  WriteRecord(KGYM_REC_MEMCPY, &r, sizeof(r), nullptr, 0);
}

void EmitMemset(const CUpti_ActivityMemset4* m) {
  KgymMemsetRecord r;
  memset(&r, 0, sizeof(r));
  r.start_ns = m->start;
  r.end_ns = m->end;
  r.bytes = m->bytes;
  r.correlation_id = m->correlationId;
  r.device_id = m->deviceId;
  r.context_id = m->contextId;
  r.stream_id = m->streamId;
  r.value = m->value;
  r.memory_kind = m->memoryKind;
  WriteRecord(KGYM_REC_MEMSET, &r, sizeof(r), nullptr, 0);
}

void EmitExternal(const CUpti_ActivityExternalCorrelation* x) {
  KgymExternalCorrelationRecord r;
  memset(&r, 0, sizeof(r));
  r.external_id = x->externalId;
  r.correlation_id = x->correlationId;
  r.external_kind = static_cast<uint32_t>(x->externalKind);
  WriteRecord(KGYM_REC_EXTERNAL_CORRELATION, &r, sizeof(r), nullptr, 0);
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_num_records) {
  void* p = nullptr;
  if (posix_memalign(&p, kBufferAlign, kBufferSize) != 0) p = nullptr;
  if (p == nullptr) WriteError(-1, "posix_memalign", "activity buffer allocation failed; records will drop");
  *buffer = static_cast<uint8_t*>(p);
  *size = p != nullptr ? kBufferSize : 0;
  *max_num_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/, size_t valid_size) {
  CUpti_Activity* rec = nullptr;
  while (valid_size > 0) {
    CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_size, &rec);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (!Check(r, "cuptiActivityGetNextRecord")) break;
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        EmitKernel(reinterpret_cast<const CUpti_ActivityKernel10*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        EmitMemcpy(reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        EmitMemset(reinterpret_cast<const CUpti_ActivityMemset4*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        EmitExternal(reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec));
        break;
      default:
        break;  // kinds we did not enable (or that CUPTI adds on its own) are ignored
    }
  }
  size_t dropped = 0;
  if (Check(cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped), "cuptiActivityGetNumDroppedRecords") &&
      dropped > 0) {
    KgymDroppedRecord d;
    memset(&d, 0, sizeof(d));
    d.count = dropped;
    d.stream_id = stream_id;
    WriteRecord(KGYM_REC_DROPPED, &d, sizeof(d), nullptr, 0);
  }
  free(buffer);
}

uint64_t GpuNs() {
  uint64_t t = 0;
  if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS) return 0;
  return t;
}

int OpenOutput(const char* spec) {
  if (spec == nullptr || spec[0] == '\0') return -1;
  if (strncmp(spec, "fd:", 3) == 0) {
    char* end = nullptr;
    long fd = strtol(spec + 3, &end, 10);
    if (end == spec + 3 || *end != '\0' || fd < 0 || fd > 1 << 20) return -1;
    if (fcntl(static_cast<int>(fd), F_GETFD) < 0) return -2;
    return static_cast<int>(fd);
  }
  int fd = open(spec, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  return fd < 0 ? -2 : fd;
}

void AtExit() { kgym_cupti_shutdown(); }

int InitLocked(const char* spec) {
  int fd = OpenOutput(spec);
  if (fd < 0) return fd;
  g_fd = fd;
  g_fd_owned = strncmp(spec, "fd:", 3) != 0;

  KgymStreamHeader h;
  memset(&h, 0, sizeof(h));
  memcpy(h.magic, KGYM_STREAM_MAGIC, 8);
  h.version = KGYM_STREAM_VERSION;
  h.pid = static_cast<uint32_t>(getpid());
  h.host_ns = HostNs();
  h.gpu_ns = GpuNs();
  struct iovec iov[1] = {{&h, sizeof(h)}};
  pthread_mutex_lock(&g_write_mu);
  WriteAllLocked(iov, 1);
  bool broken = g_output_broken;
  pthread_mutex_unlock(&g_write_mu);
  if (broken) return -2;

  if (!Check(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted), "cuptiActivityRegisterCallbacks"))
    return -3;
  if (!Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)"))
    return -3;
  // Attribution and memory operations are useful but not essential: a failure is recorded, not fatal.
  Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), "cuptiActivityEnable(EXTERNAL_CORRELATION)");
  // CUPTI emits an external-correlation record only alongside an API activity record, so the runtime and
  // driver API kinds must be on (Triton launches through the driver API, PyTorch through the runtime). The
  // API records themselves are dropped in BufferCompleted.
// -DKGYM_CUPTI_NO_API_RECORDS builds a variant without them (no call tags), for measuring their cost only.
#ifndef KGYM_CUPTI_NO_API_RECORDS
  Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "cuptiActivityEnable(RUNTIME)");
  Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "cuptiActivityEnable(DRIVER)");
#endif
  Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)");
  Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "cuptiActivityEnable(MEMSET)");
  g_active.store(true);
  atexit(AtExit);
  return 0;
}

void WriteMarker(uint64_t tag, uint32_t kind) {
  KgymMarkerRecord m;
  memset(&m, 0, sizeof(m));
  m.tag = tag;
  m.gpu_ns = GpuNs();
  m.host_ns = HostNs();
  m.kind = kind;
  m.thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  WriteRecord(KGYM_REC_MARKER, &m, sizeof(m), nullptr, 0);
}

}  // namespace

extern "C" {

int kgym_cupti_init_output(const char* spec) {
  pthread_mutex_lock(&g_init_mu);
  if (g_init_result == 1) g_init_result = InitLocked(spec);
  int r = g_init_result;
  pthread_mutex_unlock(&g_init_mu);
  return r;
}

int kgym_cupti_init(void) { return kgym_cupti_init_output(getenv("KGYM_CUPTI_OUT")); }

int InitializeInjection(void) { return kgym_cupti_init() == 0 ? 1 : 0; }

int kgym_cupti_begin(uint64_t tag) {
  if (!g_active.load()) return -1;
  if (!Check(cuptiActivityPushExternalCorrelationId(kTagKind, tag), "cuptiActivityPushExternalCorrelationId"))
    return -3;
  WriteMarker(tag, KGYM_MARKER_BEGIN);
  return 0;
}

int kgym_cupti_end(void) {
  if (!g_active.load()) return -1;
  uint64_t tag = 0;
  if (!Check(cuptiActivityPopExternalCorrelationId(kTagKind, &tag), "cuptiActivityPopExternalCorrelationId")) return -3;
  WriteMarker(tag, KGYM_MARKER_END);
  return 0;
}

int64_t kgym_cupti_flush(void) {
  if (!g_active.load()) return -1;
  if (!Check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll")) return -3;
  KgymFlushRecord f;
  memset(&f, 0, sizeof(f));
  f.gpu_ns = GpuNs();
  pthread_mutex_lock(&g_init_mu);
  f.sequence = ++g_flush_seq;
  pthread_mutex_unlock(&g_init_mu);
  WriteRecord(KGYM_REC_FLUSH, &f, sizeof(f), nullptr, 0);
  return static_cast<int64_t>(f.sequence);
}

uint64_t kgym_cupti_gpu_timestamp(void) { return GpuNs(); }

int kgym_cupti_shutdown(void) {
  if (!g_active.exchange(false)) return 0;
  Check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll(shutdown)");
  Check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityDisable(CONCURRENT_KERNEL)");
  Check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), "cuptiActivityDisable(EXTERNAL_CORRELATION)");
  Check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME), "cuptiActivityDisable(RUNTIME)");
  Check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER), "cuptiActivityDisable(DRIVER)");
  Check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityDisable(MEMCPY)");
  Check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET), "cuptiActivityDisable(MEMSET)");
  pthread_mutex_lock(&g_write_mu);
  if (g_fd_owned && g_fd >= 0) close(g_fd);
  g_fd = -1;
  pthread_mutex_unlock(&g_write_mu);
  return 0;
}

}  // extern "C"
