// Prometheus text exposition (format 0.0.4) of the service counters.
#include <sstream>

#include "server/http_routes.h"

namespace kgym::http {

std::string PrometheusText(const ServiceStats& st) {
  std::ostringstream o;
  auto metric = [&](const char* name, const char* type, const char* help) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  auto scalar = [&](const char* name, const char* type, const char* help,
                    auto value) {  // a metric without labels
    metric(name, type, help);
    o << name << " " << value << "\n";
  };
  const SchedulerStats& s = st.dispatch.sched;
  scalar("kgym_queue_depth", "gauge", "Jobs waiting for a slot (including retries in backoff).", s.queued + s.retrying);
  scalar("kgym_running", "gauge", "Evaluations in flight (those waiting for memory included).", s.running);
  scalar("kgym_waiting_memory", "gauge", "Evaluations on a slot still waiting for memory admission.", s.waiting_memory);
  scalar("kgym_jobs_accepted_total", "counter", "Jobs accepted (new or force-refreshed).", st.accepted);
  scalar("kgym_jobs_deduplicated_total", "counter", "Submissions answered from an existing job with that id.",
         st.deduplicated);
  scalar("kgym_results_expired_total", "counter", "Results deleted by the TTL.", st.expired);
  scalar("kgym_store_write_failures_total", "counter", "Results the store refused (each written again until taken).",
         st.store_failures);
  scalar("kgym_retries_total", "counter", "Evaluations retried after an infrastructure failure.", s.retries);
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
  for (const auto& d : s.devices)
    o << "kgym_device_busy_seconds_total{device=\"" << d.name << "\"} " << d.busy_s << "\n";
  metric("kgym_device_busy_fraction", "gauge", "Busy time over uptime per device.");
  for (const auto& d : s.devices)
    o << "kgym_device_busy_fraction{device=\"" << d.name << "\"} " << (d.uptime_s > 0 ? d.busy_s / d.uptime_s : 0)
      << "\n";
  metric("kgym_references_prepared_total", "counter", "References the look-ahead prepared ahead of their jobs.");
  for (const auto& d : s.devices)
    o << "kgym_references_prepared_total{device=\"" << d.name << "\"} " << d.references_prepared << "\n";
  metric("kgym_reference_prepare_seconds_total", "counter", "Time the look-ahead spent preparing references.");
  for (const auto& d : s.devices)
    o << "kgym_reference_prepare_seconds_total{device=\"" << d.name << "\"} " << d.reference_prepare_s << "\n";
  if (const auto& m = st.dispatch.memory) {
    scalar("kgym_memory_budget_bytes", "gauge", "Host memory the evaluations in flight may hold (--mem-budget).",
           m->budget_bytes);
    scalar("kgym_memory_reserved_bytes", "gauge",
           "Host memory reserved by evaluations in flight plus cached reference data, as admission "
           "counts it.",
           m->reserved_bytes);
    scalar("kgym_memory_resident_bytes", "gauge", "Of the reserved bytes, reference data cached between evaluations.",
           m->resident_bytes);
    scalar("kgym_memory_admission_in_flight", "gauge", "Evaluations admitted and not finished.", m->in_flight);
    scalar("kgym_memory_admission_waiting", "gauge", "Evaluations holding a slot but waiting for memory.", m->waiting);
    scalar("kgym_memory_admission_waits_total", "counter", "Admissions that had to wait for memory.", m->waited_total);
    scalar("kgym_memory_admission_wait_seconds_total", "counter", "Time evaluations spent waiting for memory.",
           m->wait_seconds_total);
    scalar("kgym_memory_admission_oversized_total", "counter", "Evaluations larger than the budget, run alone.",
           m->oversized_total);
  }
  scalar("kgym_uptime_seconds", "gauge", "Seconds since the server started.", st.uptime_s);
  return o.str();
}

}  // namespace kgym::http
