#include "store/job_store.h"

#include <sqlite3.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "core/evaluation.h"
#include "fault/fault_points.h"

namespace kgym {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
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
  completions INTEGER NOT NULL DEFAULT 0,
  outcome TEXT NOT NULL DEFAULT '',
  hack_family TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, created_at);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs(finished_at) WHERE state = 2;
)sql";

// Created after Migrate() has added the label columns to a store written by an older kgym. They serve the
// dashboard's listing (newest first, by label, by id substring) and its outcome timeline without reading the
// large request/result columns (each query is answered from one covering index; a partial index on state = 2
// would not be covering for SQLite 3.40).
constexpr const char* kListIndexes = R"sql(
CREATE INDEX IF NOT EXISTS jobs_created ON jobs(created_at, id);
CREATE INDEX IF NOT EXISTS jobs_outcome ON jobs(outcome, created_at, id);
CREATE INDEX IF NOT EXISTS jobs_outcome_time ON jobs(state, finished_at, outcome, hack_family);
)sql";

constexpr const char* kColumns =
    "id, generation, state, request, priority, deadline, attempts, device, result, created_at, started_at, "
    "finished_at, completions, outcome, hack_family";

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
  r.outcome = ColText(s, 13);
  r.hack_family = ColText(s, 14);
  return r;
}

Status SqliteError(sqlite3* db) { return Status::IOError(std::string("sqlite: ") + sqlite3_errmsg(db)); }

// sqlite3_step of a write, or the result code an armed fault point (fault/fault_points.h) gives it: the statement then
// changes nothing, as SQLite leaves a write that fails (its changes rolled back).
int StepWrite(sqlite3_stmt* st, const char* point) {
  if (auto f = fault::Hit(point))
    return f->mode == "busy" ? SQLITE_BUSY : f->mode == "ioerr" ? SQLITE_IOERR : SQLITE_FULL;
  return sqlite3_step(st);
}

// The error of a write that returned `rc`: Unavailable when the database is busy (another writer holds it: worth
// retrying), else IOError ("database or disk is full", "disk I/O error", ...).
Status WriteError(sqlite3* db, int rc) {
  const std::string msg =
      std::string("sqlite: ") + (sqlite3_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  const int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED ? Status::Unavailable(msg) : Status::IOError(msg);
}

// The WHERE clause of a JobQuery; ?1 is id_contains, ?2 the outcome label.
std::string QueryFilter(const JobQuery& q) {
  std::string where = "(?1 = '' OR instr(id, ?1) > 0)";
  if (q.outcome == "queued")
    where += " AND state = 0";
  else if (q.outcome == "running")
    where += " AND state = 1";
  else if (!q.outcome.empty())
    where += " AND outcome = ?2";  // labelled = done: served by jobs_outcome alone
  return where;
}
}  // namespace

namespace {
// The label and hack family of a result, from one parse.
void ResultLabels(const std::string& result_json, std::string* label, std::string* family) {
  family->clear();
  auto j = nlohmann::json::parse(result_json, nullptr, false);
  *label = "invalid";
  if (!j.is_object()) return;
  const auto& outcome = j.value("outcome", nlohmann::json());
  const auto& detail = j.value("outcome_detail", nlohmann::json());
  if (outcome.is_string()) *label = outcome.get<std::string>();
  if (detail.is_string() && detail == "cancelled") *label = "cancelled";
  if (*label == "hacked" && detail.is_string()) *family = HackFamily(detail.get<std::string>());
}
}  // namespace

std::string OutcomeLabel(const std::string& result_json) {
  std::string label, family;
  ResultLabels(result_json, &label, &family);
  return label;
}

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
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
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
  if (s.ok()) s = store->Migrate();
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
        "result = '', started_at = 0, finished_at = 0, attempts = 0, created_at = ?5, outcome = '', "
        "hack_family = '' WHERE id = ?1",
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
        "UPDATE jobs SET state = 2, result = ?3, finished_at = ?4, completions = completions + 1, outcome = ?5, "
        "hack_family = ?6 WHERE id = ?1 AND generation = ?2 AND state != 2",
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
    if (int rc = StepWrite(st, "store.insert"); rc != SQLITE_DONE) return WriteError(impl_->db, rc);
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
    if (int rc = StepWrite(st, "store.insert"); rc != SQLITE_DONE) return WriteError(impl_->db, rc);
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
    if (int rc = StepWrite(st, "store.insert"); rc != SQLITE_DONE) return WriteError(impl_->db, rc);
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
  if (int rc = StepWrite(st, "store.update"); rc != SQLITE_DONE) return WriteError(impl_->db, rc);
  if (sqlite3_changes(impl_->db) == 0) return Status::NotFound("job '" + id + "' is gone, done or superseded");
  return Status::Ok();
}

Status JobStore::MarkQueued(const std::string& id, int64_t generation) {
  std::lock_guard<std::mutex> l(impl_->mu);
  sqlite3_stmt* st = impl_->queued;
  StmtGuard g{st};
  BindText(st, 1, id);
  sqlite3_bind_int64(st, 2, generation);
  if (int rc = StepWrite(st, "store.update"); rc != SQLITE_DONE) return WriteError(impl_->db, rc);
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
  std::string label, family;
  ResultLabels(result_json, &label, &family);
  BindText(st, 5, label);
  BindText(st, 6, family);
  if (int rc = StepWrite(st, "store.commit"); rc != SQLITE_DONE) return WriteError(impl_->db, rc);
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
  return SelectLocked("state = 0", queued);
}

Status JobStore::Unfinished(std::vector<JobRecord>* jobs) {
  std::lock_guard<std::mutex> l(impl_->mu);
  return SelectLocked("state != 2", jobs);
}

Status JobStore::SelectLocked(const char* where, std::vector<JobRecord>* out) {
  sqlite3_stmt* st = nullptr;
  Status s =
      Prepare(("SELECT " + std::string(kColumns) + " FROM jobs WHERE " + where + " ORDER BY created_at").c_str(), &st);
  if (!s.ok()) return s;
  out->clear();
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) out->push_back(RowToRecord(st));
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return SqliteError(impl_->db);
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
  while (sqlite3_step(st) == SQLITE_ROW)
    (*counts)[StateFromInt(sqlite3_column_int(st, 0))] = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  return Status::Ok();
}

}  // namespace kgym

namespace kgym {

Status JobStore::Migrate() {
  sqlite3_stmt* st = nullptr;
  Status s = Prepare("SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name = 'outcome'", &st);
  if (!s.ok()) return s;
  bool has_labels = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
  sqlite3_finalize(st);
  if (!has_labels) {
    // A store written before the labels existed: add them and label its finished jobs in one transaction.
    s = Exec(
        "BEGIN IMMEDIATE; ALTER TABLE jobs ADD COLUMN outcome TEXT NOT NULL DEFAULT ''; "
        "ALTER TABLE jobs ADD COLUMN hack_family TEXT NOT NULL DEFAULT '';");
    sqlite3_stmt *read = nullptr, *write = nullptr;
    if (s.ok()) s = Prepare("SELECT id, result FROM jobs WHERE state = 2", &read);
    if (s.ok()) s = Prepare("UPDATE jobs SET outcome = ?2, hack_family = ?3 WHERE id = ?1", &write);
    while (s.ok() && sqlite3_step(read) == SQLITE_ROW) {
      std::string label, family;
      ResultLabels(ColText(read, 1), &label, &family);
      StmtGuard g{write};
      BindText(write, 1, ColText(read, 0));
      BindText(write, 2, label);
      BindText(write, 3, family);
      if (sqlite3_step(write) != SQLITE_DONE) s = SqliteError(impl_->db);
    }
    sqlite3_finalize(read);
    sqlite3_finalize(write);
    s = s.ok() ? Exec("COMMIT;") : (Exec("ROLLBACK;"), s);
    if (!s.ok()) return s;
  }
  return Exec(kListIndexes);
}

Status JobStore::ListJobs(const JobQuery& q, std::vector<JobRecord>* page, int64_t* total) {
  std::lock_guard<std::mutex> l(impl_->mu);
  const std::string where = QueryFilter(q);
  const std::string order = q.oldest_first ? "created_at ASC, id ASC" : "created_at DESC, id DESC";
  auto bind = [&](sqlite3_stmt* st) {
    BindText(st, 1, q.id_contains);
    BindText(st, 2, q.outcome);
  };
  sqlite3_stmt* st = nullptr;
  Status s = Prepare(("SELECT COUNT(*) FROM jobs WHERE " + where).c_str(), &st);
  if (!s.ok()) return s;
  bind(st);
  int rc = sqlite3_step(st);
  *total = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) return SqliteError(impl_->db);
  // Ids first (from the indexes alone), then each listed row: skipped pages never read a result.
  s = Prepare(("SELECT id FROM jobs WHERE " + where + " ORDER BY " + order + " LIMIT ?3 OFFSET ?4").c_str(), &st);
  if (!s.ok()) return s;
  bind(st);
  sqlite3_bind_int(st, 3, std::max(0, q.limit));
  sqlite3_bind_int64(st, 4, std::max<int64_t>(0, q.offset));
  std::vector<std::string> ids;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) ids.push_back(ColText(st, 0));
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return SqliteError(impl_->db);
  page->clear();
  for (const auto& id : ids) {
    JobRecord r;
    if (GetLocked(id, &r).ok()) page->push_back(std::move(r));
  }
  return Status::Ok();
}

Status JobStore::CountOutcomes(double since, double bucket_s, std::vector<OutcomeCount>* out) {
  if (!(bucket_s > 0)) return Status::InvalidArgument("bucket_s must be positive");
  std::lock_guard<std::mutex> l(impl_->mu);
  sqlite3_stmt* st = nullptr;
  Status s = Prepare(
      "SELECT CAST(finished_at / ?2 AS INTEGER) AS b, outcome, hack_family, COUNT(*) FROM jobs "
      "WHERE state = 2 AND finished_at >= ?1 GROUP BY b, outcome, hack_family ORDER BY b",
      &st);
  if (!s.ok()) return s;
  sqlite3_bind_double(st, 1, since);
  sqlite3_bind_double(st, 2, bucket_s);
  out->clear();
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    out->push_back({static_cast<double>(sqlite3_column_int64(st, 0)) * bucket_s, ColText(st, 1), ColText(st, 2),
                    sqlite3_column_int64(st, 3)});
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? Status::Ok() : SqliteError(impl_->db);
}

}  // namespace kgym
