// MemoryAdmission: limits the evaluations in flight by their host-memory footprint against a budget. An
// evaluation holds its reference data (every trial's and timing set's tensors, as sealed memfds) and its
// candidate's outputs in this process, and its workers hold copies: up to tens of GB for the largest tasks, so a
// count of evaluations alone does not keep a host from running out of memory.
//
// Contract:
// - Admit() blocks until the evaluation fits, then returns a Ticket; the reservation lasts as long as the Ticket.
//   It never fails for lack of memory: when nothing is in flight the next evaluation is admitted whatever its
//   size, so one bigger than the whole budget runs alone (one line on stderr says so) and nothing deadlocks.
// - Reserved bytes are: the private bytes of every evaluation in flight, plus the shared bytes of each distinct
//   shared key (the reference data, which evaluations of one task share) among those in flight and those the
//   `resident` callback reports as still held (the reference cache), plus a fixed reservation per evaluation of
//   unknown footprint.
// - Footprints per configuration: Admit(config_key, ...) uses what Learn() recorded for that key (the largest
//   measurement so far), re-read while it waits, so an evaluation queued behind the first of its configuration is
//   admitted with the footprint that first one measured. Before the first measurement, an Estimate() made once the
//   first one's reference data exists stands in for it.
// - Unknown footprint (the first evaluation of a configuration): admitted only while fewer than
//   `max_unknown_in_flight` (default 1; `kgym serve` 3; 1 until some footprint is known) other unknown ones are in
//   flight, with `unknown_bytes` reserved (default: half the budget until some footprint is known, then a quarter of
//   it or the largest footprint learned so far where that is more, up to the whole budget). One at a time
//   serialised a broad mix's first evaluations: on an H100, 21 KernelBench problems at once waited 14-30 s each for
//   memory while each first evaluation made its reference (2026-12-07).
// - Order: waiters are considered in arrival order, and a later one that fits may overtake an earlier one that
//   does not, but each waiter is overtaken at most `max_bypass` times: after that nobody behind it is admitted
//   until it is, so a large evaluation is not starved by a stream of small ones.
// - budget_bytes == 0 turns admission off (Admit returns at once).
//
// Thread-safe. The `resident` callback is called with the admission lock held; it must not call back in.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kgym {

struct Footprint {
  bool known = false;
  std::string shared_key;      // evaluations with the same key share shared_bytes ("" = nothing shared)
  uint64_t shared_bytes = 0;   // the reference data
  uint64_t private_bytes = 0;  // candidate outputs held here, worker peaks
  uint64_t Total() const { return shared_bytes + private_bytes; }
};

// Shared data held outside any evaluation (key, bytes), e.g. cached references.
using ResidentFn = std::function<std::vector<std::pair<std::string, uint64_t>>()>;

// How many first evaluations of configurations the evaluators of kgym serve, worker and suite admit at once.
constexpr int kServeUnknownInFlight = 3;

struct AdmissionOptions {
  uint64_t budget_bytes = 0;   // 0 = off
  uint64_t unknown_bytes = 0;  // reserved for an evaluation of unknown footprint; 0 = see the contract
  int max_bypass = 4;
  int max_unknown_in_flight = 1;
  ResidentFn resident;        // may be empty
  bool log_oversized = true;  // the stderr line when an evaluation larger than the budget is admitted
};

struct AdmissionStats {
  uint64_t budget_bytes = 0;
  uint64_t reserved_bytes = 0;  // in flight + resident, as admission counts them now
  uint64_t resident_bytes = 0;  // of which held outside evaluations (reference cache)
  int64_t in_flight = 0, waiting = 0, unknown_in_flight = 0;
  int64_t admitted_total = 0;
  int64_t waited_total = 0;      // admissions that had to wait
  int64_t oversized_total = 0;   // admitted alone because larger than the budget
  int64_t cancelled_total = 0;   // gave up waiting (cancel flag)
  int64_t references_total = 0;  // AdmitReference()s, in none of the counts above
  double wait_seconds_total = 0;
};

class MemoryAdmission {
 public:
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    double waited_s() const { return waited_s_; }
    bool oversized() const { return oversized_; }
    bool footprint_known() const { return known_; }
    uint64_t reserved_bytes() const { return reserved_; }  // what this evaluation added when it was admitted

   private:
    friend class MemoryAdmission;
    Ticket() = default;
    MemoryAdmission* owner_ = nullptr;
    uint64_t id_ = 0;
    double waited_s_ = 0;
    bool oversized_ = false;
    bool known_ = false;
    uint64_t reserved_ = 0;
  };

  explicit MemoryAdmission(AdmissionOptions options);
  ~MemoryAdmission();  // every Ticket must be gone

  // Blocks until `fp` fits (see the contract). `label` names the evaluation in the oversized line. Returns null
  // only when *cancel became true while waiting. on_wait runs once (without the lock) if it has to wait.
  std::unique_ptr<Ticket> Admit(const Footprint& fp, const std::string& label,
                                const std::atomic<bool>* cancel = nullptr, const std::function<void()>& on_wait = {});
  // The same with the footprint Learn() recorded for `config_key` (unknown until then).
  std::unique_ptr<Ticket> AdmitConfig(const std::string& config_key, const std::string& label,
                                      const std::atomic<bool>* cancel = nullptr,
                                      const std::function<void()>& on_wait = {});
  // AdmitConfig() for computing the reference data of `config_key` ahead of its evaluations (the scheduler's
  // look-ahead): admitted and reserved alike, but counted in references_total only, never as an evaluation.
  std::unique_ptr<Ticket> AdmitReference(const std::string& config_key, const std::atomic<bool>* cancel);
  // Records a measured footprint for `config_key`; later admissions of that key reserve the largest one seen.
  void Learn(const std::string& config_key, const Footprint& measured);
  // Records an estimate for `config_key` made before any evaluation of it has finished (once its reference data is
  // known): admissions use it like a measurement until the first Learn() for the key, which replaces it. Evaluations
  // of the key in flight with an unknown footprint take it too (they stop counting as unknown), and the waiters are
  // reconsidered at once. Ignored once the key has a measurement.
  void Estimate(const std::string& config_key, const Footprint& estimate);
  Footprint Known(const std::string& config_key) const;  // known == false if never learned

  AdmissionStats Stats() const;
  const AdmissionOptions& options() const { return opt_; }

 private:
  struct Entry {
    uint64_t id;
    std::string config_key;  // "" = fp as given
    Footprint fp;
    std::string label;
    int bypassed = 0;
    bool admitted = false;
    bool evaluation = true;  // false: AdmitReference()
  };
  uint64_t UnknownBytes() const;
  // Reserved bytes with the in-flight set plus `extra` (may be null); fills *resident when given.
  uint64_t ReservedLocked(const Entry* extra, uint64_t* resident) const;
  bool FitsLocked(const Entry& e) const;
  void ScanLocked();  // admits what can be admitted, in order
  void Release(uint64_t id);
  std::unique_ptr<Ticket> AdmitEntry(Entry e, const std::atomic<bool>* cancel, const std::function<void()>& on_wait);

  AdmissionOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_id_ = 1;
  std::list<Entry> waiting_;  // arrival order
  std::map<uint64_t, Entry> in_flight_;
  std::map<std::string, Footprint> learned_;  // config key -> largest measured footprint (or the estimate)
  std::set<std::string> estimated_;           // keys whose learned_ entry is an estimate, not yet measured
  AdmissionStats counters_;                   // the *_total fields
};

}  // namespace kgym
