// RecordStream: the decoded contents of one libkgym_cupti.so output (format in cupti_format.h).
//
// The bytes come from the candidate's process and are therefore hostile input: the parser bounds every
// length, never reads past the buffer, and reports the first problem as a Status naming the byte offset.
// It never crashes and never allocates more than a small multiple of the input size.
//
// RecordStreamWriter produces the same bytes in memory; tests and tools use it to build timelines without a
// GPU. Neither class is thread-safe; distinct instances are independent.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace kgym::gpu {

struct KernelExec {
  uint64_t start_ns = 0;  // GPU clock (CUPTI timestamp domain)
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  std::array<int32_t, 3> grid{1, 1, 1};
  std::array<int32_t, 3> block{1, 1, 1};
  int32_t static_shared_bytes = 0;
  int32_t dynamic_shared_bytes = 0;
  uint16_t registers_per_thread = 0;
  bool is_graph = false;
  std::string name;  // raw (mangled for C++ kernels, as-is for Triton)
};

enum class MemoryOpKind { kMemcpy, kMemset };

struct MemoryOp {
  MemoryOpKind kind = MemoryOpKind::kMemcpy;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  uint32_t correlation_id = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint8_t copy_kind = 0;  // memcpy: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP)
  uint32_t value = 0;     // memset: the byte value
};

struct Marker {
  bool begin = true;
  uint64_t tag = 0;
  uint64_t gpu_ns = 0;
  uint64_t host_ns = 0;
  uint32_t thread_id = 0;
};

struct StreamError {
  int32_t cupti_result = 0;
  std::string message;
};

struct RecordStream {
  uint32_t version = 0;
  uint32_t pid = 0;
  uint64_t open_host_ns = 0;
  uint64_t open_gpu_ns = 0;

  std::vector<KernelExec> kernels;  // in stream order (CUPTI buffer order, not time order)
  std::vector<MemoryOp> memory_ops;
  std::unordered_map<uint32_t, uint64_t> tag_of_correlation;  // CUSTOM0 external ids only
  std::vector<Marker> markers;
  std::vector<StreamError> errors;   // CUPTI failures reported by the library
  uint64_t dropped_records = 0;      // sum over DROPPED records
  uint64_t last_flush_sequence = 0;  // 0 when no FLUSH record was seen
  size_t bytes_consumed = 0;         // end of the last complete record
};

struct ParseOptions {
  // A stream read while its writer is alive (or after it was killed) may end inside a record. With this set
  // the incomplete tail is ignored (bytes_consumed says where it starts); otherwise it is an error.
  bool allow_partial_tail = false;
};

// Decodes `bytes` into `*out` (overwritten). Errors: InvalidArgument naming the offset and what was wrong
// (bad magic, unsupported version, truncated header or record, record size out of range, unknown record
// type, a kernel ending before it starts).
Status ParseRecordStream(std::string_view bytes, const ParseOptions& options, RecordStream* out);

// Reads the whole file at `path` and parses it. IOError if it cannot be read.
Status ReadRecordStreamFile(const std::string& path, const ParseOptions& options, RecordStream* out);

// Builds a stream byte for byte as libkgym_cupti.so would write it.
class RecordStreamWriter {
 public:
  explicit RecordStreamWriter(uint32_t pid = 1, uint64_t open_host_ns = 0, uint64_t open_gpu_ns = 0);

  void AddKernel(const KernelExec& k);
  void AddMemoryOp(const MemoryOp& m);
  void AddExternalCorrelation(uint32_t correlation_id, uint64_t tag, uint32_t external_kind = 3 /* CUSTOM0 */);
  void AddMarker(const Marker& m);
  void AddError(int32_t cupti_result, std::string_view message);
  void AddDropped(uint64_t count);
  void AddFlush(uint64_t sequence, uint64_t gpu_ns = 0);
  // Appends a record with an arbitrary type and payload (for tests of unknown or malformed records).
  void AddRaw(uint16_t type, std::string_view payload);

  const std::string& bytes() const { return bytes_; }

 private:
  void Append(uint16_t type, const void* payload, size_t size, std::string_view tail);
  std::string bytes_;
};

}  // namespace kgym::gpu
