// The dashboard's queries of the JobStore: labels set with each result, pages by label and id, the outcome
// timeline, and the labelling of a store written before the labels existed.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "core/evaluation.h"
#include "store/job_store.h"

namespace kgym {
namespace {

std::string Result(const std::string& outcome, const std::string& detail = "") {
  return nlohmann::json{{"outcome", outcome}, {"outcome_detail", detail}}.dump();
}

void AddDone(JobStore* s, const std::string& id, double created, double finished, const std::string& result) {
  JobRecord j;
  j.id = id;
  j.request_json = "{}";
  j.created_at = created;
  bool inserted = false, applied = false;
  ASSERT_TRUE(s->Insert(j, &inserted, nullptr).ok());
  ASSERT_TRUE(s->Complete(id, 1, result, finished, &applied).ok());
  ASSERT_TRUE(applied);
}

std::vector<std::string> Ids(const std::vector<JobRecord>& page) {
  std::vector<std::string> ids;
  for (const auto& r : page) ids.push_back(r.id);
  return ids;
}

TEST(JobListing, LabelsComeFromTheResult) {
  EXPECT_EQ(HackFamily("hacked (output aliases input): the output is the input"), "output aliases input");
  EXPECT_EQ(HackFamily("hacked (decoy kernel) during timing"), "decoy kernel");
  EXPECT_EQ(HackFamily("mismatch on trial 2"), "");
  EXPECT_EQ(HackFamily("hacked (unterminated"), "");
  EXPECT_EQ(OutcomeLabel(Result("correct")), "correct");
  EXPECT_EQ(OutcomeLabel(Result("invalid", "cancelled")), "cancelled");
  EXPECT_EQ(OutcomeLabel("not json"), "invalid");
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(":memory:", {}, &s).ok());
  AddDone(s.get(), "h", 1, 2, Result("hacked", "hacked (caching): slow on fresh sets"));
  JobRecord r;
  ASSERT_TRUE(s->Get("h", &r).ok());
  EXPECT_EQ(r.outcome, "hacked");
  EXPECT_EQ(r.hack_family, "caching");
  JobRecord again = r;
  ASSERT_TRUE(s->Resubmit(&again).ok());  // a new generation has no label until its result
  EXPECT_EQ(again.outcome, "");
  EXPECT_EQ(again.hack_family, "");
}

TEST(JobListing, PagesFilterByLabelStateAndIdNewestFirst) {
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(":memory:", {}, &s).ok());
  for (int i = 0; i < 30; ++i)
    AddDone(s.get(), "task-" + std::to_string(100 + i), 1000 + i, 2000 + i,
            Result(i % 3 == 0 ? "correct" : "incorrect"));  // correct: task-100, 103, ..., 127
  JobRecord q;
  q.id = "queued-1";
  q.created_at = 5000;
  bool inserted;
  ASSERT_TRUE(s->Insert(q, &inserted, nullptr).ok());

  std::vector<JobRecord> page;
  int64_t total = 0;
  ASSERT_TRUE(s->ListJobs({"", "", 0, 3}, &page, &total).ok());
  EXPECT_EQ(total, 31);
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"queued-1", "task-129", "task-128"}));
  ASSERT_TRUE(s->ListJobs({"", "correct", 2, 2}, &page, &total).ok());
  EXPECT_EQ(total, 10);
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"task-121", "task-118"}));  // 127, 124 skipped
  ASSERT_TRUE(s->ListJobs({"-11", "", 0, 50}, &page, &total).ok());
  EXPECT_EQ(total, 10);  // task-110 .. task-119
  ASSERT_TRUE(s->ListJobs({"-11", "correct", 0, 50}, &page, &total).ok());
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"task-118", "task-115", "task-112"}));
  ASSERT_TRUE(s->ListJobs({"", "queued", 0, 50}, &page, &total).ok());
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"queued-1"}));
  ASSERT_TRUE(s->ListJobs({"", "", 0, 1, true}, &page, &total).ok());
  EXPECT_EQ(Ids(page), (std::vector<std::string>{"task-100"}));
  ASSERT_TRUE(s->ListJobs({"", "", 40, 10}, &page, &total).ok());  // past the end: empty page, same total
  EXPECT_TRUE(page.empty());
  EXPECT_EQ(total, 31);
  ASSERT_TRUE(s->ListJobs({"'; DROP TABLE jobs; --", "x' OR 1=1", 0, 10}, &page, &total).ok());
  EXPECT_EQ(total, 0);  // filters are bound values, never SQL
}

TEST(JobListing, CountsOutcomesPerBucketAndFamily) {
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(":memory:", {}, &s).ok());
  AddDone(s.get(), "a", 0, 60, Result("correct"));
  AddDone(s.get(), "b", 0, 119, Result("correct"));
  AddDone(s.get(), "c", 0, 120, Result("hacked", "hacked (thread injection): a thread outlived its call"));
  AddDone(s.get(), "d", 0, 125, Result("hacked", "hacked (caching): fresh sets slow"));
  AddDone(s.get(), "old", 0, 10, Result("correct"));
  std::vector<OutcomeCount> counts;
  ASSERT_TRUE(s->CountOutcomes(60, 60, &counts).ok());
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts[0].bucket_start, 60);
  EXPECT_EQ(counts[0].outcome, "correct");
  EXPECT_EQ(counts[0].count, 2);
  EXPECT_EQ(counts[1].bucket_start, 120);
  EXPECT_EQ(counts[1].hack_family, "caching");
  EXPECT_EQ(counts[2].hack_family, "thread injection");
  EXPECT_FALSE(s->CountOutcomes(0, 0, &counts).ok());
}

TEST(JobListing, OpeningAnOlderStoreLabelsItsFinishedJobs) {
  auto dir = std::filesystem::temp_directory_path() / ("kgym-listing-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "old.sqlite").string();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // The schema of the stores written before the labels existed, with one finished and one queued job.
  const char* old = R"sql(
CREATE TABLE jobs (id TEXT PRIMARY KEY, generation INTEGER NOT NULL, state INTEGER NOT NULL, request TEXT NOT NULL,
  priority INTEGER NOT NULL, deadline REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
  device TEXT NOT NULL DEFAULT '', result TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL,
  started_at REAL NOT NULL DEFAULT 0, finished_at REAL NOT NULL DEFAULT 0, completions INTEGER NOT NULL DEFAULT 0);
INSERT INTO jobs (id, generation, state, request, priority, deadline, result, created_at, finished_at)
  VALUES ('done', 1, 2, '{}', 1, 0, '{"outcome":"hacked","outcome_detail":"hacked (decoy kernel): unlaunched"}', 1, 2),
         ('waiting', 1, 0, '{}', 1, 0, '', 3, 0);
)sql";
  ASSERT_EQ(sqlite3_exec(db, old, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  {
    std::unique_ptr<JobStore> s;
    ASSERT_TRUE(JobStore::Open(path, {}, &s).ok());
    std::vector<JobRecord> page;
    int64_t total = 0;
    ASSERT_TRUE(s->ListJobs({"", "hacked", 0, 10}, &page, &total).ok());
    ASSERT_EQ(Ids(page), (std::vector<std::string>{"done"}));
    EXPECT_EQ(page[0].hack_family, "decoy kernel");
    EXPECT_EQ(page[0].result_json.find("unlaunched") != std::string::npos, true);  // nothing stored is lost
    ASSERT_TRUE(s->ListJobs({"", "", 0, 10}, &page, &total).ok());
    EXPECT_EQ(total, 2);
  }
  std::unique_ptr<JobStore> again;  // a second open finds the labels in place
  ASSERT_TRUE(JobStore::Open(path, {}, &again).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kgym
