// LocalDispatcher: jobs run in this process on the scheduler's device slots.
#include "server/dispatcher.h"

namespace kgym {

namespace {
class LocalDispatcher : public Dispatcher {
 public:
  LocalDispatcher(Evaluator* ev, SchedulerOptions o) : evaluator_(ev), options_(std::move(o)) {}
  Status Start(SchedulerListener* listener) override {
    sched_ = std::make_unique<Scheduler>(evaluator_, options_, listener);
    sched_->Start();
    return Status::Ok();
  }
  Status Dispatch(const SchedJob& job) override {
    SchedJob j = job;
    if (!j.device.empty()) {
      bool served = false;
      for (auto& d : options_.devices) served |= d.name == j.device;
      if (!served) j.device.clear();  // KernelGYM never honoured device_preference; an unknown one is ignored
    }
    return sched_->Submit(std::move(j));
  }
  bool Cancel(const std::string& id) override { return sched_->Cancel(id); }
  int Drain(double timeout_s) override { return sched_->Drain(timeout_s); }
  void Stop() override {
    if (sched_) sched_->Stop();
  }
  DispatchStats Stats() override {
    DispatchStats s;
    s.sched = sched_->Stats();
    AdmissionStats mem;
    if (evaluator_->Admission(&mem)) s.memory = mem;
    for (auto& d : s.sched.devices)
      s.workers["local_" + d.name] = {{"device", d.name},     {"status", "online"}, {"slots", d.slots},
                                      {"running", d.running}, {"node_id", "local"}, {"hostname", "localhost"}};
    return s;
  }

 private:
  Evaluator* evaluator_;
  SchedulerOptions options_;
  std::unique_ptr<Scheduler> sched_;
};
}  // namespace

std::unique_ptr<Dispatcher> NewLocalDispatcher(Evaluator* evaluator, SchedulerOptions options) {
  return std::make_unique<LocalDispatcher>(evaluator, std::move(options));
}

}  // namespace kgym
