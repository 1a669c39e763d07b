// SVG line plots: series, log axes, markers and notes render; text is escaped; points a log axis
// cannot show are skipped; an empty plot says so.
#include "common/svg_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace unmask::tools {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(SvgPlotTest, DrawsSeriesMarkersAndEscapedText) {
  LinePlot p;
  p.title = "tokens/s <batch> & latency";
  p.x_label = "batch";
  p.y_label = "tokens/s";
  p.log_x = p.log_y = true;
  p.series.push_back({"ar", {{1, 100}, {2, 190}, {4, 350}}, false, {}});
  p.series.push_back({"diffusion", {{1, 300}, {2, 310}, {4, 0}, {8, NAN}}, true, {"a", "b"}});
  p.markers.push_back({4, "crossover"});
  p.notes.push_back("a note");
  const std::string svg = RenderSvg(p);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("tokens/s &lt;batch&gt; &amp; latency"), std::string::npos);
  EXPECT_EQ(svg.find("<batch>"), std::string::npos);
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
  EXPECT_EQ(Count(svg, "<circle"), 5u);  // the zero and NaN points are skipped on log axes
  EXPECT_NE(svg.find("crossover"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"5,3\""), std::string::npos);  // the dashed series
  EXPECT_NE(svg.find(">a note<"), std::string::npos);
  EXPECT_NE(svg.find(">b<"), std::string::npos);  // point labels
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(SvgPlotTest, EmptyPlotSaysNoData) {
  LinePlot p;
  p.title = "nothing";
  p.series.push_back({"empty", {}, false, {}});
  const std::string svg = RenderSvg(p);
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

TEST(SvgPlotTest, LinearAxesAndWritingToAFile) {
  LinePlot p;
  p.series.push_back({"flat", {{0, 5}, {1, 5}}, false, {}});  // zero span in y
  const std::string path = testing::TempDir() + "/svg_plot_test.svg";
  ASSERT_TRUE(WriteSvg(p, path).ok());
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), RenderSvg(p));
  EXPECT_EQ(s.str().find("nan"), std::string::npos);
  const Status bad = WriteSvg(p, "/nonexistent-dir/x.svg");
  EXPECT_EQ(bad.code(), StatusCode::kInternal);
  EXPECT_NE(bad.message().find("/nonexistent-dir/x.svg"), std::string::npos);
}

}  // namespace
}  // namespace unmask::tools
