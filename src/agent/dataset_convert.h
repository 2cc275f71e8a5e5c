// Conversion of datasets into kgym task JSONL (one Task::ToJson per line): KernelBench folders, kgym's
// tasks/, task JSONL (normalised) and Dr.Kernel's parquet schemas (drkernel-validation-data and drkernel-rl-data:
// prompt, reward_model.ground_truth, extra_info, data_source). Parquet rows are read by a short script run with
// PythonInterpreter() (core/runtime_files.h), with setup.sh's learner packages (where pyarrow is) on its path.
//
// A bad record is reported against the input itself: "<input> row N: <field> ..." for parquet (rows counted from
// 1), "<input>:N: ..." for JSONL lines; nothing is written then. Records whose id repeats one read before do not
// fail the file: a copy of an earlier record (same reference code and prompt) is dropped; a different record
// under a used id is kept as "<id>#row<N>". `report` says what was done to each, row by row.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::agent {

struct ConvertOptions {
  std::string python;  // interpreter for parquet; "" = PythonInterpreter()
  std::string level;   // overrides the level of every task when not empty
};

struct ConvertReport {
  int written = 0;
  std::vector<std::string> notes;  // one line per dropped or renamed record
};

// Converts `input` into `output`.
Status ConvertDataset(const std::string& input, const std::string& output, const ConvertOptions& opt,
                      ConvertReport* report);

}  // namespace kgym::agent
