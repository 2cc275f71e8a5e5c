#include "eval/gpu_timing.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>

#include "eval/hack_rules.h"
#include "eval/timing_stats.h"
#include "gpu/cupti_format.h"
#include "gpu/roofline.h"
#include "gpu/timing_crosscheck.h"
#include "sandbox/protocol.h"
#include "sandbox/worker_session.h"

namespace kgym {

namespace kind = protocol::kind;
namespace field = protocol::field;

WorkerTimeline TimelineFromBytes(std::string_view bytes, const std::string& worker_error) {
  WorkerTimeline t;
  t.bytes = bytes.size();
  if (bytes.empty()) {
    t.problem = worker_error.empty() ? "the worker sent no kernel records" : worker_error;
    return t;
  }
  gpu::ParseOptions opt;
  opt.allow_partial_tail = true;
  Status s = gpu::ParseRecordStream(bytes, opt, &t.records);
  if (!s.ok()) {
    t.problem = "the kernel record stream is malformed: " + s.message();
    return t;
  }
  t.timeline = gpu::KernelTimeline::FromRecords(t.records);
  if (!worker_error.empty()) {
    t.problem = worker_error;
  } else if (!t.records.errors.empty()) {
    t.problem = "the recorder reported a CUPTI failure: " + t.records.errors.front().message;
  } else if (t.records.dropped_records > 0) {
    t.problem = "CUPTI dropped " + std::to_string(t.records.dropped_records) + " records";
  } else if (t.records.last_flush_sequence == 0) {
    t.problem = "the kernel record stream ends before its flush";
  } else {
    t.ok = true;
  }
  return t;
}

Status FetchTimeline(WorkerSession* w, Clock::time_point deadline, WorkerTimeline* out) {
  Frame f;
  Status s = w->Send({{field::kType, kind::kTimeline}});
  if (s.ok()) s = w->RecvReply(deadline, &f);
  if (!s.ok()) return s;
  if (f.header.value(field::kType, "") != kind::kTimeline) {
    *out = WorkerTimeline{};
    out->problem =
        "the worker answered the timeline request with " + f.header.value(field::kType, std::string("nothing"));
    return Status::Ok();
  }
  const auto& e = f.header.find(field::kError);
  const std::string err = e != f.header.end() && e->is_string() ? e->get<std::string>() : std::string();
  *out = TimelineFromBytes(f.payload, err);
  return Status::Ok();
}

TimedSpans SpansOfTimedCalls(const gpu::KernelTimeline& t, int n, int first) {
  TimedSpans out;
  for (int i = first; i < first + n; ++i) {
    uint64_t tag = kgym_make_tag(KGYM_PHASE_TIMING, static_cast<uint32_t>(i));
    gpu::CallSpan c = t.Call(tag);
    bool seen = !c.empty();
    if (!seen) {  // a call with a begin marker but no work is present with zero time; one without is missing
      auto tags = t.Tags();
      seen = std::binary_search(tags.begin(), tags.end(), tag);
    }
    if (!seen) {
      ++out.missing;
      continue;
    }
    if (c.empty()) ++out.empty;
    out.span_ms.push_back(c.span_ns / 1e6);
    out.busy_ms.push_back(c.busy_ns / 1e6);
    out.kernel_ms.push_back(c.kernel_sum_ns / 1e6);
  }
  for (const auto* op : t.OpsForPhase(KGYM_PHASE_TIMING))
    if (op->kind == gpu::OpKind::kKernel) out.kernel_names.insert(op->name);
  return out;
}

nlohmann::json TimingTrace(const WorkerTimeline& t, int n, int first, uint32_t phase) {
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> marks;  // tag -> (first begin, last end), device clock
  for (const auto& m : t.records.markers) {
    auto& e = marks[m.tag];
    if (m.begin && e.first == 0) e.first = m.gpu_ns;
    if (!m.begin) e.second = m.gpu_ns;
  }
  nlohmann::json span = nlohmann::json::array(), launch = nlohmann::json::array(), drain = nlohmann::json::array();
  for (int i = first; i < first + n; ++i) {
    uint64_t tag = kgym_make_tag(phase, static_cast<uint32_t>(i));
    gpu::CallSpan c = t.timeline.Call(tag);
    auto m = marks.find(tag);
    bool has = !c.empty() && m != marks.end();
    span.push_back(c.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.span_ns / 1e6));
    launch.push_back(has ? nlohmann::json((static_cast<double>(c.first_start_ns) - m->second.first) / 1e6) : nullptr);
    drain.push_back(has ? nlohmann::json((static_cast<double>(c.last_end_ns) - m->second.second) / 1e6) : nullptr);
  }
  return {{"span_ms", span}, {"launch_ms", launch}, {"drain_ms", drain}};
}

nlohmann::json TimingTraceIfAsked(const WorkerTimeline* t, const std::vector<double>& bracket_ms,
                                  const std::vector<double>& self_ms, const std::vector<double>& event_ms,
                                  const std::vector<double>& null_ms) {
  const char* on = std::getenv("KGYM_TRACE_TIMING");
  if (!on || std::string(on) != "1") return nullptr;
  nlohmann::json tr = t && t->ok ? TimingTrace(*t, static_cast<int>(bracket_ms.size())) : nlohmann::json::object();
  tr["bracket_ms"] = bracket_ms;
  tr["self_ms"] = self_ms;
  tr["event_ms"] = event_ms;
  tr["null_bracket_ms"] = null_ms;
  if (t && t->ok) tr["null"] = TimingTrace(*t, static_cast<int>(null_ms.size()), 0, KGYM_PHASE_HARNESS);
  return tr;
}

double RuntimeAllowanceMs(double bracket_ms) { return std::max(0.050, 0.05 * bracket_ms); }

double BurstPerCallMs(const std::vector<double>& model_ms, const std::vector<double>& null_ms, int k,
                      double ref_null_burst_ms) {
  if (k <= 0 || model_ms.empty() || null_ms.empty()) return -1;
  double null = Median(null_ms);
  if (ref_null_burst_ms > 0) null = std::min(null, 1.5 * ref_null_burst_ms + 0.05);
  return std::max(0.0, (*std::min_element(model_ms.begin(), model_ms.end()) - null) / k);
}

RuntimeChoice RuntimeFromTimeline(double span_ms, double bracket_ms, double overhead_ms, double host_ms,
                                  double burst_ms) {
  RuntimeChoice c;
  overhead_ms = std::max(0.0, overhead_ms);
  host_ms = std::max(0.0, host_ms);
  double seen = bracket_ms - overhead_ms;  // what the supervisor saw, less the harness's own cost
  double allowance = RuntimeAllowanceMs(bracket_ms);
  c.floor_ms = std::max(0.0, seen - host_ms - allowance);
  const double single_floor = c.floor_ms;
  if (burst_ms >= 0) {
    double relaxed = std::max(burst_ms - allowance, c.floor_ms - 0.10 * bracket_ms);
    c.floor_ms = std::max(0.0, std::min(c.floor_ms, relaxed));
  }
  std::ostringstream m;
  m.precision(4);
  if (span_ms >= 0 && span_ms >= c.floor_ms) {
    c.runtime_ms = span_ms;
    c.source = "timeline";
    return c;
  }
  c.source = "supervisor";
  if (span_ms < 0) {
    c.runtime_ms = std::max(0.0, seen - host_ms);
    m << "no usable kernel timeline: the supervisor's bracket of " << bracket_ms << " ms less the harness's own "
      << overhead_ms << " ms per call and the reference's host time outside its kernels (" << host_ms << " ms)";
  } else {
    c.runtime_ms = c.floor_ms;
    m << "the kernel timeline (" << span_ms << " ms) is shorter than the supervisor's bracket of the call ("
      << bracket_ms << " ms) less the harness's own " << overhead_ms << " ms, the reference's host time outside its "
      << "kernels (" << host_ms << " ms) and the allowance";
    if (burst_ms >= 0 && c.floor_ms < single_floor)
      m << ", and than pipelined calls' " << burst_ms << " ms per call less the allowance";
    m << ": raised to " << c.floor_ms << " ms (host work between the call's edges and its kernels' is charged)";
  }
  c.why = m.str();
  return c;
}

namespace {

// Net parenthesis depth change of a line of Python, ignoring brackets inside string literals and comments.
int ParenDelta(const std::string& line) {
  int d = 0;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char ch = line[i];
    if (quote) {
      if (ch == '\\')
        ++i;
      else if (ch == quote)
        quote = 0;
      continue;
    }
    if (ch == '#') break;
    if (ch == '"' || ch == '\'')
      quote = ch;
    else if (ch == '(' || ch == '[' || ch == '{')
      ++d;
    else if (ch == ')' || ch == ']' || ch == '}')
      --d;
  }
  return d;
}

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// Whether a decorator line ("@triton.jit", "@triton.autotune(...", "@jit") names a Triton wrapper: the last
// dotted part of its callee is jit, autotune or heuristics ("@torch.jit.script" names script, not jit).
bool TritonDecorator(const std::string& line) {
  size_t end = line.find_first_of("( \t", 1);
  std::string callee = line.substr(1, end == std::string::npos ? std::string::npos : end - 1);
  size_t dot = callee.rfind('.');
  std::string last = dot == std::string::npos ? callee : callee.substr(dot + 1);
  return last == "jit" || last == "autotune" || last == "heuristics";
}

// Whether the text between "__global__" and a kernel's name is declaration words only (identifiers and
// whitespace), setting *has_void when one is "void"; prose that mentions __global__ has punctuation or no void.
bool DeclarationWords(const std::string& s, bool* has_void) {
  std::string word;
  for (size_t i = 0; i <= s.size(); ++i) {
    char ch = i < s.size() ? s[i] : ' ';
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') {
      word.push_back(ch);
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(ch))) return false;
    if (word == "void") *has_void = true;
    word.clear();
  }
  return true;
}

}  // namespace

gpu::CandidateKernelNames CandidateKernelsFromSource(const std::string& code,
                                                     const std::set<std::string>& reference_kernels,
                                                     std::vector<std::string>* found) {
  std::vector<std::pair<std::string, bool>> names;  // (name, is_cuda)
  {  // Triton: decorators (possibly spanning lines) naming jit/autotune/heuristics, then "def NAME("
    std::istringstream in(code);
    std::string line;
    bool jit = false;
    int depth = 0;
    static const std::regex def_re(R"(^(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\()");
    while (std::getline(in, line)) {
      std::string t = Trim(line);
      if (depth > 0) {
        depth = std::max(0, depth + ParenDelta(t));
        continue;
      }
      if (t.empty() || t[0] == '#') continue;
      if (t[0] == '@') {
        if (TritonDecorator(t)) jit = true;
        depth = std::max(0, ParenDelta(t));
        continue;
      }
      std::smatch m;
      if (jit && std::regex_search(t, m, def_re)) names.emplace_back(m[1].str(), false);
      jit = false;
    }
  }
  {  // CUDA: "__global__ [qualifiers] type NAME(", skipping __launch_bounds__(...)
    const std::string kw = "__global__";
    for (size_t at = code.find(kw); at != std::string::npos; at = code.find(kw, at + kw.size())) {
      size_t p = at + kw.size();
      std::string name;
      bool has_void = false;  // a __global__ function returns void
      while (p < code.size() && code[p] != ';' && code[p] != '{') {
        size_t open = code.find('(', p);
        if (open == std::string::npos) break;
        size_t e = open;
        while (e > p && std::isspace(static_cast<unsigned char>(code[e - 1]))) --e;
        size_t b = e;
        while (b > p && (std::isalnum(static_cast<unsigned char>(code[b - 1])) || code[b - 1] == '_')) --b;
        std::string id = code.substr(b, e - b);
        if (!DeclarationWords(code.substr(p, b - p), &has_void)) break;
        if (id != "__launch_bounds__") {
          if (code.find_first_of(";{", p) > open && has_void) name = id;
          break;
        }
        size_t close = code.find(')', open);
        if (close == std::string::npos) break;
        p = close + 1;
      }
      if (!name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]))) names.emplace_back(name, true);
    }
  }
  gpu::CandidateKernelNames out;
  std::set<std::string> kept;
  for (const auto& [name, cuda] : names) {
    if (kept.count(name)) continue;
    gpu::CandidateKernelNames one;
    if (cuda)
      one.AddCudaSymbol(name);
    else
      one.AddTritonKernel(name);
    bool library = std::any_of(reference_kernels.begin(), reference_kernels.end(),
                               [&](const std::string& r) { return one.Matches(r); });
    if (library) continue;
    kept.insert(name);
    if (cuda)
      out.AddCudaSymbol(name);
    else
      out.AddTritonKernel(name);
    if (found) found->push_back(name);
  }
  return out;
}

namespace {

// The timed calls' spans, or why the candidate's timeline cannot be used ("" when it can).
std::string TimelineProblem(const CandidateTimingInputs& in, TimedSpans* sp) {
  const int n = static_cast<int>(in.bracket_ms.size());
  if (in.ref.span_median_ms < 0) return "the reference has no usable kernel timeline";
  if (!in.timeline) return "the candidate's worker had no kernel recorder";
  if (!in.timeline->ok) return in.timeline->problem;
  *sp = SpansOfTimedCalls(in.timeline->timeline, n, in.first_call);
  if (sp->missing > 0 || sp->span_ms.empty())
    return "the kernel timeline lacks " + std::to_string(sp->missing) + " of " + std::to_string(n) + " timed calls";
  return "";
}

// The harness's cost per call in this process and the reference's host time (see RuntimeFromTimeline).
struct Overheads {
  double harness_ms = 0, reference_host_ms = 0;
};

// The reported time: the timeline's spans, or the supervisor's brackets raised to their floor.
Overheads ChooseReportedTime(const CandidateTimingInputs& in, const TimedSpans& sp, bool usable,
                             CandidateTimingVerdict* v) {
  auto& md = v->metadata;
  const double bracket = Median(in.bracket_ms);
  const bool ref_tl = in.ref.span_median_ms >= 0;
  // The harness's cost per call in this process: its null calls' median bracket when it made them (capped, so a
  // process that slows its own null calls cannot buy much room), else the reference's bracket-less-span gap.
  Overheads o{in.ref.gap_ms, 0};
  if (!in.null_ms.empty()) {
    const double own = Median(in.null_ms);
    o.harness_ms = in.ref.null_ms > 0 ? std::min(own, 2 * in.ref.null_ms + 0.05) : own;
    if (in.ref.null_ms > 0) o.reference_host_ms = std::max(0.0, in.ref.gap_ms - in.ref.null_ms);
    md["timing_null_call_median_ms"] = own;
  }
  if (!ref_tl) {  // no timeline on either side: the supervisor's brackets, as on the CPU
    v->stats = ComputeTimingStats(in.bracket_ms);
    v->source = "supervisor";
  } else {
    const double span = usable ? Median(sp.span_ms) : -1;
    const double burst = BurstPerCallMs(in.burst_ms, in.null_burst_ms, in.burst_k, in.ref.null_burst_ms);
    if (burst >= 0) md["timing_burst_per_call_ms"] = burst;
    RuntimeChoice c = RuntimeFromTimeline(span, bracket, o.harness_ms, o.reference_host_ms, span >= 0 ? burst : -1);
    v->source = c.source;
    v->bursts_could_lower = span >= 0 && burst < 0 && c.source == "supervisor";
    md["timing_floor_ms"] = c.floor_ms;
    if (c.source == "timeline") {
      v->stats = ComputeTimingStats(sp.span_ms);
    } else {
      // The bracket series shifted by what the choice took off (its median is the reported time).
      const double off = bracket - c.runtime_ms;
      std::vector<double> adj;
      for (double b : in.bracket_ms) adj.push_back(std::max(0.0, b - off));
      v->stats = ComputeTimingStats(adj);
      md["timing_source_reason"] = c.why;
    }
  }
  md["timing_source"] = v->source;
  md["timing_supervisor_median_ms"] = bracket;
  if (ref_tl) {
    md["timing_harness_overhead_ms"] = o.harness_ms;
    md["timing_reference_host_ms"] = o.reference_host_ms;
  }
  return o;
}

void RecordCrossCheck(const CandidateTimingInputs& in, const TimedSpans& sp, const Overheads& o, nlohmann::json* md) {
  (*md)["timeline_span_median_ms"] = Median(sp.span_ms);
  (*md)["timeline_busy_median_ms"] = Median(sp.busy_ms);
  (*md)["timeline_kernel_sum_median_ms"] = Median(sp.kernel_ms);
  std::vector<double> span_us, ev_us, host_us;
  for (double x : sp.span_ms) span_us.push_back(x * 1e3);
  for (double x : in.event_ms) ev_us.push_back(x * 1e3);
  for (double x : in.bracket_ms) host_us.push_back(std::max(0.0, x - o.harness_ms - o.reference_host_ms) * 1e3);
  (*md)["timing_crosscheck"] = gpu::CrossCheckTiming(span_us, ev_us, host_us, in.crosscheck_threshold).ToJson();
}

// Caching on device time. The supervisor's bracket rule needs a fresh call to cost four times a repeat and 0.5 ms
// more, which a cache whose hit path still syncs and copies can stay under; the GPU's busy time tells the two paths
// apart far more sharply. An honest kernel does the same device work on a set it has not seen (the L2 is flushed
// before every call either way).
std::optional<Verdict> JudgeDeviceCaching(const CandidateTimingInputs& in, const TimedSpans& sp, nlohmann::json* md) {
  if (in.fresh_calls < 3) return std::nullopt;
  const int fresh_first = in.fresh_first >= 0 ? in.fresh_first : in.first_call + static_cast<int>(in.bracket_ms.size());
  TimedSpans fr = SpansOfTimedCalls(in.timeline->timeline, in.fresh_calls, fresh_first);
  if (fr.missing != 0 || fr.busy_ms.empty()) {
    (*md)["timeline_fresh_problem"] = "the kernel timeline lacks " + std::to_string(fr.missing) + " of " +
                                      std::to_string(in.fresh_calls) + " fresh-set calls";
    return std::nullopt;
  }
  const double med = Median(sp.busy_ms), fastest = *std::min_element(fr.busy_ms.begin(), fr.busy_ms.end());
  (*md)["timeline_fresh_busy_ms"] = fr.busy_ms;
  (*md)["timeline_repeat_ratio"] = fastest > 0 ? med / fastest : 1.0;
  return DeviceCachingRule(fr.busy_ms, sp.busy_ms);
}

// Coverage kernel by kernel (KernelGYM's keys included) and the decoy rule: a Triton candidate's own kernels must run
// with grad off (the timed calls) and on (the detection call).
std::optional<Verdict> JudgeCoverage(const CandidateTimingInputs& in, nlohmann::json* md) {
  const gpu::KernelTimeline& tl = in.timeline->timeline;
  std::vector<std::string> names;
  gpu::CandidateKernelNames cand = CandidateKernelsFromSource(in.code, in.ref.kernel_names, &names);
  (*md)["candidate_kernels"] = names;
  gpu::CoverageOptions copt;
  copt.coverage_floor = in.coverage_floor;
  gpu::CoverageReport timed = gpu::ComputeCoverage(tl.OpsForPhase(KGYM_PHASE_TIMING), cand, copt);
  const nlohmann::json kernelgym = timed.KernelGymMetadata();  // a named value: items() refers into it
  for (auto& [k, x] : kernelgym.items()) (*md)[k] = x;
  (*md)["coverage"] = timed.ToJson();
  if (timed.below_floor()) (*md)["coverage_below_floor"] = true;
  if (in.backend != "triton" || !in.detect_decoy || cand.empty()) return std::nullopt;
  gpu::CoverageReport grad = timed;
  if (in.grad_ran) {
    grad = gpu::ComputeCoverage(tl.OpsForPhase(KGYM_PHASE_DETECT_GRAD), cand, copt);
    (*md)["detect_grad_custom_launches"] = grad.custom_launches;
  } else {
    (*md)["detect_grad_error"] = in.grad_error.empty() ? "not run" : in.grad_error;
  }
  return TimelineDecoyRule(gpu::JudgeUsage(timed, grad));
}

// The roofline floor, judged only where the reference itself respects it (a task whose inputs need not all be read
// puts the reference below it too).
std::optional<Verdict> JudgeRoofline(const CandidateTimingInputs& in, double median_ms, nlohmann::json* md) {
  if (in.ref.bytes_moved <= 0 || in.ref.bandwidth_gbps <= 0) return std::nullopt;
  gpu::RooflineFloor floor;
  gpu::RooflineInputs ri;
  ri.bytes_moved = in.ref.bytes_moved;
  ri.bandwidth_bytes_per_s = in.ref.bandwidth_gbps * 1e9;
  if (!gpu::ComputeRooflineFloor(ri, &floor).ok()) return std::nullopt;
  gpu::RooflineCheck chk = gpu::CheckAgainstRoofline(median_ms * 1e6, floor, in.roofline_margin);
  gpu::RooflineCheck ref_chk = gpu::CheckAgainstRoofline(in.ref.span_median_ms * 1e6, floor, in.roofline_margin);
  (*md)["roofline"] = chk.ToJson();
  std::optional<Verdict> v = RooflineRule(chk, ref_chk);
  if (!v && chk.below_floor)
    (*md)["roofline"]["not_judged"] = "the reference is below the floor too (the task need not read all its inputs)";
  return v;
}

// Each series of the timed calls without the calls that shared the device (eval/contention.h).
void LeaveOutShared(const std::vector<bool>& shared, CandidateTimingInputs* in, TimedSpans* sp) {
  auto keep = [&](std::vector<double>* v) {
    if (v->size() != shared.size()) return;
    std::vector<double> kept;
    for (size_t i = 0; i < v->size(); ++i)
      if (!shared[i]) kept.push_back((*v)[i]);
    *v = std::move(kept);
  };
  for (auto* v : {&in->bracket_ms, &in->event_ms, &sp->span_ms, &sp->busy_ms, &sp->kernel_ms}) keep(v);
}

}  // namespace

CandidateTimingVerdict JudgeCandidateTiming(const CandidateTimingInputs& all) {
  CandidateTimingVerdict v;
  auto& md = v.metadata;
  TimedSpans sp;
  const std::string problem = TimelineProblem(all, &sp);
  if (!problem.empty()) md["timeline_problem"] = problem;
  CandidateTimingInputs in = all;
  if (std::count(all.shared.begin(), all.shared.end(), true) > 0) {
    in.fresh_first = all.fresh_first >= 0 ? all.fresh_first : all.first_call + static_cast<int>(all.bracket_ms.size());
    LeaveOutShared(all.shared, &in, &sp);
  }
  const Overheads o = ChooseReportedTime(in, sp, problem.empty(), &v);
  if (!problem.empty()) return v;
  RecordCrossCheck(in, sp, o, &md);
  std::optional<Verdict> hack = JudgeDeviceCaching(in, sp, &md);
  if (!hack) hack = JudgeCoverage(in, &md);
  if (!hack) hack = JudgeRoofline(in, v.stats.median, &md);
  if (hack) {
    v.hacked = true;
    v.decoy = hack->decoy();
    v.detail = hack->detail;
  }
  return v;
}

}  // namespace kgym
