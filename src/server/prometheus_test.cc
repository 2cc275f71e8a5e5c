// The Prometheus text shows the memory-admission gauges when the dispatcher reports them, and omits them otherwise.
#include <gtest/gtest.h>

#include "server/http_routes.h"

namespace kgym::http {
namespace {

TEST(Prometheus, MemoryAdmissionGaugesWhenPresent) {
  ServiceStats st;
  EXPECT_EQ(PrometheusText(st).find("kgym_memory_"), std::string::npos);
  AdmissionStats m;
  m.budget_bytes = 90'000'000'000;
  m.reserved_bytes = 45'000'000'000;
  m.resident_bytes = 8'000'000'000;
  m.in_flight = 2;
  m.waiting = 1;
  m.waited_total = 7;
  m.wait_seconds_total = 12.5;
  m.oversized_total = 1;
  st.dispatch.memory = m;
  std::string t = PrometheusText(st);
  EXPECT_NE(t.find("# TYPE kgym_memory_reserved_bytes gauge\nkgym_memory_reserved_bytes 45000000000\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("kgym_memory_budget_bytes 90000000000\n"), std::string::npos);
  EXPECT_NE(t.find("kgym_memory_resident_bytes 8000000000\n"), std::string::npos);
  EXPECT_NE(t.find("kgym_memory_admission_in_flight 2\n"), std::string::npos);
  EXPECT_NE(t.find("kgym_memory_admission_waiting 1\n"), std::string::npos);
  EXPECT_NE(t.find("kgym_memory_admission_waits_total 7\n"), std::string::npos);
  EXPECT_NE(t.find("kgym_memory_admission_wait_seconds_total 12.5\n"), std::string::npos);
  EXPECT_NE(t.find("kgym_memory_admission_oversized_total 1\n"), std::string::npos);
}

}  // namespace
}  // namespace kgym::http
