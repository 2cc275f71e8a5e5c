#include "gpu/record_stream.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "gpu/cupti_format.h"

namespace kgym::gpu {
namespace {

Status Bad(size_t offset, const std::string& what) {
  return Status::InvalidArgument("kernel record stream at byte offset " + std::to_string(offset) + ": " + what);
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Decodes one record payload. `offset` is where the record header starts (for messages).
Status DecodeRecord(uint16_t type, std::string_view payload, size_t offset, RecordStream* out) {
  auto need = [&](size_t n, const char* what) -> Status {
    if (payload.size() < n) {
      return Bad(offset, std::string(what) + " record of " + std::to_string(payload.size()) +
                             " bytes is shorter than its " + std::to_string(n) + "-byte layout");
    }
    return Status::Ok();
  };
  switch (type) {
    case KGYM_REC_KERNEL: {
      if (Status s = need(sizeof(KgymKernelRecord), "kernel"); !s.ok()) return s;
      auto r = Load<KgymKernelRecord>(payload.data());
      if (r.name_len > payload.size() - sizeof(KgymKernelRecord)) {
        return Bad(offset, "kernel name length " + std::to_string(r.name_len) + " exceeds the record");
      }
      if (r.end_ns < r.start_ns) {
        return Bad(offset, "kernel ends (" + std::to_string(r.end_ns) + " ns) before it starts (" +
                               std::to_string(r.start_ns) + " ns)");
      }
      KernelExec k;
      k.start_ns = r.start_ns;
      k.end_ns = r.end_ns;
      k.correlation_id = r.correlation_id;
      k.device_id = r.device_id;
      k.context_id = r.context_id;
      k.stream_id = r.stream_id;
      k.grid = {r.grid_x, r.grid_y, r.grid_z};
      k.block = {r.block_x, r.block_y, r.block_z};
      k.static_shared_bytes = r.static_shared_bytes;
      k.dynamic_shared_bytes = r.dynamic_shared_bytes;
      k.registers_per_thread = r.registers_per_thread;
      k.is_graph = r.is_graph != 0;
      k.name.assign(payload.data() + sizeof(KgymKernelRecord), r.name_len);
      out->kernels.push_back(std::move(k));
      return Status::Ok();
    }
    case KGYM_REC_MEMCPY: {
      if (Status s = need(sizeof(KgymMemcpyRecord), "memcpy"); !s.ok()) return s;
      auto r = Load<KgymMemcpyRecord>(payload.data());
      if (r.end_ns < r.start_ns) return Bad(offset, "memcpy ends before it starts");
      MemoryOp m;
      m.kind = MemoryOpKind::kMemcpy;
      m.start_ns = r.start_ns;
      m.end_ns = r.end_ns;
      m.bytes = r.bytes;
      m.correlation_id = r.correlation_id;
      m.device_id = r.device_id;
      m.context_id = r.context_id;
      m.stream_id = r.stream_id;
      m.copy_kind = r.copy_kind;
      out->memory_ops.push_back(m);
      return Status::Ok();
    }
    case KGYM_REC_MEMSET: {
      if (Status s = need(sizeof(KgymMemsetRecord), "memset"); !s.ok()) return s;
      auto r = Load<KgymMemsetRecord>(payload.data());
      if (r.end_ns < r.start_ns) return Bad(offset, "memset ends before it starts");
      MemoryOp m;
      m.kind = MemoryOpKind::kMemset;
      m.start_ns = r.start_ns;
      m.end_ns = r.end_ns;
      m.bytes = r.bytes;
      m.correlation_id = r.correlation_id;
      m.device_id = r.device_id;
      m.context_id = r.context_id;
      m.stream_id = r.stream_id;
      m.value = r.value;
      out->memory_ops.push_back(m);
      return Status::Ok();
    }
    case KGYM_REC_EXTERNAL_CORRELATION: {
      if (Status s = need(sizeof(KgymExternalCorrelationRecord), "external correlation"); !s.ok()) return s;
      auto r = Load<KgymExternalCorrelationRecord>(payload.data());
      if (r.external_kind == KGYM_EXTERNAL_KIND_CUSTOM0) out->tag_of_correlation[r.correlation_id] = r.external_id;
      return Status::Ok();
    }
    case KGYM_REC_MARKER: {
      if (Status s = need(sizeof(KgymMarkerRecord), "marker"); !s.ok()) return s;
      auto r = Load<KgymMarkerRecord>(payload.data());
      if (r.kind != KGYM_MARKER_BEGIN && r.kind != KGYM_MARKER_END) {
        return Bad(offset, "marker kind " + std::to_string(r.kind) + " is neither begin (1) nor end (2)");
      }
      out->markers.push_back(Marker{r.kind == KGYM_MARKER_BEGIN, r.tag, r.gpu_ns, r.host_ns, r.thread_id});
      return Status::Ok();
    }
    case KGYM_REC_ERROR: {
      if (Status s = need(sizeof(KgymErrorRecord), "error"); !s.ok()) return s;
      auto r = Load<KgymErrorRecord>(payload.data());
      if (r.message_len > payload.size() - sizeof(KgymErrorRecord)) {
        return Bad(offset, "error message length " + std::to_string(r.message_len) + " exceeds the record");
      }
      out->errors.push_back(
          StreamError{r.cupti_result, std::string(payload.data() + sizeof(KgymErrorRecord), r.message_len)});
      return Status::Ok();
    }
    case KGYM_REC_DROPPED: {
      if (Status s = need(sizeof(KgymDroppedRecord), "dropped"); !s.ok()) return s;
      out->dropped_records += Load<KgymDroppedRecord>(payload.data()).count;
      return Status::Ok();
    }
    case KGYM_REC_FLUSH: {
      if (Status s = need(sizeof(KgymFlushRecord), "flush"); !s.ok()) return s;
      out->last_flush_sequence = Load<KgymFlushRecord>(payload.data()).sequence;
      return Status::Ok();
    }
    default:
      return Bad(offset, "unknown record type " + std::to_string(type));
  }
}

}  // namespace

Status ParseRecordStream(std::string_view bytes, const ParseOptions& options, RecordStream* out) {
  *out = RecordStream();
  if (bytes.size() < sizeof(KgymStreamHeader)) {
    return Bad(0, "stream of " + std::to_string(bytes.size()) + " bytes is shorter than the 32-byte header");
  }
  auto h = Load<KgymStreamHeader>(bytes.data());
  if (std::memcmp(h.magic, KGYM_STREAM_MAGIC, 8) != 0) {
    return Bad(0, "bad magic (not a libkgym_cupti stream)");
  }
  if (h.version != KGYM_STREAM_VERSION) {
    return Bad(8, "unsupported stream version " + std::to_string(h.version) + " (this parser reads " +
                      std::to_string(KGYM_STREAM_VERSION) + ")");
  }
  out->version = h.version;
  out->pid = h.pid;
  out->open_host_ns = h.host_ns;
  out->open_gpu_ns = h.gpu_ns;

  size_t off = sizeof(KgymStreamHeader);
  out->bytes_consumed = off;
  while (off < bytes.size()) {
    const size_t left = bytes.size() - off;
    if (left < sizeof(KgymRecordHeader)) {
      if (options.allow_partial_tail) break;
      return Bad(off, "truncated record header (" + std::to_string(left) + " of 8 bytes)");
    }
    auto rh = Load<KgymRecordHeader>(bytes.data() + off);
    if (rh.size > KGYM_MAX_RECORD_SIZE) {
      return Bad(off, "record size " + std::to_string(rh.size) + " exceeds the 1 MiB limit (corrupt stream)");
    }
    if (rh.size > left - sizeof(KgymRecordHeader)) {
      if (options.allow_partial_tail) break;
      return Bad(off, "truncated record: type " + std::to_string(rh.type) + " declares " + std::to_string(rh.size) +
                          " payload bytes, " + std::to_string(left - sizeof(KgymRecordHeader)) + " remain");
    }
    std::string_view payload = bytes.substr(off + sizeof(KgymRecordHeader), rh.size);
    if (Status s = DecodeRecord(rh.type, payload, off, out); !s.ok()) return s;
    off += sizeof(KgymRecordHeader) + rh.size;
    out->bytes_consumed = off;
  }
  return Status::Ok();
}

Status ReadRecordStreamFile(const std::string& path, const ParseOptions& options, RecordStream* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot open kernel record stream " + path);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::IOError("error reading kernel record stream " + path);
  return ParseRecordStream(buf.str(), options, out);
}

RecordStreamWriter::RecordStreamWriter(uint32_t pid, uint64_t open_host_ns, uint64_t open_gpu_ns) {
  KgymStreamHeader h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, KGYM_STREAM_MAGIC, 8);
  h.version = KGYM_STREAM_VERSION;
  h.pid = pid;
  h.host_ns = open_host_ns;
  h.gpu_ns = open_gpu_ns;
  bytes_.append(reinterpret_cast<const char*>(&h), sizeof(h));
}

void RecordStreamWriter::Append(uint16_t type, const void* payload, size_t size, std::string_view tail) {
  KgymRecordHeader rh;
  rh.type = type;
  rh.reserved = 0;
  rh.size = static_cast<uint32_t>(size + tail.size());
  bytes_.append(reinterpret_cast<const char*>(&rh), sizeof(rh));
  bytes_.append(static_cast<const char*>(payload), size);
  bytes_.append(tail);
}

void RecordStreamWriter::AddKernel(const KernelExec& k) {
  KgymKernelRecord r;
  std::memset(&r, 0, sizeof(r));
  r.start_ns = k.start_ns;
  r.end_ns = k.end_ns;
  r.correlation_id = k.correlation_id;
  r.device_id = k.device_id;
  r.context_id = k.context_id;
  r.stream_id = k.stream_id;
  r.grid_x = k.grid[0];
  r.grid_y = k.grid[1];
  r.grid_z = k.grid[2];
  r.block_x = k.block[0];
  r.block_y = k.block[1];
  r.block_z = k.block[2];
  r.static_shared_bytes = k.static_shared_bytes;
  r.dynamic_shared_bytes = k.dynamic_shared_bytes;
  r.registers_per_thread = k.registers_per_thread;
  r.is_graph = k.is_graph ? 1 : 0;
  r.name_len = static_cast<uint32_t>(k.name.size());
  Append(KGYM_REC_KERNEL, &r, sizeof(r), k.name);
}

void RecordStreamWriter::AddMemoryOp(const MemoryOp& m) {
  if (m.kind == MemoryOpKind::kMemcpy) {
    KgymMemcpyRecord r;
    std::memset(&r, 0, sizeof(r));
    r.start_ns = m.start_ns;
    r.end_ns = m.end_ns;
    r.bytes = m.bytes;
    r.correlation_id = m.correlation_id;
    r.device_id = m.device_id;
    r.context_id = m.context_id;
    r.stream_id = m.stream_id;
    r.copy_kind = m.copy_kind;
    Append(KGYM_REC_MEMCPY, &r, sizeof(r), {});
  } else {
    KgymMemsetRecord r;
    std::memset(&r, 0, sizeof(r));
    r.start_ns = m.start_ns;
    r.end_ns = m.end_ns;
    r.bytes = m.bytes;
    r.correlation_id = m.correlation_id;
    r.device_id = m.device_id;
    r.context_id = m.context_id;
    r.stream_id = m.stream_id;
    r.value = m.value;
    Append(KGYM_REC_MEMSET, &r, sizeof(r), {});
  }
}

void RecordStreamWriter::AddExternalCorrelation(uint32_t correlation_id, uint64_t tag, uint32_t external_kind) {
  KgymExternalCorrelationRecord r;
  std::memset(&r, 0, sizeof(r));
  r.external_id = tag;
  r.correlation_id = correlation_id;
  r.external_kind = external_kind;
  Append(KGYM_REC_EXTERNAL_CORRELATION, &r, sizeof(r), {});
}

void RecordStreamWriter::AddMarker(const Marker& m) {
  KgymMarkerRecord r;
  std::memset(&r, 0, sizeof(r));
  r.tag = m.tag;
  r.gpu_ns = m.gpu_ns;
  r.host_ns = m.host_ns;
  r.kind = m.begin ? KGYM_MARKER_BEGIN : KGYM_MARKER_END;
  r.thread_id = m.thread_id;
  Append(KGYM_REC_MARKER, &r, sizeof(r), {});
}

void RecordStreamWriter::AddError(int32_t cupti_result, std::string_view message) {
  KgymErrorRecord r;
  r.cupti_result = cupti_result;
  r.message_len = static_cast<uint32_t>(message.size());
  Append(KGYM_REC_ERROR, &r, sizeof(r), message);
}

void RecordStreamWriter::AddDropped(uint64_t count) {
  KgymDroppedRecord r;
  std::memset(&r, 0, sizeof(r));
  r.count = count;
  Append(KGYM_REC_DROPPED, &r, sizeof(r), {});
}

void RecordStreamWriter::AddFlush(uint64_t sequence, uint64_t gpu_ns) {
  KgymFlushRecord r;
  r.sequence = sequence;
  r.gpu_ns = gpu_ns;
  Append(KGYM_REC_FLUSH, &r, sizeof(r), {});
}

void RecordStreamWriter::AddRaw(uint16_t type, std::string_view payload) {
  Append(type, payload.data(), payload.size(), {});
}

}  // namespace kgym::gpu
