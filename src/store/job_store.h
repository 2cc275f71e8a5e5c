// JobStore: the durable record of every accepted evaluation job and its result, in an embedded SQLite
// database (WAL journal). The server writes a job here before it acknowledges the submission and writes the
// result here before it tells any client, so a process killed with SIGKILL loses nothing: on the next Open()
// Recover() turns jobs that were running back into queued ones and hands them to the scheduler again.
//
// A job is identified by its id (the KernelGYM task_id). Re-running a job (force_refresh) bumps its
// `generation`; a completion carrying an older generation is ignored, so a late result from a superseded run
// can never overwrite a newer one, and a job completes at most once per generation.
//
// A write that fails (disk full, an I/O error: IOError; the database busy: Unavailable) changes nothing, as SQLite
// rolls a failed statement back; the store stays usable and the caller decides (the service refuses a submission
// it could not store, and writes a result again until the store takes it). Writes are fault points
// (fault/fault_points.h): store.insert, store.update, store.commit.
//
// Thread-safe: one connection guarded by a mutex (SQLite serialises writers anyway).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kgym {

enum class JobState { kQueued, kRunning, kDone };
const char* JobStateName(JobState s);

struct JobRecord {
  std::string id;
  int64_t generation = 1;
  JobState state = JobState::kQueued;
  std::string request_json;  // the accepted request (kgym's EvalRequest fields plus scheduling fields)
  int priority = 1;          // 0 low, 1 normal, 2 high
  double deadline = 0;       // unix seconds; 0 = none
  int attempts = 0;          // evaluation attempts started (retries included)
  std::string device;        // where it ran last
  std::string result_json;   // EvalResult::ToJson(false) once done; "" before
  double created_at = 0, started_at = 0, finished_at = 0;  // unix seconds; 0 = not yet
  int completions = 0;  // results accepted for this job over its life (all generations)
  // Set with the result: the label it is listed and counted under (OutcomeLabel) and, for "hacked", the hack's
  // family (core/evaluation.h HackFamily). "" before.
  std::string outcome, hack_family;
};

// The label a result is listed and counted under: its "outcome", or "cancelled" when its outcome_detail says so
// (the service's counters use the same names). "invalid" for a result that is not a JSON object.
std::string OutcomeLabel(const std::string& result_json);

// A page of jobs, newest first (or oldest first). `outcome` filters: "" any, "queued" or "running" by state,
// anything else the OutcomeLabel of finished jobs. `id_contains` keeps jobs whose id contains it.
struct JobQuery {
  std::string id_contains;
  std::string outcome;
  int64_t offset = 0;
  int limit = 50;
  bool oldest_first = false;
};

// Finished jobs counted per time bucket (floor(finished_at / bucket_s) * bucket_s), label and hack family.
struct OutcomeCount {
  double bucket_start = 0;
  std::string outcome, hack_family;
  int64_t count = 0;
};

struct StoreOptions {
  // "normal" survives a killed process (the WAL write reaches the OS before commit returns);
  // "full" also survives power loss at the cost of an fsync per commit.
  std::string synchronous = "normal";
};

class JobStore {
 public:
  // Opens (creating if needed) the database at `path`; ":memory:" gives a private in-memory store.
  static Status Open(const std::string& path, const StoreOptions& options, std::unique_ptr<JobStore>* out);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // Inserts `job` if no job with its id exists (*inserted = true). Otherwise leaves the store unchanged,
  // sets *inserted = false and fills *existing.
  Status Insert(const JobRecord& job, bool* inserted, JobRecord* existing);

  // Starts a new generation of an existing job (force_refresh): queued, result cleared, generation + 1.
  // Creates the job if it does not exist. Fills *job with the stored row.
  Status Resubmit(JobRecord* job);

  // Marks generation `generation` of `id` running on `device` and counts an attempt. NotFound if the job
  // or that generation is gone; InvalidArgument if it is already done.
  Status MarkRunning(const std::string& id, int64_t generation, const std::string& device, double now);

  // Puts a job back in the queue (a retry after an infrastructure failure, or a lost worker).
  Status MarkQueued(const std::string& id, int64_t generation);

  // Stores the result of generation `generation`. *applied is false (and nothing changes) when the job is
  // already done or the generation is stale: completion is exactly-once per generation.
  Status Complete(const std::string& id, int64_t generation, const std::string& result_json, double now, bool* applied);

  Status Get(const std::string& id, JobRecord* out);

  // Called once at startup: running jobs become queued again; returns every queued job, oldest first.
  Status Recover(std::vector<JobRecord>* queued);

  // Every job not done (queued or running), oldest first; changes nothing.
  Status Unfinished(std::vector<JobRecord>* jobs);

  // Deletes finished jobs whose result is older than `finished_before` (unix seconds).
  Status ExpireFinished(double finished_before, int* removed);

  // Number of jobs per state.
  Status CountByState(std::map<JobState, int64_t>* counts);

  // The page of jobs that `query` selects and the number of jobs it matches (every page). Each filter and the
  // order are served by an index, so a page costs the same with 10 000 jobs as with 10.
  Status ListJobs(const JobQuery& query, std::vector<JobRecord>* page, int64_t* total);

  // Finished jobs with finished_at >= since, counted per bucket of bucket_s seconds, label and hack family.
  Status CountOutcomes(double since, double bucket_s, std::vector<OutcomeCount>* out);

 private:
  explicit JobStore(sqlite3* db);
  Status Exec(const char* sql);
  Status Prepare(const char* sql, sqlite3_stmt** stmt);
  Status GetLocked(const std::string& id, JobRecord* out);
  Status SelectLocked(const char* where, std::vector<JobRecord>* out);
  Status Migrate();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kgym
