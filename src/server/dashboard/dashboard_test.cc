#include "server/dashboard/dashboard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/dashboard/assets.h"
#include "server/dashboard/gpu_probe.h"

namespace kgym::dashboard {
namespace {

using nlohmann::json;

TEST(Assets, ThePageAndChartJsAreInTheBinary) {
  for (const char* name : {"index.html", "app.css", "kgym_core.js", "kgym_service.js", "kgym_runs.js", "kgym_app.js"})
    ASSERT_NE(FindAsset(name), nullptr) << name;
  const Asset* chart = FindAsset("chart.min.js");
  ASSERT_NE(chart, nullptr);
  EXPECT_NE(chart->data.find("Chart.js v3"), std::string_view::npos);
  EXPECT_EQ(chart->content_type, "text/javascript; charset=utf-8");
  EXPECT_NE(FindAsset("index.html")->data.find("/assets/kgym_app.js"), std::string_view::npos);
  EXPECT_EQ(FindAsset("../etc/passwd"), nullptr);
}

TEST(StandalonePage, InlinesEverythingAndKeepsDataInert) {
  json data = {{"run", {{"name", "</script><script>alert(1)</script>"}, {"warnings", json::array()}}},
               {"grade", nullptr},
               {"metrics", nullptr}};
  std::string html = StandalonePage(data, "run <b>x</b>");
  EXPECT_NE(html.find("<title>run &lt;b&gt;x&lt;/b&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("Chart.js v3"), std::string::npos);
  EXPECT_NE(html.find("kgym.startReport"), std::string::npos);
  // The data's "</script>" is written \u003c/script>: the JSON element cannot be closed from inside.
  EXPECT_EQ(html.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);  // nothing is fetched
  EXPECT_EQ(html.find("<link rel=\"stylesheet\""), std::string::npos);
}

TEST(GpuProbe, ParsesNvidiaSmiRows) {
  json rows = ParseNvidiaSmi("0, NVIDIA H200, 1024, 143771, 37, 41\n1, NVIDIA H200, [N/A], 143771, 0, 30\ngarbage\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["device"], "cuda:0");
  EXPECT_EQ(rows[0]["memory_used_mib"], 1024.0);
  EXPECT_EQ(rows[0]["utilization_percent"], 37.0);
  EXPECT_TRUE(rows[1]["memory_used_mib"].is_null());
  EXPECT_TRUE(ParseNvidiaSmi("").empty());
}

TEST(RunCatalog, ListsRunsUnderARootWithUniqueIds) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("kgym-catalog-" + std::to_string(getpid()));
  fs::remove_all(root);
  for (const char* sub : {"a/run1", "b/run1"}) {
    fs::create_directories(root / sub);
    std::ofstream(root / sub / "trajectories.jsonl") << R"({"key":"t#0","task_id":"t","turns":[]})"
                                                     << "\n";
  }
  fs::create_directories(root / "a" / "not_a_run");
  RunCatalog catalog({(root / "a").string(), (root / "b").string(), (root / "a" / "run1").string()});
  auto runs = catalog.List();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].first, "run1");
  EXPECT_EQ(runs[1].first, "run1-2");
  EXPECT_EQ(runs[2].first, "run1-3");
  json data;
  ASSERT_TRUE(catalog.ReportData("run1-2", "", &data).ok());
  EXPECT_EQ(data["grade"]["overall"]["num_samples"], 1);
  EXPECT_EQ(catalog.ReportData("nope", "", &data).code(), Status::Code::kNotFound);
  EXPECT_EQ(catalog.ReportData("run1", "val/step_1", &data).code(), Status::Code::kInvalidArgument);
  // A change to the file is seen on the next call.
  std::ofstream(root / "a" / "run1" / "trajectories.jsonl", std::ios::app)
      << R"({"key":"u#0","task_id":"u","turns":[]})"
      << "\n";
  ASSERT_TRUE(catalog.ReportData("run1", "", &data).ok());
  EXPECT_EQ(data["grade"]["overall"]["num_samples"], 2);
  fs::remove_all(root);
}

}  // namespace
}  // namespace kgym::dashboard
