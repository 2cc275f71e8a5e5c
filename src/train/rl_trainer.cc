#include "train/rl_trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "agent/run_dir.h"
#include "grade/metrics.h"
#include "run/evolve_round.h"
#include "skills/evolve.h"
#include "train/learner_protocol.h"
#include "train/rl_step.h"
#include "train/rollouts.h"
#include "train/run_resume.h"
#include "train/task_sampler.h"
#include "train/train_batch.h"
#include "train/train_config.h"

namespace kgym::train {

namespace fs = std::filesystem;
namespace P = protocol;

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string NowIso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::tm tm;
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Status WriteJson(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  return out ? Status::Ok() : Status::IOError("cannot write " + path);
}

// Strips what makes rollout records large (token ids and log-probs) once the step has used them.
void StripTokens(const std::string& dir) {
  std::vector<nlohmann::json> recs;
  if (!agent::LoadTrajectories(dir, &recs).ok()) return;
  std::ofstream out(dir + "/trajectories.jsonl", std::ios::trunc);
  for (auto& r : recs) {
    for (auto& t : r["turns"])
      for (const char* k : {"token_ids", "prompt_token_ids", "logprobs"}) t.erase(k);
    out << r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
}

}  // namespace

agent::TurnLoopConfig RlTrainer::LoopConfig(bool validation, int64_t step) const {
  run::RunSpec spec = validation ? val_spec_ : spec_;
  spec.loop.run_id = fs::path(out_dir_).filename().string() + (validation ? "-val" : "-train") + std::to_string(step);
  // Each request's sampling seed follows from the run's seed, the step and (in the turn loop) the sample and turn, so
  // a step done again (a resumed run) samples what it sampled the first time.
  const int64_t seed = cfg_["trainer"]["seed"].get<int64_t>() % 1000;
  spec.sampling.seed = static_cast<int>((seed * 1000003 + step * 100000 + (validation ? 50000 : 0)) % 2000000000);
  return run::LoopConfig(spec);
}

Status RlTrainer::Setup() {
  out_dir_ = cfg_["trainer"]["out_dir"].get<std::string>();
  std::error_code ec;
  fs::create_directories(out_dir_, ec);
  Status s = WriteJson(out_dir_ + "/config.json", cfg_);
  if (s.ok()) s = LoadTaskSet(cfg_["data"]["train_files"], cfg_["data"]["only"], &train_tasks_);
  if (s.ok() && !cfg_["data"]["val_files"].empty())
    s = LoadTaskSet(cfg_["data"]["val_files"], cfg_["data"]["val_only"], &val_tasks_);
  if (!s.ok()) return s;
  const int64_t batch = cfg_["data"]["train_batch_size"].get<int64_t>();
  if (batch < 1 || batch > static_cast<int64_t>(train_tasks_.size()))
    return Status::InvalidArgument("data.train_batch_size is " + std::to_string(batch) + " but there are " +
                                   std::to_string(train_tasks_.size()) + " training tasks");
  if (const auto& dir = cfg_["metrics"]["known_solutions"]; dir.is_string()) {
    std::vector<std::string> ids;
    for (const auto& t : train_tasks_) ids.push_back(t.id);
    for (const auto& t : val_tasks_) ids.push_back(t.id);
    s = LoadKnownSolutions(dir.get<std::string>(), ids, &known_);
    if (!s.ok()) return s;
    have_known_ = true;
  }
  const std::string cache = cfg_["gym"]["cache"].get<std::string>();
  if (cache != "off" && cache != "step" && cache != "run")
    return Status::InvalidArgument("gym.cache must be step, run or off");
  s = RlRunSpecs(cfg_, &spec_, &val_spec_);
  if (s.ok()) s = run::MakeGym(spec_.gym, spec_.llm, &gym_);
  if (!s.ok()) return s;
  if (cache != "off") shared_gym_ = std::make_unique<SharedEvalBackend>(gym_.get());
  run::RunSpec without_skills = spec_;  // the skills need the policy's endpoint: loaded per step
  without_skills.skills.library.clear();
  return run::RunParts::Build(without_skills, &parts_,
                              shared_gym_ ? static_cast<agent::EvalBackend*>(shared_gym_.get()) : gym_.get());
}

Status RlTrainer::StartEngines(const std::string& resume) {
  const auto& lc = cfg_["learner"];
  LearnerLaunch l;
  if (lc["python"].is_string()) l.python = lc["python"].get<std::string>();
  l.config_path = out_dir_ + "/config.json";
  l.resume = resume;
  l.train = true;
  l.tensorboard_dir = out_dir_;
  l.host = lc["host"].get<std::string>();
  l.port = lc["port"].get<int>();
  l.log_path = out_dir_ + "/learner.log";
  l.startup_timeout_s = lc["startup_timeout"].get<double>();
  Status s = LearnerPlacement(cfg_["trainer"], &l);
  if (s.ok()) s = learner_.Start(l);
  if (!s.ok()) return s;
  const auto& ro = cfg_["rollout"];
  if (ro["engine"] == "external") {
    if (!ro["external_url"].is_string())
      return Status::InvalidArgument("rollout.engine=external needs rollout.external_url");
    spec_.llm.base_url = ro["external_url"].get<std::string>();
    spec_.llm.model = ro["external_model"].is_string() ? ro["external_model"].get<std::string>() : "kgym-policy";
    engine_url_ = spec_.llm.base_url;
    if (engine_url_.size() >= 3 && engine_url_.compare(engine_url_.size() - 3, 3, "/v1") == 0)
      engine_url_.resize(engine_url_.size() - 3);
  } else if (ro["engine"] == "local") {
    spec_.llm.base_url = learner_.base_url() + "/v1";
    spec_.llm.model = "kgym-policy";
  } else {
    return Status::InvalidArgument("rollout.engine must be local or external");
  }
  val_spec_.llm = spec_.llm;
  parts_->SetLlm(spec_.llm);
  return engine_url_.empty() ? Status::Ok() : PushWeights(0);
}

Status RlTrainer::CallLearner(const char* path, const nlohmann::json& body, nlohmann::json* reply, double timeout_s) {
  Status s = learner_.Call(path, body, reply, timeout_s);
  // No answer, or one that is not the learner's (not JSON, a crash's 5xx): the learner's state is not to be trusted.
  if (!s.ok() && s.code() != Status::Code::kInvalidArgument) learner_failed_ = s;
  return s;
}

Status RlTrainer::PushWeights(int64_t step) {
  if (engine_url_.empty()) return Status::Ok();  // the learner serves its own live weights
  const auto& wd = cfg_["rollout"]["weights_dir"];
  const std::string dir =
      (wd.is_string() ? wd.get<std::string>() : out_dir_ + "/weights") + "/step_" + std::to_string(step);
  nlohmann::json r;
  Status s = CallLearner(P::kPathSaveWeights, {{P::kFieldDir, dir}}, &r);
  if (s.ok()) s = CallJson(engine_url_ + P::kPathUpdateWeights, {{P::kFieldModelPath, dir}}, &r, 3600);
  if (!s.ok()) return s;
  if (!r.value("success", false))
    return Status::Internal("the rollout engine did not load the pushed weights: " + r.value("message", ""));
  return Status::Ok();
}

Status RlTrainer::LearnerLogprobs(const TrainBatch& b, std::vector<std::vector<double>>* out, double* seconds) {
  const auto t0 = Clock::now();
  nlohmann::json rows = nlohmann::json::array();
  std::vector<size_t> asked;
  out->assign(b.rows.size(), {});
  for (size_t i = 0; i < b.rows.size(); ++i) {
    (*out)[i].assign(b.rows[i].response_ids.size(), 0.0);
    if (!b.rows[i].loss_mask || b.rows[i].response_ids.empty()) continue;
    rows.push_back({{P::kFieldPromptIds, b.rows[i].prompt_ids}, {P::kFieldResponseIds, b.rows[i].response_ids}});
    asked.push_back(i);
  }
  if (!asked.empty()) {
    nlohmann::json r;
    Status s = CallLearner(P::kPathLogprobs, {{P::kFieldRows, rows}}, &r);
    if (!s.ok()) return s;
    const auto& got = r[P::kFieldRows];
    if (!got.is_array() || got.size() != asked.size()) return Status::Internal("the learner returned the wrong rows");
    for (size_t k = 0; k < asked.size(); ++k) {
      const auto& row = got[k][P::kFieldLogprobs];
      if (!row.is_array() || !std::all_of(row.begin(), row.end(), [](const auto& x) { return x.is_number(); }))
        return Status::Internal("the learner returned log-probs that are not all finite numbers");
      std::vector<double> lp = row.get<std::vector<double>>();
      if (lp.size() != (*out)[asked[k]].size()) return Status::Internal("the learner returned the wrong token count");
      (*out)[asked[k]] = std::move(lp);
    }
  }
  *seconds = Since(t0);
  return Status::Ok();
}

Status RlTrainer::WriteMetrics(int64_t step, const nlohmann::json& metrics) {
  nlohmann::json rec = {{"step", step}, {"time", NowIso()}};
  rec.update(metrics);
  std::ofstream out(out_dir_ + "/metrics.jsonl", std::ios::app);
  out << rec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  out.flush();
  nlohmann::json ignored;
  (void)CallLearner(P::kPathMetrics, {{P::kFieldStep, step}, {P::kFieldMetrics, metrics}}, &ignored, 60);
  return out ? Status::Ok() : Status::IOError("cannot append to " + out_dir_ + "/metrics.jsonl");
}

RolloutRun RlTrainer::PlanRollouts(int64_t step, std::vector<std::string>* ids) const {
  const auto& data = cfg_["data"];
  TaskSampler sampler(train_tasks_.size(), data["train_batch_size"].get<size_t>(),
                      cfg_["trainer"]["seed"].get<uint64_t>(), data["shuffle"].get<bool>());
  RolloutRun run;
  for (size_t i : sampler.Step(step - 1)) run.tasks.push_back(train_tasks_[i]), ids->push_back(train_tasks_[i].id);
  run.samples = spec_.loop.samples;
  run.loop = LoopConfig(false, step);
  run.lockstep = spec_.loop.layout == "lockstep";
  run.llm_concurrency = spec_.loop.llm_concurrency;
  run.eval_concurrency = spec_.gym.eval_concurrency;
  run.out_dir = out_dir_ + "/rollouts/step_" + std::to_string(step);
  return run;
}

namespace {

// The rows the RL core kept in the loss, as the learner's train step takes them.
nlohmann::json LossRows(const TrainBatch& batch, const RlStepOutcome& rl, const std::vector<std::vector<double>>& lp) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    if (!rl.in_loss[i]) continue;
    const auto& r = batch.rows[i];
    rows.push_back({{P::kFieldPromptIds, r.prompt_ids},
                    {P::kFieldResponseIds, r.response_ids},
                    {P::kFieldAdvantage, rl.advantages[i]},
                    {P::kFieldOldLogprobs, lp[i]},
                    {P::kFieldTokenMask, rl.token_mask[i]}});
  }
  return rows;
}

}  // namespace

void RlTrainer::AddStepNumbers(const StepPhases& ph, nlohmann::json* metrics) const {
  nlohmann::json& m = *metrics;
  const auto gen = [&](const char* k) {
    return ph.after.value("generation", nlohmann::json::object()).value(k, 0.0) -
           ph.before.value("generation", nlohmann::json::object()).value(k, 0.0);
  };
  const double gen_s = gen("seconds"), evals = shared_gym_ ? shared_gym_->evaluations() : 0;
  const double step_s = Since(ph.start);
  m["time/rollout_s"] = ph.rollout_s;
  m["time/generate_s"] = gen_s;
  m["time/evaluate_s"] = ph.rollout_s - gen_s;  // lockstep: the rest of the rollout phase is the gym's
  m["time/logprob_s"] = ph.logprob_s;
  m["time/train_call_s"] = ph.train_call_s;  // the learner's time/update_s plus the request's own cost
  m["time/weight_push_s"] = ph.push_s;       // 0 when the learner serves its own live weights (rollout.engine=local)
  m["time/step_start_unix"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() - step_s;
  m["time/step_s"] = step_s;
  m["perf/generated_tokens"] = gen("tokens");
  m["perf/tokens_per_s"] = gen_s > 0 ? gen("tokens") / gen_s : 0.0;
  m["perf/gym_evals"] = evals;
  m["perf/gym_shared"] = shared_gym_ ? shared_gym_->shared() : 0;
  m["perf/gym_evals_per_s"] = ph.rollout_s - gen_s > 0 ? evals / (ph.rollout_s - gen_s) : 0.0;
}

void RlTrainer::KeepRollouts(const std::string& dir) const {
  const std::string keep = cfg_["trainer"]["save_rollouts"].get<std::string>();
  std::error_code ec;
  if (keep == "none")
    fs::remove_all(dir, ec);
  else if (keep == "text")
    StripTokens(dir);
}

Status RlTrainer::Step(int64_t step) {
  StepPhases ph;
  ph.start = Clock::now();
  std::vector<std::string> ids;
  RolloutRun run = PlanRollouts(step, &ids);
  if (shared_gym_ && cfg_["gym"]["cache"] == "step") shared_gym_->Clear();
  const bool skills = !spec_.skills.library.empty();  // daVinci's schemes, from the newest snapshot
  if (skills) {
    Status ls = parts_->LoadSkills(spec_);
    if (!ls.ok()) return ls;
  }
  const agent::TurnLoopDeps deps = parts_->Deps();
  (void)CallLearner(P::kPathHealth, nullptr, &ph.before, 30);
  if (!learner_failed_.ok()) return learner_failed_;  // no rollouts from a learner that is gone

  // 1. Rollouts with gym rewards.
  std::vector<nlohmann::json> records;
  const auto t_roll = Clock::now();
  Status s = RunRollouts(run, deps, &records);
  if (!s.ok()) return s;
  ph.rollout_s = Since(t_roll);
  (void)CallLearner(P::kPathHealth, nullptr, &ph.after, 30);

  // 2. Rows, learner log-probs, the RL core.
  TrainBatch batch;
  s = BuildTrainBatch(records, ids, run.samples, cfg_["algorithm"]["coverage_rs_key"].get<std::string>(), &batch);
  std::vector<std::vector<double>> lp;
  if (s.ok()) s = LearnerLogprobs(batch, &lp, &ph.logprob_s);
  RlStepOptions opt;
  if (s.ok()) s = RlStepOptionsFromConfig(cfg_, step, &opt);
  RlStepOutcome rl;
  if (s.ok()) s = RunRlStep(batch, lp, opt, &rl);
  if (!s.ok()) return s;

  // 3. One optimizer step on the rows in the loss, then the weights to the engine.
  const nlohmann::json rows = LossRows(batch, rl, lp);
  nlohmann::json update;
  const auto t_train = Clock::now();
  s = CallLearner(P::kPathTrainStep, {{P::kFieldStep, step}, {P::kFieldRows, rows}}, &update);
  ph.train_call_s = Since(t_train);
  const auto t_push = Clock::now();
  if (s.ok()) s = PushWeights(step);
  if (!s.ok()) return s;
  ph.push_s = Since(t_push);

  // 4. The step's numbers.
  nlohmann::json m = rl.metrics;
  m.update(RolloutMetrics(records, have_known_ ? &known_ : nullptr, "rollout"));
  m.update(update[P::kFieldMetrics]);
  m["policy/version"] = update.value(P::kFieldPolicyVersion, -1);
  AddStepNumbers(ph, &m);
  if (skills) {
    const auto t_skills = Clock::now();
    s = EvolveSkills(step, run.out_dir, run.tasks, &m);
    if (!s.ok()) return s;
    m["time/skills_s"] = Since(t_skills);
  }
  KeepRollouts(run.out_dir);
  std::fprintf(stderr,
               "kgym train: step %lld  reward %.3f  correct %.2f  fast@1.2 %.2f  mrs keep %.2f  prs keep %.2f  "
               "rows %d  %.1f s (generate %.1f, evaluate %.1f)\n",
               static_cast<long long>(step), m.value("reward/mean", 0.0), m.value("rollout/correct_rate", 0.0),
               m.value("rollout/fast@1.2", 0.0), m.value("mrs/keep_frac", 0.0), m.value("prs/keep_frac", 0.0),
               static_cast<int>(rows.size()), m.value("time/step_s", 0.0), m.value("time/generate_s", 0.0),
               m.value("time/evaluate_s", 0.0));
  return WriteMetrics(step, m);
}

Status RlTrainer::EvolveSkills(int64_t step, const std::string& run_dir, const std::vector<agent::Task>& tasks,
                               nlohmann::json* metrics) {
  const std::string tasks_path = run_dir + "/tasks.jsonl";
  {
    std::ofstream out(tasks_path);
    for (const auto& t : tasks) out << t.ToJson().dump() << "\n";
  }
  run::EvolveRound round;
  round.run_dir = run_dir;
  round.tasks_path = tasks_path;
  round.second_task_seed = static_cast<uint64_t>(step);
  round.seed_calls = false;
  round.summary_max_tokens = std::min(2048, spec_.sampling.max_tokens);
  round.verify_max_tokens = spec_.sampling.max_tokens;
  const skills::EvolveOptions o = run::BuildEvolveOptions(spec_, round);
  nlohmann::json report;
  Status s = skills::RunEvolve(o, *parts_->llm(), parts_->gym(), &report);
  if (!s.ok()) return s;
  (*metrics)["skills/library_size"] = report.value("skills", 0);
  (*metrics)["skills/added"] = report.contains("added") ? report["added"].size() : 0;
  (*metrics)["skills/triggered_tasks"] = report.contains("cases") ? report["cases"].size() : 0;
  (*metrics)["skills/snapshot_step"] = report.value("step", -1);
  return Status::Ok();
}

Status RlTrainer::Validate(int64_t step) {
  RolloutRun run;
  run.tasks = val_tasks_;
  run.samples = val_spec_.loop.samples;
  run.loop = LoopConfig(true, step);
  run.lockstep = val_spec_.loop.layout == "lockstep";
  run.llm_concurrency = val_spec_.loop.llm_concurrency;
  run.eval_concurrency = val_spec_.gym.eval_concurrency;
  run.out_dir = out_dir_ + "/val/step_" + std::to_string(step);
  const auto t0 = Clock::now();
  agent::TurnLoopDeps deps = parts_->Deps();
  deps.first_turn_rewriter = nullptr;  // validation runs without the skills, as before training
  std::vector<nlohmann::json> records;
  Status s = RunRollouts(run, deps, &records);
  if (!s.ok()) return s;
  s = WriteJson(run.out_dir + "/grade.json", grade::Grade(records));
  if (!s.ok()) return s;
  nlohmann::json m = RolloutMetrics(records, have_known_ ? &known_ : nullptr, "val");
  m["time/val_s"] = Since(t0);
  std::fprintf(stderr, "kgym train: validation at step %lld  correct %.2f  fast@1 %.2f  fast@1.2 %.2f\n",
               static_cast<long long>(step), m.value("val/correct_rate", 0.0), m.value("val/fast@1", 0.0),
               m.value("val/fast@1.2", 0.0));
  return WriteMetrics(step, m);
}

Status RlTrainer::Checkpoint(int64_t step) {
  const std::string dir = out_dir_ + "/checkpoints/step_" + std::to_string(step);
  nlohmann::json r;
  Status s = CallLearner(P::kPathSave, {{P::kFieldDir, dir}, {P::kFieldStep, step}}, &r);
  if (s.ok())
    s = WriteJson(dir + "/kgym_state.json",
                  {{"step", step}, {"policy_version", r.value(P::kFieldPolicyVersion, -1)}, {"time", NowIso()}});
  if (!s.ok()) return s;
  const auto& keep = cfg_["trainer"]["max_ckpt_to_keep"];
  if (keep.is_number_integer() && keep.get<int>() > 0) {
    std::vector<std::pair<int64_t, fs::path>> all;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(out_dir_) / "checkpoints", ec))
      if (e.path().filename().string().rfind("step_", 0) == 0)
        all.push_back({std::atoll(e.path().filename().string().c_str() + 5), e.path()});
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i + keep.get<size_t>() < all.size(); ++i) fs::remove_all(all[i].second, ec);
  }
  return Status::Ok();
}

// Where a run starts: from the configured checkpoint (trainer.resume: auto = the newest, a folder, or disable), with
// what the steps after it left dropped (train/run_resume.h) unless resume is disabled.
Status RlTrainer::ResumePoint(bool configured, std::string* resume, int64_t* start) {
  const auto& rc = cfg_["trainer"]["resume"];
  *resume = "";
  if (!configured || rc == "auto")
    *resume = NewestCheckpoint(out_dir_);
  else if (rc.is_string() && rc != "disable")
    *resume = rc.get<std::string>();
  int64_t done = -1;
  if (!resume->empty()) {
    Status s = CheckpointStep(*resume, &done);
    if (!s.ok()) return s;
    std::fprintf(stderr, "kgym train: resuming from %s at step %lld\n", resume->c_str(),
                 static_cast<long long>(done + 1));
  }
  *start = done < 0 ? 1 : done + 1;
  if (configured && rc == "disable") return Status::Ok();
  return ForgetStepsAfter(out_dir_, done);
}

Status RlTrainer::Run() {
  const auto started = Clock::now();
  Status s = Setup();
  if (!s.ok()) return s;
  std::string resume;
  int64_t start = 1;
  s = ResumePoint(true, &resume, &start);
  if (s.ok()) s = StartEngines(resume);
  if (!s.ok()) return s;
  const int64_t total = cfg_["trainer"]["total_training_steps"].get<int64_t>();
  const int64_t save_freq = cfg_["trainer"]["save_freq"].get<int64_t>();
  const int64_t test_freq = cfg_["trainer"]["test_freq"].get<int64_t>();
  const int max_restarts = cfg_["trainer"].value("max_learner_restarts", 3);
  int restarts = 0;
  const auto validate_first = [&] {
    return start == 1 && !val_tasks_.empty() && cfg_["trainer"]["val_before_train"].get<bool>();
  };
  if (validate_first()) s = Validate(0);
  const double budget = cfg_["trainer"].value("time_budget_s", nlohmann::json()).is_number()
                            ? cfg_["trainer"]["time_budget_s"].get<double>()
                            : 0.0;
  double longest = 0;  // the longest step so far, with its checkpoint and validation
  for (int64_t step = start; step <= total;) {
    const auto t_step = Clock::now();
    const bool save = (save_freq > 0 && step % save_freq == 0) || step == total;
    if (s.ok()) s = Step(step);
    if (s.ok() && save) s = Checkpoint(step);
    if (s.ok() && !val_tasks_.empty() && test_freq > 0 && (step % test_freq == 0 || step == total)) s = Validate(step);
    if (s.ok() && !learner_failed_.ok()) s = learner_failed_;  // a call whose failure the step could go on without
    longest = std::max(longest, Since(t_step));
    if (s.ok() && budget > 0 && step < total && Since(started) + longest > budget) {
      if (!save) s = Checkpoint(step);
      if (s.ok()) {
        std::fprintf(stderr,
                     "kgym train: stopped at step %lld of %lld: the next step would pass trainer.time_budget_s=%g; "
                     "the same command again continues\n",
                     static_cast<long long>(step), static_cast<long long>(total), budget);
        break;
      }
    }
    if (s.ok()) {
      ++step;
      continue;
    }
    // The learner died or answered nonsense: a new one from the newest checkpoint, and the steps after it again.
    if (learner_failed_.ok() || restarts >= max_restarts) break;
    ++restarts;
    std::fprintf(stderr, "kgym train: the learner failed (%s); restarting it (%d of %d)\n",
                 learner_failed_.ToString().c_str(), restarts, max_restarts);
    learner_failed_ = Status::Ok();
    learner_.Stop();
    s = ResumePoint(false, &resume, &start);
    if (s.ok()) s = StartEngines(resume);
    if (!s.ok()) break;
    if (validate_first()) s = Validate(0);
    step = start;
  }
  learner_.Stop();
  return s;
}

}  // namespace kgym::train
