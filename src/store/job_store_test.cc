#include "store/job_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "fault/fault_points.h"

namespace kgym {
namespace {

JobRecord Job(const std::string& id, int priority = 1) {
  JobRecord j;
  j.id = id;
  j.request_json = R"({"task_id":")" + id + R"("})";
  j.priority = priority;
  j.created_at = 100;
  return j;
}

std::string TempDb() {
  auto dir = std::filesystem::temp_directory_path() / ("kgym-store-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto p = dir / ("db-" + std::to_string(std::rand()) + ".sqlite");
  return p.string();
}

TEST(JobStore, InsertIsIdempotentById) {
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(":memory:", {}, &s).ok());
  bool inserted = false;
  JobRecord existing;
  ASSERT_TRUE(s->Insert(Job("a"), &inserted, &existing).ok());
  EXPECT_TRUE(inserted);
  JobRecord again = Job("a");
  again.request_json = "{\"other\":1}";
  ASSERT_TRUE(s->Insert(again, &inserted, &existing).ok());
  EXPECT_FALSE(inserted);
  EXPECT_EQ(existing.request_json, R"({"task_id":"a"})");
  EXPECT_EQ(existing.state, JobState::kQueued);
}

TEST(JobStore, CompleteAppliesOncePerGeneration) {
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(":memory:", {}, &s).ok());
  bool inserted, applied;
  ASSERT_TRUE(s->Insert(Job("a"), &inserted, nullptr).ok());
  ASSERT_TRUE(s->MarkRunning("a", 1, "cpu", 101).ok());
  ASSERT_TRUE(s->Complete("a", 1, "{\"r\":1}", 102, &applied).ok());
  EXPECT_TRUE(applied);
  ASSERT_TRUE(s->Complete("a", 1, "{\"r\":2}", 103, &applied).ok());
  EXPECT_FALSE(applied);
  JobRecord r;
  ASSERT_TRUE(s->Get("a", &r).ok());
  EXPECT_EQ(r.result_json, "{\"r\":1}");
  EXPECT_EQ(r.completions, 1);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.device, "cpu");
  // Running again after done is refused.
  EXPECT_FALSE(s->MarkRunning("a", 1, "cpu", 104).ok());
}

TEST(JobStore, ResubmitStartsANewGenerationAndStaleResultsAreDropped) {
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(":memory:", {}, &s).ok());
  bool inserted, applied;
  ASSERT_TRUE(s->Insert(Job("a"), &inserted, nullptr).ok());
  ASSERT_TRUE(s->MarkRunning("a", 1, "cpu", 101).ok());
  JobRecord again = Job("a", 2);
  ASSERT_TRUE(s->Resubmit(&again).ok());
  EXPECT_EQ(again.generation, 2);
  EXPECT_EQ(again.state, JobState::kQueued);
  ASSERT_TRUE(s->Complete("a", 1, "{\"old\":1}", 102, &applied).ok());
  EXPECT_FALSE(applied);
  ASSERT_TRUE(s->Complete("a", 2, "{\"new\":1}", 103, &applied).ok());
  EXPECT_TRUE(applied);
  JobRecord fresh = Job("b");
  ASSERT_TRUE(s->Resubmit(&fresh).ok());  // resubmitting an unknown id creates it
  EXPECT_EQ(fresh.generation, 1);
}

TEST(JobStore, RecoverRequeuesRunningJobsAfterReopen) {
  std::string path = TempDb();
  {
    std::unique_ptr<JobStore> s;
    ASSERT_TRUE(JobStore::Open(path, {}, &s).ok());
    bool inserted, applied;
    for (const char* id : {"q", "r", "d"}) ASSERT_TRUE(s->Insert(Job(id), &inserted, nullptr).ok());
    ASSERT_TRUE(s->MarkRunning("r", 1, "cpu", 101).ok());
    ASSERT_TRUE(s->MarkRunning("d", 1, "cpu", 101).ok());
    ASSERT_TRUE(s->Complete("d", 1, "{}", 102, &applied).ok());
  }  // closed without any shutdown step, as after a crash
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(path, {}, &s).ok());
  std::vector<JobRecord> queued;
  ASSERT_TRUE(s->Recover(&queued).ok());
  std::vector<std::string> ids;
  for (auto& j : queued) ids.push_back(j.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"q", "r"}));
  JobRecord d;
  ASSERT_TRUE(s->Get("d", &d).ok());
  EXPECT_EQ(d.state, JobState::kDone);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(JobStore, ExpireRemovesOnlyOldFinishedJobs) {
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(":memory:", {}, &s).ok());
  bool inserted, applied;
  for (const char* id : {"old", "new", "queued"}) ASSERT_TRUE(s->Insert(Job(id), &inserted, nullptr).ok());
  ASSERT_TRUE(s->Complete("old", 1, "{}", 10, &applied).ok());
  ASSERT_TRUE(s->Complete("new", 1, "{}", 1000, &applied).ok());
  int removed = 0;
  ASSERT_TRUE(s->ExpireFinished(500, &removed).ok());
  EXPECT_EQ(removed, 1);
  JobRecord r;
  EXPECT_EQ(s->Get("old", &r).code(), Status::Code::kNotFound);
  EXPECT_TRUE(s->Get("new", &r).ok());
  EXPECT_TRUE(s->Get("queued", &r).ok());
  std::map<JobState, int64_t> counts;
  ASSERT_TRUE(s->CountByState(&counts).ok());
  EXPECT_EQ(counts[JobState::kDone], 1);
  EXPECT_EQ(counts[JobState::kQueued], 1);
}

TEST(JobStore, OpenReportsAnUnwritablePath) {
  std::unique_ptr<JobStore> s;
  Status st = JobStore::Open("/nonexistent-dir/x/y.sqlite", {}, &s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent-dir"), std::string::npos);
}

}  // namespace
}  // namespace kgym

namespace kgym {
namespace {

// Writes that fail (fault/fault_points.h: store.*) change nothing, and the store goes on working.
TEST(JobStoreFaults, AFailedWriteChangesNothingAndTheStoreGoesOn) {
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(TempDb(), {}, &s).ok());
  bool inserted = false;
  JobRecord existing;
  ASSERT_EQ(fault::Arm("store.insert@1:full,store.update@1:ioerr,store.commit@1*2:busy"), "");
  Status st = s->Insert(Job("a"), &inserted, &existing);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_NE(st.message().find("database or disk is full"), std::string::npos) << st.ToString();
  EXPECT_EQ(s->Get("a", &existing).code(), Status::Code::kNotFound);
  ASSERT_TRUE(s->Insert(Job("a"), &inserted, &existing).ok());
  EXPECT_TRUE(inserted);
  st = s->MarkRunning("a", 1, "cpu", 101);
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_NE(st.message().find("disk I/O error"), std::string::npos) << st.ToString();
  bool applied = false;
  for (int i = 0; i < 2; ++i) {  // busy: worth retrying
    st = s->Complete("a", 1, R"({"outcome":"correct"})", 102, &applied);
    EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  }
  ASSERT_TRUE(s->Get("a", &existing).ok());
  EXPECT_EQ(existing.state, JobState::kQueued);
  EXPECT_EQ(existing.completions, 0);
  ASSERT_TRUE(s->Complete("a", 1, R"({"outcome":"correct"})", 102, &applied).ok());
  EXPECT_TRUE(applied);
  ASSERT_TRUE(s->Get("a", &existing).ok());
  EXPECT_EQ(existing.state, JobState::kDone);
  EXPECT_EQ(existing.completions, 1);
  EXPECT_EQ(existing.outcome, "correct");
  std::vector<JobRecord> unfinished;
  ASSERT_TRUE(s->Unfinished(&unfinished).ok());
  EXPECT_TRUE(unfinished.empty());
  fault::Disarm();
}

TEST(JobStore, UnfinishedListsQueuedAndRunningWithoutChangingThem) {
  std::unique_ptr<JobStore> s;
  ASSERT_TRUE(JobStore::Open(":memory:", {}, &s).ok());
  bool inserted = false;
  JobRecord existing;
  for (const char* id : {"q", "r", "d"}) ASSERT_TRUE(s->Insert(Job(id), &inserted, &existing).ok());
  ASSERT_TRUE(s->MarkRunning("r", 1, "cpu", 1).ok());
  bool applied = false;
  ASSERT_TRUE(s->Complete("d", 1, "{}", 2, &applied).ok());
  std::vector<JobRecord> u;
  ASSERT_TRUE(s->Unfinished(&u).ok());
  ASSERT_EQ(u.size(), 2u);
  ASSERT_TRUE(s->Get("r", &existing).ok());
  EXPECT_EQ(existing.state, JobState::kRunning);  // unlike Recover, nothing is put back in the queue
}

}  // namespace
}  // namespace kgym
