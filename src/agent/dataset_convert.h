// Conversion of datasets into kgym task JSONL (one Task::ToJson per line): KernelBench folders, kgym's
// tasks/, task JSONL (normalised) and the Dr.Kernel parquet schema (prompt, reward_model.ground_truth,
// extra_info, data_source). Parquet is read by a short script run with `python` (pyarrow must be
// importable there); without pyarrow the conversion fails with an error that says so.
#pragma once

#include <string>

#include "core/status.h"

namespace kgym::agent {

struct ConvertOptions {
  std::string python = "/usr/bin/python3";
  std::string level;  // overrides the level of every task when not empty
};

// Converts `input` into `output`; `*count` receives the number of tasks written.
Status ConvertDataset(const std::string& input, const std::string& output, const ConvertOptions& opt, int* count);

}  // namespace kgym::agent
