#include "grade/report.h"

#include <gtest/gtest.h>

#include "grade/metrics.h"

namespace kgym::grade {
namespace {

using nlohmann::json;

std::vector<json> TwoSamples() {
  auto turn = [](int n, double s) {
    return json{{"turn", n}, {"reward", 0.5 + 0.5 * s},
                {"result", {{"compiled", true}, {"correctness", true}, {"speedup", s}}}};
  };
  return {{{"key", "a#0"}, {"task_id", "a"}, {"level", "1"}, {"turns", {turn(1, 1.0), turn(2, 1.25)}}},
          {{"key", "a#1"}, {"task_id", "a"}, {"level", "1"}, {"turns", {turn(1, 0.5), turn(2, 2.0)}}}};
}

TEST(ReportTest, MarkdownHasTurnRows) {
  std::string md = MarkdownReport(Grade(TwoSamples()), "run <x>");
  EXPECT_NE(md.find("# run <x>"), std::string::npos);
  // Turn 2: both correct; Fast@1 = 100%, Fast@1.2 = 100%, Fast@1.5 = 50%, Fast@2 = 50%, Fast@3 = 0%.
  EXPECT_NE(md.find("| 2 | 2 | 100.0 | 100.0 | 100.0 | 100.0 | 50.0 | 50.0 | 0.0 |"), std::string::npos) << md;
}

TEST(ReportTest, HtmlIsSelfContainedWithSvgPlots) {
  std::string html = HtmlReport(Grade(TwoSamples()), "run <x>");
  EXPECT_NE(html.find("<title>run &lt;x&gt;</title>"), std::string::npos);
  EXPECT_GE(std::count(html.begin(), html.end(), '\n'), 3);
  size_t svgs = 0;
  for (size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1)) ++svgs;
  EXPECT_EQ(svgs, 3u);  // by turn, best of history, level 1
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);  // nothing fetched
  EXPECT_EQ(html.find(" href="), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
}

}  // namespace
}  // namespace kgym::grade
