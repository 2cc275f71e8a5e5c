// Summary statistics of a timed series, computed on the trusted side from the supervisor's own timestamps.
#pragma once

#include <vector>

#include "core/evaluation.h"

namespace kgym {

TimingStats ComputeTimingStats(const std::vector<double>& samples_ms);

// Median of a series (the mean of the two middle values for an even count); -1 when empty.
double Median(std::vector<double> v);

// Ratio of the median of `later` to the median of `first` (1.0 when either is empty). A content-keyed cache
// makes calls on already-seen inputs much faster than calls on new ones.
double RepeatSpeedRatio(const std::vector<double>& first, const std::vector<double>& later);

}  // namespace kgym
