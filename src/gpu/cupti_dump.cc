// kgym_cupti_dump: prints a libkgym_cupti.so stream for people, one JSON object per line.
//
//   kgym_cupti_dump STREAM [--summary] [--candidate NAME]...
//
// Default: every operation of the timeline (tag, phase, call, kind, stream, start/end ns, name, demangled
// name), then the per-call spans, then coverage of all tagged work against the --candidate names.
// --summary prints only the calls and the coverage. Exit status 1 when the stream does not parse.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/coverage.h"
#include "gpu/cupti_format.h"
#include "gpu/kernel_timeline.h"
#include "gpu/record_stream.h"

int main(int argc, char** argv) {
  using namespace kgym::gpu;
  std::string path;
  bool summary = false;
  CandidateKernelNames names;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--summary") == 0) {
      summary = true;
    } else if (std::strcmp(argv[i], "--candidate") == 0 && i + 1 < argc) {
      names.AddTritonKernel(argv[i + 1]);
      names.AddCudaSymbol(argv[i + 1]);
      ++i;
    } else if (path.empty()) {
      path = argv[i];
    } else {
      std::fprintf(stderr, "usage: kgym_cupti_dump STREAM [--summary] [--candidate NAME]...\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: kgym_cupti_dump STREAM [--summary] [--candidate NAME]...\n");
    return 2;
  }
  RecordStream rs;
  kgym::Status s = ReadRecordStreamFile(path, ParseOptions{true}, &rs);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  nlohmann::json header{{"stream", path},
                        {"pid", rs.pid},
                        {"kernels", rs.kernels.size()},
                        {"memory_ops", rs.memory_ops.size()},
                        {"correlations", rs.tag_of_correlation.size()},
                        {"markers", rs.markers.size()},
                        {"dropped", rs.dropped_records},
                        {"last_flush", rs.last_flush_sequence},
                        {"bytes_consumed", rs.bytes_consumed}};
  nlohmann::json errors = nlohmann::json::array();
  for (const StreamError& e : rs.errors) errors.push_back({{"cupti_result", e.cupti_result}, {"message", e.message}});
  header["errors"] = errors;
  std::printf("%s\n", header.dump().c_str());

  KernelTimeline tl = KernelTimeline::FromRecords(rs);
  if (!summary) {
    for (const TimelineOp& op : tl.ops()) {
      const char* kind = op.kind == OpKind::kKernel ? "kernel" : op.kind == OpKind::kMemcpy ? "memcpy" : "memset";
      nlohmann::json j{{"op", kind},
                       {"tag", op.tag},
                       {"phase", kgym_tag_phase(op.tag)},
                       {"call", kgym_tag_call(op.tag)},
                       {"device", op.device_id},
                       {"stream", op.stream_id},
                       {"start_ns", op.start_ns},
                       {"end_ns", op.end_ns},
                       {"name", op.name},
                       {"display_name", op.display_name},
                       {"grid", op.grid},
                       {"block", op.block}};
      std::printf("%s\n", j.dump().c_str());
    }
  }
  std::vector<const TimelineOp*> tagged;
  for (uint64_t tag : tl.Tags()) {
    std::printf("%s\n", nlohmann::json{{"call", tl.Call(tag).ToJson()}}.dump().c_str());
    if (tag == 0) continue;
    for (const TimelineOp* op : tl.OpsForTag(tag)) tagged.push_back(op);
  }
  CoverageReport cov = ComputeCoverage(tagged, names);
  std::printf("%s\n",
              nlohmann::json{{"coverage", cov.ToJson()}, {"kernelgym", cov.KernelGymMetadata()}}.dump().c_str());
  return 0;
}
