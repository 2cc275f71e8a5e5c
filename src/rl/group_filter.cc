#include "rl/group_filter.h"

#include <cmath>

namespace kgym::rl {

Status ZeroVarianceGroupFilter(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask,
                               const GroupFilterOptions& opt, std::vector<uint8_t>* group_keep, uint8_t* row_keep) {
  if (rows.size > 0 && rows.group == nullptr) return Status::InvalidArgument("group filter: group ids are required");
  TurnLayout layout;
  if (Status s = ValidateTurnRows(rows, opt.num_groups, &layout); !s.ok()) return s;
  const size_t groups = static_cast<size_t>(layout.num_groups);
  std::vector<double> sum(groups, 0.0), m2(groups, 0.0);
  std::vector<int64_t> count(groups, 0);
  auto effective = [&](size_t k) { return (loss_mask == nullptr || loss_mask[k]) ? rewards[k] : 0.0; };
  // Welford per group over the selected rows.
  auto add = [&](size_t k) {
    const size_t g = static_cast<size_t>(rows.group[k]);
    const double x = effective(k);
    const int64_t n = ++count[g];
    const double mean_old = n > 1 ? sum[g] / static_cast<double>(n - 1) : 0.0;
    sum[g] += x;
    const double mean_new = sum[g] / static_cast<double>(n);
    if (n > 1) m2[g] += (x - mean_old) * (x - mean_new);
  };
  for (size_t i = 0; i < rows.size;) {
    size_t end = i + 1;
    while (end < rows.size && rows.traj[end] == rows.traj[i]) ++end;
    if (opt.last_turn_only) {
      for (size_t k = end; k-- > i;) {
        if (rows.turn[k] > 0) {
          add(k);
          break;
        }
      }
    } else {
      for (size_t k = i; k < end; ++k) {
        if (rows.turn[k] > 0 && (loss_mask == nullptr || loss_mask[k])) add(k);
      }
    }
    i = end;
  }
  group_keep->assign(groups, 0);
  for (size_t g = 0; g < groups; ++g) {
    const int64_t n = count[g];
    bool keep = n > 0 && n >= opt.min_group_size;
    if (keep && n > 1) keep = std::sqrt(m2[g] / static_cast<double>(n - 1)) >= opt.min_std;
    (*group_keep)[g] = keep ? 1 : 0;
  }
  for (size_t i = 0; i < rows.size; ++i) {
    const int64_t g = rows.group[i];
    row_keep[i] = (g >= 0 && static_cast<size_t>(g) < groups) ? (*group_keep)[static_cast<size_t>(g)] : 0;
  }
  return Status::Ok();
}

}  // namespace kgym::rl
