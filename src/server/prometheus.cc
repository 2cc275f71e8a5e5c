// Prometheus text exposition (format 0.0.4) of the service counters.
#include <sstream>

#include "server/http_routes.h"

namespace kgym::http {

std::string PrometheusText(const ServiceStats& st) {
  std::ostringstream o;
  auto metric = [&](const char* name, const char* type, const char* help) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  const SchedulerStats& s = st.dispatch.sched;
  metric("kgym_queue_depth", "gauge", "Jobs waiting for a slot (including retries in backoff).");
  o << "kgym_queue_depth " << s.queued + s.retrying << "\n";
  metric("kgym_running", "gauge", "Evaluations in flight.");
  o << "kgym_running " << s.running << "\n";
  metric("kgym_jobs_accepted_total", "counter", "Jobs accepted (new or force-refreshed).");
  o << "kgym_jobs_accepted_total " << st.accepted << "\n";
  metric("kgym_jobs_deduplicated_total", "counter", "Submissions answered from an existing job with that id.");
  o << "kgym_jobs_deduplicated_total " << st.deduplicated << "\n";
  metric("kgym_results_expired_total", "counter", "Results deleted by the TTL.");
  o << "kgym_results_expired_total " << st.expired << "\n";
  metric("kgym_retries_total", "counter", "Evaluations retried after an infrastructure failure.");
  o << "kgym_retries_total " << s.retries << "\n";
  metric("kgym_outcomes_total", "counter", "Finished jobs by outcome.");
  for (const auto& [name, n] : st.outcomes) o << "kgym_outcomes_total{outcome=\"" << name << "\"} " << n << "\n";
  metric("kgym_phase_seconds", "summary", "Time spent in each evaluation phase.");
  for (const auto& [phase, p] : s.phases) {
    o << "kgym_phase_seconds_sum{phase=\"" << phase << "\"} " << p.total_s << "\n";
    o << "kgym_phase_seconds_count{phase=\"" << phase << "\"} " << p.count << "\n";
  }
  metric("kgym_device_slots", "gauge", "Evaluation slots per device.");
  for (const auto& d : s.devices) o << "kgym_device_slots{device=\"" << d.name << "\"} " << d.slots << "\n";
  metric("kgym_device_busy_seconds_total", "counter", "Wall time a device had at least one evaluation in flight.");
  for (const auto& d : s.devices) o << "kgym_device_busy_seconds_total{device=\"" << d.name << "\"} " << d.busy_s << "\n";
  metric("kgym_device_busy_fraction", "gauge", "Busy time over uptime per device.");
  for (const auto& d : s.devices)
    o << "kgym_device_busy_fraction{device=\"" << d.name << "\"} " << (d.uptime_s > 0 ? d.busy_s / d.uptime_s : 0)
      << "\n";
  if (const auto& m = st.dispatch.memory) {
    metric("kgym_memory_budget_bytes", "gauge", "Host memory the evaluations in flight may hold (--mem-budget).");
    o << "kgym_memory_budget_bytes " << m->budget_bytes << "\n";
    metric("kgym_memory_reserved_bytes", "gauge",
           "Host memory reserved by evaluations in flight plus cached reference data, as admission counts it.");
    o << "kgym_memory_reserved_bytes " << m->reserved_bytes << "\n";
    metric("kgym_memory_resident_bytes", "gauge", "Of the reserved bytes, reference data cached between evaluations.");
    o << "kgym_memory_resident_bytes " << m->resident_bytes << "\n";
    metric("kgym_memory_admission_in_flight", "gauge", "Evaluations admitted and not finished.");
    o << "kgym_memory_admission_in_flight " << m->in_flight << "\n";
    metric("kgym_memory_admission_waiting", "gauge", "Evaluations holding a slot but waiting for memory.");
    o << "kgym_memory_admission_waiting " << m->waiting << "\n";
    metric("kgym_memory_admission_waits_total", "counter", "Admissions that had to wait for memory.");
    o << "kgym_memory_admission_waits_total " << m->waited_total << "\n";
    metric("kgym_memory_admission_wait_seconds_total", "counter", "Time evaluations spent waiting for memory.");
    o << "kgym_memory_admission_wait_seconds_total " << m->wait_seconds_total << "\n";
    metric("kgym_memory_admission_oversized_total", "counter", "Evaluations larger than the budget, run alone.");
    o << "kgym_memory_admission_oversized_total " << m->oversized_total << "\n";
  }
  metric("kgym_uptime_seconds", "gauge", "Seconds since the server started.");
  o << "kgym_uptime_seconds " << st.uptime_s << "\n";
  return o.str();
}

}  // namespace kgym::http
