#include "sched/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "eval/account.h"

namespace kgym {

namespace {
double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
}  // namespace

const char* PriorityName(Priority p) {
  switch (p) {
    case Priority::kLow:
      return "low";
    case Priority::kNormal:
      return "normal";
    case Priority::kHigh:
      return "high";
  }
  return "normal";
}

bool PriorityFromName(const std::string& name, Priority* out) {
  if (name == "low")
    *out = Priority::kLow;
  else if (name == "normal")
    *out = Priority::kNormal;
  else if (name == "high")
    *out = Priority::kHigh;
  else
    return false;
  return true;
}

Status ParseDeviceList(const std::string& gpus, const std::vector<std::string>& available, int slots_per_gpu,
                       int cpu_slots, std::vector<DeviceSlots>* out) {
  out->clear();
  if (gpus == "none" || gpus == "cpu") {
    out->push_back({"cpu", std::max(1, cpu_slots)});
    return Status::Ok();
  }
  if (gpus == "all") {
    for (const auto& d : available)
      if (d.rfind("cuda:", 0) == 0) out->push_back({d, std::max(1, slots_per_gpu)});
    if (out->empty()) return Status::Unavailable("--gpus all: no GPU is visible (use --gpus none for CPU workers)");
    return Status::Ok();
  }
  size_t pos = 0;
  while (pos <= gpus.size()) {
    size_t comma = gpus.find(',', pos);
    std::string item = gpus.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.rfind("cuda:", 0) == 0) item = item.substr(5);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      return Status::InvalidArgument("--gpus: '" + item + "' is not a GPU index (use e.g. 0,1 or all or none)");
    out->push_back({"cuda:" + item, std::max(1, slots_per_gpu)});
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return Status::Ok();
}

// Queue order: higher priority, earlier deadline (none = last), earlier arrival.
using QueueKey = std::tuple<int, double, uint64_t>;

struct Scheduler::Entry {
  SchedJob job;
  uint64_t seq = 0;
  std::map<std::string, std::string> key_on;  // by device: its reference's key there (Scheduler::KeyOn)
  std::atomic<bool> cancel{false};
  std::string phase;
  double phase_start = 0;
  QueueKey Key() const {
    return {-static_cast<int>(job.priority), job.deadline > 0 ? job.deadline : std::numeric_limits<double>::max(), seq};
  }
};

struct Scheduler::Queue {
  std::map<QueueKey, std::unique_ptr<Entry>> entries;
};

struct Scheduler::Device {
  std::string name;
  int slots = 1;
  Queue pinned;
  int running = 0;
  double busy_since = 0, busy_total = 0, started_at = 0;
  std::set<std::string> looked_ahead;       // reference keys the look-ahead has prepared or is preparing
  std::multiset<std::string> running_keys;  // reference keys of the jobs it runs
  std::set<std::string> wanted;             // running_keys and its window's
  std::set<std::string> told;               // what the evaluator was last told (want_mu_ and mu_ held to change)
  int64_t prepared = 0;
  double prepare_s = 0;
};

namespace {

// The request as it runs on `device` ("cpu" or "cuda:N").
EvalRequest OnDevice(EvalRequest req, const std::string& device) {
  if (device == "cpu") {
    req.device = "cpu";
  } else {
    req.device = "cuda";
    req.device_index = std::atoi(device.c_str() + 5);
  }
  return req;
}

}  // namespace

Scheduler::Scheduler(Evaluator* evaluator, SchedulerOptions options, SchedulerListener* listener)
    : evaluator_(evaluator), options_(std::move(options)), listener_(listener), shared_(new Queue) {
  for (const auto& d : options_.devices) {
    auto dev = std::make_unique<Device>();
    dev->name = d.name;
    dev->slots = std::max(1, d.slots);
    devices_.push_back(std::move(dev));
  }
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (started_) return;
  started_ = true;
  double now = SteadyNow();
  for (auto& dev : devices_) {
    dev->started_at = now;
    for (int i = 0; i < dev->slots; ++i) threads_.emplace_back([this, d = dev.get()] { SlotLoop(d); });
    for (int i = 0; i < options_.reference_lookahead; ++i)
      threads_.emplace_back([this, d = dev.get()] { LookaheadLoop(d); });
  }
}

void Scheduler::Enqueue(std::unique_ptr<Entry> e) {
  Queue* q = shared_.get();
  if (!e->job.device.empty())
    for (auto& dev : devices_)
      if (dev->name == e->job.device) q = &dev->pinned;
  QueueKey k = e->Key();
  q->entries.emplace(k, std::move(e));
}

Status Scheduler::Submit(SchedJob job) {
  auto e = std::make_unique<Entry>();
  e->job = std::move(job);
  e->phase = "queued";
  e->phase_start = SteadyNow();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!e->job.device.empty()) {
      bool known = false;
      for (auto& dev : devices_) known |= dev->name == e->job.device;
      if (!known) return Status::InvalidArgument("device '" + e->job.device + "' is not served by this scheduler");
    }
    e->seq = ++seq_;
    Enqueue(std::move(e));
    WantNextAll();
  }
  TellWants();
  // Every slot thread: the one woken by notify_one could be another device's, which cannot take a pinned job, and the
  // job would wait for the next event (Scheduler.PinnedJobsRunOnTheirDevice timed out so in a CI run).
  cv_.notify_all();
  lookahead_cv_.notify_all();
  return Status::Ok();
}

bool Scheduler::Cancel(const std::string& id) {
  std::unique_ptr<Entry> removed;
  bool found = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto take = [&](Queue& q) {
      for (auto it = q.entries.begin(); it != q.entries.end(); ++it)
        if (it->second->job.id == id) {
          removed = std::move(it->second);
          q.entries.erase(it);
          return true;
        }
      return false;
    };
    found = take(*shared_);
    for (auto& dev : devices_) found = found || take(dev->pinned);
    if (!found)
      for (auto it = delayed_.begin(); it != delayed_.end(); ++it)
        if (it->second->job.id == id) {
          removed = std::move(it->second);
          delayed_.erase(it);
          found = true;
          break;
        }
    auto [lo, hi] = running_.equal_range(id);
    for (auto r = lo; r != hi; ++r) {
      r->second->cancel = true;
      found = true;
    }
    if (removed) WantNextAll();
  }
  if (removed) TellWants();
  if (removed) {
    EvalResult res;
    res.task_id = id;
    res.outcome = Outcome::kInvalid;
    res.outcome_detail = "cancelled";
    res.error_message = "cancelled";
    {
      std::lock_guard<std::mutex> l(mu_);
      outcomes_["cancelled"]++;
    }
    listener_->OnFinished(removed->job, res);
  }
  return found;
}

bool Scheduler::PopFor(Device* dev, std::unique_ptr<Entry>* out) {
  auto* a = dev->pinned.entries.empty() ? nullptr : &*dev->pinned.entries.begin();
  auto* b = shared_->entries.empty() ? nullptr : &*shared_->entries.begin();
  if (!a && !b) return false;
  bool use_pinned = a && (!b || a->first < b->first);
  Queue& q = use_pinned ? dev->pinned : *shared_;
  *out = std::move(q.entries.begin()->second);
  q.entries.erase(q.entries.begin());
  return true;
}

void Scheduler::SlotLoop(Device* dev) {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (stopping_) return;
    // Retries whose backoff has elapsed go back to their queues.
    double now = SteadyNow();
    if (!delayed_.empty() && delayed_.begin()->first <= now) {
      while (!delayed_.empty() && delayed_.begin()->first <= now) {
        Enqueue(std::move(delayed_.begin()->second));
        delayed_.erase(delayed_.begin());
      }
      WantNextAll();
    }
    std::unique_ptr<Entry> e;
    if (!draining_ && PopFor(dev, &e)) {
      if (dev->running++ == 0) dev->busy_since = SteadyNow();
      running_.emplace(e->job.id, e.get());
      dev->running_keys.insert(KeyOn(e.get(), dev));
      WantNextAll();               // a job from the shared queue was in every device's window
      lookahead_cv_.notify_all();  // the look-ahead's window moved on
      l.unlock();
      TellWants();
      RunOne(dev, std::move(e));
      l.lock();
      if (--dev->running == 0) dev->busy_total += SteadyNow() - dev->busy_since;
      idle_cv_.notify_all();
      continue;
    }
    if (!delayed_.empty() && !draining_) {
      auto due = std::chrono::steady_clock::time_point(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(delayed_.begin()->first)));
      cv_.wait_until(l, due);
    } else {
      cv_.wait(l);
    }
  }
}

// The next `slots` jobs this device would take (its pinned queue and the shared one, in queue order).
std::vector<Scheduler::Entry*> Scheduler::Window(Device* dev) {
  std::vector<Entry*> out;
  auto a = dev->pinned.entries.begin(), b = shared_->entries.begin();
  while (static_cast<int>(out.size()) < dev->slots) {
    const bool more_a = a != dev->pinned.entries.end(), more_b = b != shared_->entries.end();
    if (!more_a && !more_b) break;
    auto& it = more_a && (!more_b || a->first < b->first) ? a : b;
    out.push_back(it->second.get());
    ++it;
  }
  return out;
}

// The key of a job's reference configuration as it would run on `dev`, made once per job and device: the windows are
// looked at on every submission and start.
const std::string& Scheduler::KeyOn(Entry* e, Device* dev) {
  auto [it, made] = e->key_on.try_emplace(dev->name);
  if (made) it->second = ReferenceKey(OnDevice(e->job.request, dev->name));
  return it->second;
}

// The first job of the window whose reference configuration the look-ahead has not asked for yet, as it would run
// here.
bool Scheduler::NextToPrepare(Device* dev, EvalRequest* out) {
  for (Entry* e : Window(dev)) {
    if (dev->looked_ahead.size() > 4096) dev->looked_ahead.clear();  // a long-lived server's old tasks
    if (dev->looked_ahead.insert(KeyOn(e, dev)).second) {
      *out = OnDevice(e->job.request, dev->name);
      return true;
    }
  }
  return false;
}

// The references of the jobs it runs and of its window stay in the evaluator's cache (Evaluator::WantReferences): a
// job popped by a slot may still wait for memory before it asks for its reference. TellWants passes the sets on.
void Scheduler::WantNext(Device* dev) {
  std::set<std::string> keys(dev->running_keys.begin(), dev->running_keys.end());
  for (Entry* e : Window(dev)) keys.insert(KeyOn(e, dev));
  dev->wanted = std::move(keys);
}

// Without mu_: an unwanted reference the cache drops may be tens of GB to free, which must not stop the slots. The
// calls are one at a time (want_mu_), each with the newest set, so the evaluator never hears an older set after a
// newer one; a set equal to the last one told is not told again.
void Scheduler::TellWants() {
  std::lock_guard<std::mutex> w(want_mu_);
  for (auto& dev : devices_) {
    std::set<std::string> keys;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (dev->wanted == dev->told) continue;
      dev->told = keys = dev->wanted;
    }
    evaluator_->WantReferences(dev->name, keys);
  }
}

void Scheduler::WantNextAll() {
  for (auto& dev : devices_) WantNext(dev.get());
}

void Scheduler::LookaheadLoop(Device* dev) {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (stopping_) return;
    EvalRequest req;
    if (draining_ || !NextToPrepare(dev, &req)) {
      lookahead_cv_.wait(l);
      continue;
    }
    l.unlock();
    const double t0 = SteadyNow();
    const bool made = evaluator_->PrepareReference(req, &lookahead_cancel_);
    const double took = SteadyNow() - t0;
    l.lock();
    dev->prepared += made;
    dev->prepare_s += took;
  }
}

void Scheduler::RecordPhase(Entry* e, const std::string& phase) {
  double now = SteadyNow();
  std::lock_guard<std::mutex> l(mu_);
  if (!e->phase.empty()) {
    auto& p = phases_[e->phase];
    p.count++;
    p.total_s += now - e->phase_start;
  }
  e->phase = phase;
  e->phase_start = now;
}

void Scheduler::RunOne(Device* dev, std::unique_ptr<Entry> e) {
  SchedJob& job = e->job;
  EvalResult res;
  bool evaluated = false;
  double left = job.deadline > 0 ? job.deadline - UnixNow() : std::numeric_limits<double>::max();
  if (left <= 0) {
    res.outcome = Outcome::kTimeout;
    res.outcome_detail = "deadline";
    res.error_code = "TIMEOUT_ERROR";
    res.error_message = "the request's deadline passed before its evaluation could start";
  } else {
    EvalRequest req = OnDevice(job.request, dev->name);
    req.timeout_s = std::min(req.timeout_s, left);
    job.attempts++;
    listener_->OnStarted(job, dev->name, job.attempts);
    const double queued_s = SteadyNow() - e->phase_start;  // since it was queued (or queued again for a retry)
    RecordPhase(e.get(), "starting");
    Entry* raw = e.get();
    res = evaluator_->Evaluate(
        req,
        [this, raw](const std::string& phase) {
          RecordPhase(raw, phase);
          listener_->OnProgress(raw->job, phase);
        },
        &e->cancel);
    RecordPhase(e.get(), "");
    AddToAccount(&res.metadata, "queue", queued_s);
    evaluated = true;
  }
  res.task_id = job.id;
  bool retry = false;
  double delay = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto [lo, hi] = running_.equal_range(job.id);
    for (auto r = lo; r != hi; ++r)
      if (r->second == e.get()) {
        running_.erase(r);
        break;
      }
    if (auto k = dev->running_keys.find(KeyOn(e.get(), dev)); k != dev->running_keys.end()) dev->running_keys.erase(k);
    WantNext(dev);
    if (stopping_) return;  // interrupted by Stop(): the store still holds the job; it is recovered on restart
    if (evaluated && !e->cancel && res.outcome == Outcome::kInvalid && res.error_code == "SYSTEM_ERROR" &&
        job.attempts <= options_.max_retries) {
      retry = true;
      delay = std::min(options_.retry_backoff_max_s, options_.retry_backoff_s * std::pow(2.0, job.attempts - 1));
      retries_++;
    } else {
      outcomes_[e->cancel ? std::string("cancelled") : std::string(OutcomeName(res.outcome))]++;
    }
  }
  TellWants();
  if (!retry) {
    listener_->OnFinished(job, res);
    return;
  }
  listener_->OnRetry(job, res, delay);
  {
    std::lock_guard<std::mutex> l(mu_);
    e->phase = "queued";
    e->phase_start = SteadyNow();
    delayed_.emplace(SteadyNow() + delay, std::move(e));
  }
  cv_.notify_all();
}

int Scheduler::Drain(double timeout_s) {
  std::unique_lock<std::mutex> l(mu_);
  draining_ = true;
  cv_.notify_all();
  lookahead_cv_.notify_all();
  idle_cv_.wait_for(l, std::chrono::duration<double>(timeout_s), [this] { return running_.empty(); });
  return static_cast<int>(running_.size());
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    lookahead_cancel_ = true;
    for (auto& [id, e] : running_) e->cancel = true;
  }
  evaluator_->CancelAll();  // reference runs too: they watch no single job's cancel
  cv_.notify_all();
  lookahead_cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

SchedulerStats Scheduler::Stats() const {
  std::lock_guard<std::mutex> l(mu_);
  SchedulerStats s;
  s.queued = static_cast<int64_t>(shared_->entries.size());
  for (auto& dev : devices_) s.queued += static_cast<int64_t>(dev->pinned.entries.size());
  s.running = static_cast<int64_t>(running_.size());
  for (const auto& [id, e] : running_) s.waiting_memory += e->phase == "memory";
  s.retrying = static_cast<int64_t>(delayed_.size());
  s.outcomes = outcomes_;
  s.retries = retries_;
  s.phases = phases_;
  double now = SteadyNow();
  for (auto& dev : devices_) {
    SchedulerStats::Device d;
    d.name = dev->name;
    d.slots = dev->slots;
    d.running = dev->running;
    d.busy_s = dev->busy_total + (dev->running > 0 ? now - dev->busy_since : 0);
    d.uptime_s = started_ ? now - dev->started_at : 0;
    d.references_prepared = dev->prepared;
    d.reference_prepare_s = dev->prepare_s;
    s.devices.push_back(d);
  }
  return s;
}

}  // namespace kgym
