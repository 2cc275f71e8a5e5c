#include "eval/trial_checks.h"

#include <chrono>

namespace kgym {

void TrialChecks::Submit(std::unique_ptr<Trial> t) {
  Trial* raw = t.get();
  const Trial* first = trials_.empty() ? nullptr : trials_.front().get();
  trials_.push_back(std::move(t));
  check_.Submit([this, raw, first] {
    const auto t0 = std::chrono::steady_clock::now();
    raw->c = CompareValues(raw->ref->outputs, raw->got, t32_, t16_);
    if (raw->c.ok && !raw->ref->oracle.empty())
      raw->precision = MeasureTrialPrecision(raw->ref->outputs, raw->got, raw->ref->oracle, raw->ref->oracle_index);
    if (first) {
      raw->same_as_first = BytesEqual(raw->got, first->got);
      raw->got.clear();  // the first trial's outputs stay: the later ones are compared with them
    }
    raw->compare_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return raw->c.ok;
  });
}

std::vector<std::unique_ptr<TrialChecks::Trial>>& TrialChecks::Finish() {
  check_.Wait();
  for (size_t i = 0; i < trials_.size(); ++i)
    if (!trials_[i]->c.ok) {
      trials_.resize(i + 1);
      break;
    }
  return trials_;
}

}  // namespace kgym
