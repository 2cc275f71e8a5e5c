// The kernel-record stream written by libkgym_cupti.so (inside the candidate's process) and read by the
// supervisor's parser (record_stream.h). Plain C so the injection library and any tool can include it.
//
// Layout (little-endian, the only byte order both machines use):
//   KgymStreamHeader                       32 bytes, once at offset 0
//   { KgymRecordHeader, payload[size] }*   records back to back, no padding between records
// A payload is one of the Kgym*Record structs below, with a trailing variable part for KERNEL (the raw,
// usually C++-mangled, kernel name: name_len bytes, no terminator) and ERROR (message bytes). A reader
// accepts a payload longer than the struct it knows (fields appended by a later minor version) and rejects a
// shorter one. Every struct has explicit padding so its size is identical under any compiler.
//
// Tags: kgym_cupti_begin(tag) attributes every GPU operation launched by the calling thread until
// kgym_cupti_end() to `tag`. The encoding is tag = (uint64_t)phase << 32 | call_index, phase from
// KgymPhase; tag 0 means "untagged" (launched outside any begin/end, or from another thread).
#ifndef KGYM_GPU_CUPTI_FORMAT_H_
#define KGYM_GPU_CUPTI_FORMAT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KGYM_STREAM_MAGIC "KGYMCPT1" /* 8 bytes, no terminator in the file */
#define KGYM_STREAM_VERSION 1u
#define KGYM_MAX_RECORD_SIZE (1u << 20) /* a larger size field means a corrupt stream */

enum KgymPhase {
  KGYM_PHASE_NONE = 0,
  KGYM_PHASE_WARMUP = 1,
  KGYM_PHASE_CORRECTNESS = 2,
  KGYM_PHASE_DETECT_NOGRAD = 3, /* usage/decoy check under inference mode */
  KGYM_PHASE_DETECT_GRAD = 4,   /* usage/decoy check with grad enabled */
  KGYM_PHASE_TIMING = 5,
  KGYM_PHASE_PROFILE = 6,
  KGYM_PHASE_REFERENCE = 7,
  KGYM_PHASE_HARNESS = 8, /* the harness's own null calls (no model code) */
  KGYM_PHASE_BURST = 9,   /* model calls of a pipelined burst (no sync between them) */
};

static inline uint64_t kgym_make_tag(uint32_t phase, uint32_t call_index) {
  return ((uint64_t)phase << 32) | (uint64_t)call_index;
}
static inline uint32_t kgym_tag_phase(uint64_t tag) { return (uint32_t)(tag >> 32); }
static inline uint32_t kgym_tag_call(uint64_t tag) { return (uint32_t)(tag & 0xffffffffu); }

typedef struct {
  char magic[8];    /* KGYM_STREAM_MAGIC */
  uint32_t version; /* KGYM_STREAM_VERSION */
  uint32_t pid;     /* process that wrote the stream */
  uint64_t host_ns; /* CLOCK_MONOTONIC when the stream was opened */
  uint64_t gpu_ns;  /* cuptiGetTimestamp() at the same moment (0 if it failed) */
} KgymStreamHeader; /* 32 bytes */

enum KgymRecordType {
  KGYM_REC_KERNEL = 1,
  KGYM_REC_MEMCPY = 2,
  KGYM_REC_MEMSET = 3,
  KGYM_REC_EXTERNAL_CORRELATION = 4, /* joins a CUDA correlation id to a tag */
  KGYM_REC_MARKER = 5,               /* a begin or end call, with both clocks */
  KGYM_REC_ERROR = 6,                /* a CUPTI call failed; the stream goes on */
  KGYM_REC_DROPPED = 7,              /* CUPTI dropped records (buffers full) */
  KGYM_REC_FLUSH = 8,                /* every record completed before kgym_cupti_flush() precedes this one */
};

typedef struct {
  uint16_t type; /* KgymRecordType */
  uint16_t reserved;
  uint32_t size;    /* payload bytes that follow, <= KGYM_MAX_RECORD_SIZE */
} KgymRecordHeader; /* 8 bytes */

typedef struct {
  uint64_t start_ns; /* GPU clock (CUPTI timestamp domain) */
  uint64_t end_ns;
  uint32_t correlation_id;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  int32_t grid_x, grid_y, grid_z;
  int32_t block_x, block_y, block_z;
  int32_t static_shared_bytes;
  int32_t dynamic_shared_bytes;
  uint16_t registers_per_thread;
  uint8_t is_graph; /* launched as part of a CUDA graph */
  uint8_t pad0;
  uint32_t name_len; /* raw name bytes that follow the struct */
} KgymKernelRecord;  /* 72 bytes + name */

typedef struct {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint32_t correlation_id;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint8_t copy_kind; /* CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ... */
  uint8_t src_kind;  /* CUpti_ActivityMemoryKind */
  uint8_t dst_kind;
  uint8_t pad0[5];
} KgymMemcpyRecord; /* 48 bytes */

typedef struct {
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t bytes;
  uint32_t correlation_id;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t value;
  uint32_t memory_kind;
} KgymMemsetRecord; /* 48 bytes */

#define KGYM_EXTERNAL_KIND_CUSTOM0 3u /* CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0: the kind tags use */

typedef struct {
  uint64_t external_id; /* the tag */
  uint32_t correlation_id;
  uint32_t external_kind;        /* CUpti_ExternalCorrelationKind; the library uses CUSTOM0 */
} KgymExternalCorrelationRecord; /* 16 bytes */

enum KgymMarkerKind { KGYM_MARKER_BEGIN = 1, KGYM_MARKER_END = 2 };

typedef struct {
  uint64_t tag;
  uint64_t gpu_ns;  /* cuptiGetTimestamp() */
  uint64_t host_ns; /* CLOCK_MONOTONIC */
  uint32_t kind;    /* KgymMarkerKind */
  uint32_t thread_id;
} KgymMarkerRecord; /* 32 bytes */

typedef struct {
  int32_t cupti_result; /* CUptiResult, or -1 for an error of the library itself */
  uint32_t message_len; /* message bytes follow: "<call>: <cuptiGetResultString>" */
} KgymErrorRecord;      /* 8 bytes + message */

typedef struct {
  uint64_t count; /* records lost since the previous DROPPED record */
  uint32_t context_id;
  uint32_t stream_id;
} KgymDroppedRecord; /* 16 bytes */

typedef struct {
  uint64_t sequence; /* 1, 2, ... per kgym_cupti_flush() call */
  uint64_t gpu_ns;
} KgymFlushRecord; /* 16 bytes */

#ifdef __cplusplus
}  // extern "C"
static_assert(sizeof(KgymStreamHeader) == 32, "stream header layout");
static_assert(sizeof(KgymRecordHeader) == 8, "record header layout");
static_assert(sizeof(KgymKernelRecord) == 72, "kernel record layout");
static_assert(sizeof(KgymMemcpyRecord) == 48, "memcpy record layout");
static_assert(sizeof(KgymMemsetRecord) == 48, "memset record layout");
static_assert(sizeof(KgymExternalCorrelationRecord) == 16, "external correlation layout");
static_assert(sizeof(KgymMarkerRecord) == 32, "marker layout");
static_assert(sizeof(KgymErrorRecord) == 8, "error layout");
static_assert(sizeof(KgymDroppedRecord) == 16, "dropped layout");
static_assert(sizeof(KgymFlushRecord) == 16, "flush layout");
#endif

#endif  // KGYM_GPU_CUPTI_FORMAT_H_
