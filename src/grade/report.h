// The Markdown report of a run (printed by `kgym grade`, written by `--report x.md`): the tables of the run view
// (per turn, best of history, per level, hacked turns by family, per task, and the last value of each training
// metric) from RunReportData (grade/run_folder.h), with the run's warnings first. The HTML report is the run view
// itself as one self-contained page (server/dashboard/standalone_page.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kgym::grade {

std::string MarkdownReport(const nlohmann::json& report_data, const std::string& title);

}  // namespace kgym::grade
