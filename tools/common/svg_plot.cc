#include "common/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace unmask::tools {
namespace {

constexpr double kWidth = 840, kHeight = 520;
constexpr double kLeft = 80, kRight = 200, kTop = 50, kBottom = 60;  // margins; legend right
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// Axis tick label: compact, 3 significant digits.
std::string Tick(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.3gM", v / 1e6);
  } else if (a >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.3gk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  }
  return buf;
}

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;
  double a0 = 0, a1 = 1;  // pixel range

  bool Drawable(double v) const { return std::isfinite(v) && (!log || v > 0); }
  double T(double v) const { return log ? std::log10(v) : v; }
  double Px(double v) const { return a0 + (T(v) - T(lo)) / (T(hi) - T(lo)) * (a1 - a0); }

  void Fit(double mn, double mx) {
    if (!(mn <= mx)) mn = mx = log ? 1.0 : 0.0;
    if (log) {
      lo = std::pow(10.0, std::floor(std::log10(mn)));
      hi = std::pow(10.0, std::ceil(std::log10(mx)));
      if (hi <= lo) hi = lo * 10;
    } else {
      const double span = mx > mn ? mx - mn : std::max(std::fabs(mx), 1.0);
      lo = mn >= 0 && mn - 0.05 * span <= 0 ? 0.0 : mn - 0.05 * span;
      hi = mx + 0.05 * span;
    }
  }

  std::vector<double> Ticks() const {
    std::vector<double> t;
    if (log) {
      for (double v = lo; v <= hi * 1.0001; v *= 10) {
        t.push_back(v);
        // Intermediate 2x and 5x ticks when the axis spans few decades.
        if (hi / lo <= 1000.01) {
          if (v * 2 < hi) t.push_back(v * 2);
          if (v * 5 < hi) t.push_back(v * 5);
        }
      }
      std::sort(t.begin(), t.end());
      return t;
    }
    const double raw = (hi - lo) / 6;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
      if (raw <= m * mag) {
        step = m * mag;
        break;
      }
    }
    for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) t.push_back(v);
    return t;
  }
};

}  // namespace

std::string RenderSvg(const LinePlot& plot) {
  Axis x{plot.log_x}, y{plot.log_y};
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  bool any = false;
  for (const PlotSeries& s : plot.series) {
    for (auto [px, py] : s.points) {
      if (!x.Drawable(px) || !y.Drawable(py)) continue;
      any = true;
      xmin = std::min(xmin, px), xmax = std::max(xmax, px);
      ymin = std::min(ymin, py), ymax = std::max(ymax, py);
    }
  }
  for (const PlotMarker& m : plot.markers) {
    if (x.Drawable(m.x)) xmin = std::min(xmin, m.x), xmax = std::max(xmax, m.x);
  }
  x.Fit(xmin, xmax);
  y.Fit(ymin, ymax);
  x.a0 = kLeft, x.a1 = kWidth - kRight;
  y.a0 = kHeight - kBottom, y.a1 = kTop;
  const double height = kHeight + 16.0 * static_cast<double>(plot.notes.size());

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << kWidth << " " << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << kWidth / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
    << Escape(plot.title) << "</text>\n";
  // Grid and ticks.
  for (double t : x.Ticks()) {
    const double px = x.Px(t);
    o << "<line x1=\"" << Num(px) << "\" y1=\"" << Num(y.a1) << "\" x2=\"" << Num(px) << "\" y2=\""
      << Num(y.a0) << "\" stroke=\"#e5e5e5\"/>\n"
      << "<text x=\"" << Num(px) << "\" y=\"" << Num(y.a0 + 16) << "\" text-anchor=\"middle\">"
      << Tick(t) << "</text>\n";
  }
  for (double t : y.Ticks()) {
    const double py = y.Px(t);
    o << "<line x1=\"" << Num(x.a0) << "\" y1=\"" << Num(py) << "\" x2=\"" << Num(x.a1)
      << "\" y2=\"" << Num(py) << "\" stroke=\"#e5e5e5\"/>\n"
      << "<text x=\"" << Num(x.a0 - 6) << "\" y=\"" << Num(py + 4) << "\" text-anchor=\"end\">"
      << Tick(t) << "</text>\n";
  }
  o << "<rect x=\"" << Num(x.a0) << "\" y=\"" << Num(y.a1) << "\" width=\"" << Num(x.a1 - x.a0)
    << "\" height=\"" << Num(y.a0 - y.a1) << "\" fill=\"none\" stroke=\"#333\"/>\n"
    << "<text x=\"" << Num((x.a0 + x.a1) / 2) << "\" y=\"" << Num(y.a0 + 40)
    << "\" text-anchor=\"middle\">" << Escape(plot.x_label) << "</text>\n"
    << "<text transform=\"translate(20," << Num((y.a0 + y.a1) / 2)
    << ") rotate(-90)\" text-anchor=\"middle\">" << Escape(plot.y_label) << "</text>\n";
  if (!any) {
    o << "<text x=\"" << Num((x.a0 + x.a1) / 2) << "\" y=\"" << Num((y.a0 + y.a1) / 2)
      << "\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n";
  }
  for (const PlotMarker& m : plot.markers) {
    if (!x.Drawable(m.x)) continue;
    const double px = x.Px(m.x);
    o << "<line x1=\"" << Num(px) << "\" y1=\"" << Num(y.a1) << "\" x2=\"" << Num(px) << "\" y2=\""
      << Num(y.a0) << "\" stroke=\"#555\" stroke-dasharray=\"6,4\"/>\n"
      << "<text x=\"" << Num(px + 4) << "\" y=\"" << Num(y.a1 + 14) << "\" fill=\"#333\">"
      << Escape(m.label) << "</text>\n";
  }
  // Series and legend.
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const char* color = kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))];
    std::string path;
    for (size_t k = 0; k < s.points.size(); ++k) {
      const auto [px, py] = s.points[k];
      if (!x.Drawable(px) || !y.Drawable(py)) continue;
      path += (path.empty() ? "" : " ") + Num(x.Px(px)) + "," + Num(y.Px(py));
      o << "<circle cx=\"" << Num(x.Px(px)) << "\" cy=\"" << Num(y.Px(py)) << "\" r=\"3.5\" fill=\""
        << color << "\"/>\n";
      if (k < s.point_labels.size() && !s.point_labels[k].empty()) {
        o << "<text x=\"" << Num(x.Px(px) + 5) << "\" y=\"" << Num(y.Px(py) - 5)
          << "\" font-size=\"10\" fill=\"" << color << "\">" << Escape(s.point_labels[k])
          << "</text>\n";
      }
    }
    if (!path.empty()) {
      o << "<polyline points=\"" << path << "\" fill=\"none\" stroke=\"" << color
        << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"5,3\"" : "") << "/>\n";
    }
    const double ly = kTop + 10 + 20.0 * static_cast<double>(i);
    o << "<line x1=\"" << Num(x.a1 + 14) << "\" y1=\"" << Num(ly) << "\" x2=\"" << Num(x.a1 + 38)
      << "\" y2=\"" << Num(ly) << "\" stroke=\"" << color << "\" stroke-width=\"2\""
      << (s.dashed ? " stroke-dasharray=\"5,3\"" : "") << "/>\n"
      << "<text x=\"" << Num(x.a1 + 44) << "\" y=\"" << Num(ly + 4) << "\">" << Escape(s.name)
      << "</text>\n";
  }
  for (size_t i = 0; i < plot.notes.size(); ++i) {
    o << "<text x=\"" << Num(kLeft) << "\" y=\"" << Num(kHeight - 4 + 16.0 * static_cast<double>(i))
      << "\" font-size=\"11\" fill=\"#555\">" << Escape(plot.notes[i]) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

Status WriteSvg(const LinePlot& plot, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return InternalError(path + ": cannot write the plot");
  out << RenderSvg(plot);
  out.close();
  if (!out) return InternalError(path + ": cannot write the plot");
  return Status::Ok();
}

}  // namespace unmask::tools
