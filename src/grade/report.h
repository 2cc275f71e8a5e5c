// Reports of a grade (grade/metrics.h): a Markdown summary (printed by `kgym grade`), and a self-contained
// HTML page (inline CSS and SVG, no scripts or network) with plots of Fast@p by turn and best-of-history.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kgym::grade {

std::string MarkdownReport(const nlohmann::json& grade, const std::string& title);
std::string HtmlReport(const nlohmann::json& grade, const std::string& title);

// One SVG line chart of rows[*][key][label] against rows[*].turn for every Fast@p label (percent).
std::string FastPlotSvg(const nlohmann::json& rows, const std::string& key, const std::string& caption);

}  // namespace kgym::grade
