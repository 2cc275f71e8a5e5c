#include "store/job_store.h"

#include <sqlite3.h>

#include <mutex>

namespace kgym {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kDone: return "done";
  }
  return "queued";
}

namespace {
JobState StateFromInt(int v) {
  if (v == 1) return JobState::kRunning;
  if (v == 2) return JobState::kDone;
  return JobState::kQueued;
}

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,
  state INTEGER NOT NULL,
  request TEXT NOT NULL,
  priority INTEGER NOT NULL,
  deadline REAL NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  device TEXT NOT NULL DEFAULT '',
  result TEXT NOT NULL DEFAULT '',
  created_at REAL NOT NULL,
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  completions INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, created_at);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs(finished_at) WHERE state = 2;
)sql";

constexpr const char* kColumns =
    "id, generation, state, request, priority, deadline, attempts, device, result, created_at, started_at, "
    "finished_at, completions";

// RAII reset of a cached statement.
struct StmtGuard {
  sqlite3_stmt* s;
  ~StmtGuard() {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
};

void BindText(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

std::string ColText(sqlite3_stmt* s, int i) {
  const unsigned char* p = sqlite3_column_text(s, i);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s, i)) : std::string();
}

JobRecord RowToRecord(sqlite3_stmt* s) {
  JobRecord r;
  r.id = ColText(s, 0);
  r.generation = sqlite3_column_int64(s, 1);
  r.state = StateFromInt(sqlite3_column_int(s, 2));
  r.request_json = ColText(s, 3);
  r.priority = sqlite3_column_int(s, 4);
  r.deadline = sqlite3_column_double(s, 5);
  r.attempts = sqlite3_column_int(s, 6);
  r.device = ColText(s, 7);
  r.result_json = ColText(s, 8);
  r.created_at = sqlite3_column_double(s, 9);
  r.started_at = sqlite3_column_double(s, 10);
  r.finished_at = sqlite3_column_double(s, 11);
  r.completions = sqlite3_column_int(s, 12);
  return r;
}
}  // namespace

struct JobStore::Impl {
  sqlite3* db = nullptr;
  std::mutex mu;
  sqlite3_stmt* insert = nullptr;
  sqlite3_stmt* get = nullptr;
  sqlite3_stmt* resubmit = nullptr;
  sqlite3_stmt* running = nullptr;
  sqlite3_stmt* queued = nullptr;
  sqlite3_stmt* complete = nullptr;
  ~Impl() {
    for (auto* s : {insert, get, resubmit, running, queued, complete}) sqlite3_finalize(s);
    if (db) sqlite3_close(db);
  }
};

JobStore::JobStore(sqlite3* db) : impl_(new Impl) { impl_->db = db; }
JobStore::~JobStore() = default;

Status JobStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(impl_->db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::IOError("sqlite: " + msg);
  }
  return Status::Ok();
}

Status JobStore::Prepare(const char* sql, sqlite3_stmt** stmt) {
  if (sqlite3_prepare_v2(impl_->db, sql, -1, stmt, nullptr) != SQLITE_OK)
    return Status::Internal(std::string("sqlite prepare: ") + sqlite3_errmsg(impl_->db));
  return Status::Ok();
}

Status JobStore::Open(const std::string& path, const StoreOptions& options, std::unique_ptr<JobStore>* out) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::IOError("cannot open store '" + path + "': " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<JobStore> store(new JobStore(db));
  std::string sync = options.synchronous == "full" ? "FULL" : "NORMAL";
  std::string pragmas = "PRAGMA journal_mode=WAL; PRAGMA synchronous=" + sync + "; PRAGMA foreign_keys=ON;";
  Status s = store->Exec(pragmas.c_str());
  if (s.ok()) s = store->Exec(kSchema);
  std::string cols = kColumns;
  auto& im = *store->impl_;
  if (s.ok())
    s = store->Prepare(
        "INSERT OR IGNORE INTO jobs (id, generation, state, request, priority, deadline, created_at) "
        "VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6)",
        &im.insert);
  if (s.ok()) s = store->Prepare(("SELECT " + cols + " FROM jobs WHERE id = ?1").c_str(), &im.get);
  if (s.ok())
    s = store->Prepare(
        "UPDATE jobs SET generation = generation + 1, state = 0, request = ?2, priority = ?3, deadline = ?4, "
        "result = '', started_at = 0, finished_at = 0, attempts = 0, created_at = ?5 WHERE id = ?1",
        &im.resubmit);
  if (s.ok())
    s = store->Prepare(
        "UPDATE jobs SET state = 1, device = ?3, started_at = ?4, attempts = attempts + 1 "
        "WHERE id = ?1 AND generation = ?2 AND state != 2",
        &im.running);
  if (s.ok())
    s = store->Prepare("UPDATE jobs SET state = 0 WHERE id = ?1 AND generation = ?2 AND state != 2", &im.queued);
  if (s.ok())
    s = store->Prepare(
        "UPDATE jobs SET state = 2, result = ?3, finished_at = ?4, completions = completions + 1 "
        "WHERE id = ?1 AND generation = ?2 AND state != 2",
        &im.complete);
  if (!s.ok()) return s;
  *out = std::move(store);
  return Status::Ok();
}

Status JobStore::GetLocked(const std::string& id, JobRecord* out) {
  sqlite3_stmt* st = impl_->get;
  StmtGuard g{st};
  BindText(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *out = RowToRecord(st);
    return Status::Ok();
  }
  if (rc == SQLITE_DONE) return Status::NotFound("no job with id '" + id + "'");
  return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
}

Status JobStore::Insert(const JobRecord& job, bool* inserted, JobRecord* existing) {
  std::lock_guard<std::mutex> l(impl_->mu);
  sqlite3_stmt* st = impl_->insert;
  {
    StmtGuard g{st};
    BindText(st, 1, job.id);
    sqlite3_bind_int64(st, 2, job.generation);
    BindText(st, 3, job.request_json);
    sqlite3_bind_int(st, 4, job.priority);
    sqlite3_bind_double(st, 5, job.deadline);
    sqlite3_bind_double(st, 6, job.created_at);
    if (sqlite3_step(st) != SQLITE_DONE) return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
  }
  *inserted = sqlite3_changes(impl_->db) == 1;
  if (!*inserted && existing) return GetLocked(job.id, existing);
  return Status::Ok();
}

Status JobStore::Resubmit(JobRecord* job) {
  std::lock_guard<std::mutex> l(impl_->mu);
  {
    sqlite3_stmt* st = impl_->resubmit;
    StmtGuard g{st};
    BindText(st, 1, job->id);
    BindText(st, 2, job->request_json);
    sqlite3_bind_int(st, 3, job->priority);
    sqlite3_bind_double(st, 4, job->deadline);
    sqlite3_bind_double(st, 5, job->created_at);
    if (sqlite3_step(st) != SQLITE_DONE) return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
  }
  if (sqlite3_changes(impl_->db) == 0) {
    sqlite3_stmt* st = impl_->insert;
    StmtGuard g{st};
    BindText(st, 1, job->id);
    sqlite3_bind_int64(st, 2, 1);
    BindText(st, 3, job->request_json);
    sqlite3_bind_int(st, 4, job->priority);
    sqlite3_bind_double(st, 5, job->deadline);
    sqlite3_bind_double(st, 6, job->created_at);
    if (sqlite3_step(st) != SQLITE_DONE) return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
  }
  return GetLocked(job->id, job);
}

Status JobStore::MarkRunning(const std::string& id, int64_t generation, const std::string& device, double now) {
  std::lock_guard<std::mutex> l(impl_->mu);
  sqlite3_stmt* st = impl_->running;
  StmtGuard g{st};
  BindText(st, 1, id);
  sqlite3_bind_int64(st, 2, generation);
  BindText(st, 3, device);
  sqlite3_bind_double(st, 4, now);
  if (sqlite3_step(st) != SQLITE_DONE) return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
  if (sqlite3_changes(impl_->db) == 0) return Status::NotFound("job '" + id + "' is gone, done or superseded");
  return Status::Ok();
}

Status JobStore::MarkQueued(const std::string& id, int64_t generation) {
  std::lock_guard<std::mutex> l(impl_->mu);
  sqlite3_stmt* st = impl_->queued;
  StmtGuard g{st};
  BindText(st, 1, id);
  sqlite3_bind_int64(st, 2, generation);
  if (sqlite3_step(st) != SQLITE_DONE) return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
  return Status::Ok();
}

Status JobStore::Complete(const std::string& id, int64_t generation, const std::string& result_json, double now,
                          bool* applied) {
  std::lock_guard<std::mutex> l(impl_->mu);
  sqlite3_stmt* st = impl_->complete;
  StmtGuard g{st};
  BindText(st, 1, id);
  sqlite3_bind_int64(st, 2, generation);
  BindText(st, 3, result_json);
  sqlite3_bind_double(st, 4, now);
  if (sqlite3_step(st) != SQLITE_DONE) return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
  *applied = sqlite3_changes(impl_->db) == 1;
  return Status::Ok();
}

Status JobStore::Get(const std::string& id, JobRecord* out) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return GetLocked(id, out);
}

Status JobStore::Recover(std::vector<JobRecord>* queued) {
  std::lock_guard<std::mutex> l(impl_->mu);
  Status s = Exec("UPDATE jobs SET state = 0 WHERE state = 1");
  if (!s.ok()) return s;
  sqlite3_stmt* st = nullptr;
  s = Prepare(("SELECT " + std::string(kColumns) + " FROM jobs WHERE state = 0 ORDER BY created_at").c_str(), &st);
  if (!s.ok()) return s;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) queued->push_back(RowToRecord(st));
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
  return Status::Ok();
}

Status JobStore::ExpireFinished(double finished_before, int* removed) {
  std::lock_guard<std::mutex> l(impl_->mu);
  sqlite3_stmt* st = nullptr;
  Status s = Prepare("DELETE FROM jobs WHERE state = 2 AND finished_at < ?1", &st);
  if (!s.ok()) return s;
  sqlite3_bind_double(st, 1, finished_before);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(impl_->db));
  *removed = sqlite3_changes(impl_->db);
  return Status::Ok();
}

Status JobStore::CountByState(std::map<JobState, int64_t>* counts) {
  std::lock_guard<std::mutex> l(impl_->mu);
  sqlite3_stmt* st = nullptr;
  Status s = Prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state", &st);
  if (!s.ok()) return s;
  counts->clear();
  while (sqlite3_step(st) == SQLITE_ROW) (*counts)[StateFromInt(sqlite3_column_int(st, 0))] = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  return Status::Ok();
}

}  // namespace kgym
