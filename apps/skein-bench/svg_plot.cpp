// SPDX-License-Identifier: BSD-3-Clause
#include "svg_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <skein/error.hpp>
#include <string>
#include <vector>

namespace skein_bench {
namespace {

// The page: the plot area, with room for the tick labels on the left, the title on top, the axis
// label below and the legend on the right.
constexpr double width = 900, height = 500;
constexpr double left = 80, right = 290, top = 70, bottom = 70;
constexpr double plot_w = width - left - right, plot_h = height - top - bottom;

// Text as XML character data or an attribute value.
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// A round step (1, 2, 2.5 or 5 times a power of ten) giving about `count` intervals up to `max`.
double nice_step(double max, int count) {
  const double raw = max / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::vector<double> round_ticks(double max) {
  const double step = nice_step(max, 5);
  std::vector<double> ticks;
  for (int i = 0; i * step <= max * (1 + 1e-9); ++i) ticks.push_back(i * step);
  return ticks;
}

std::string number(double v) { return fmt::format("{:.4g}", v); }

}  // namespace

std::string render_svg(const LineChart& chart) {
  double x_max = 0, y_max = 0;
  for (const auto& s : chart.series) {
    for (const auto& p : s.points) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y) || p.x < 0 || p.y < 0) {
        throw skein::LogicError(skein::ErrorInfo{
            .what = fmt::format("the point ({}, {}) of the series '{}' cannot be drawn: it is not "
                                "finite or is negative",
                                p.x, p.y, s.name),
            .call = "skein-bench render_svg",
            .hint = "Plot finite, non-negative values (a time of 0 gives an infinite speed)."});
      }
      x_max = std::max(x_max, p.x);
      y_max = std::max(y_max, p.y);
    }
  }
  for (double t : chart.x_ticks) x_max = std::max(x_max, t);
  if (x_max <= 0) x_max = 1;
  if (y_max <= 0) y_max = 1;
  // A little room past the largest value, ending on a round tick for y.
  const std::vector<double> y_ticks = round_ticks(y_max * 1.05);
  const double y_top = std::max(y_ticks.back(), y_max * 1.05);
  const std::vector<double> x_ticks = chart.x_ticks.empty() ? round_ticks(x_max) : chart.x_ticks;
  // Room right of the last point for its label.
  const double x_right = x_max * 1.2;
  auto px = [&](double x) { return left + x / x_right * plot_w; };
  auto py = [&](double y) { return top + plot_h - y / y_top * plot_h; };

  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  svg += fmt::format("<text x=\"{}\" y=\"28\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
                     left, escape(chart.title));
  if (!chart.subtitle.empty()) {
    svg += fmt::format("<text x=\"{}\" y=\"48\" fill=\"#555\">{}</text>\n", left,
                       escape(chart.subtitle));
  }

  // Grid and ticks, then the axes over them.
  svg += "<g class=\"grid\" stroke=\"#ddd\" stroke-width=\"1\">\n";
  for (double t : y_ticks) {
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", left,
                       py(t), left + plot_w, py(t));
  }
  for (double t : x_ticks) {
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>\n", px(t),
                       top, px(t), top + plot_h);
  }
  svg += "</g>\n<g class=\"ticks\" fill=\"#333\">\n";
  for (double t : y_ticks) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 8,
                       py(t) + 4, number(t));
  }
  for (double t : x_ticks) {
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(t),
                       top + plot_h + 18, number(t));
  }
  svg += "</g>\n";
  svg += fmt::format(
      "<g class=\"axes\" stroke=\"#000\" stroke-width=\"1.5\">"
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
      "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\"/></g>\n",
      left, top + plot_h, left + plot_w, top);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     left + plot_w / 2, height - 22, escape(chart.x_label));
  svg += fmt::format(
      "<text x=\"22\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 22 {0:.1f})\">"
      "{1}</text>\n",
      top + plot_h / 2, escape(chart.y_label));

  // The series: a line through the points, a marker with its tooltip, and its label.
  for (const auto& s : chart.series) {
    const std::string dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
    svg += fmt::format("<g class=\"series {}\">\n", escape(s.css_class));
    if (s.points.size() > 1) {
      std::string path;
      for (const auto& p : s.points) path += fmt::format("{:.1f},{:.1f} ", px(p.x), py(p.y));
      svg += fmt::format(
          "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", path,
          escape(s.colour), dash);
    }
    if (s.markers) {
      for (const auto& p : s.points) {
        svg += fmt::format(
            "<circle class=\"point {}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4.5\" fill=\"{}\">"
            "<title>{}</title></circle>\n",
            escape(s.css_class), px(p.x), py(p.y), escape(s.colour), escape(p.tooltip));
        if (!p.label.empty()) {
          svg += fmt::format(
              "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"{}\">{}</text>\n",
              px(p.x) + 7, py(p.y) - 7, escape(s.colour), escape(p.label));
        }
      }
    }
    svg += "</g>\n";
  }

  // The legend, right of the plot: a line sample (and marker) per series.
  svg += "<g class=\"legend\">\n";
  double y = top + 10;
  for (const auto& s : chart.series) {
    const double x = left + plot_w + 20;
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2\"{}/>",
        x, y, x + 28, y, escape(s.colour), s.dashed ? " stroke-dasharray=\"6 4\"" : "");
    if (s.markers) {
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4.5\" fill=\"{}\"/>", x + 14, y,
                         escape(s.colour));
    }
    svg +=
        fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", x + 36, y + 4, escape(s.name));
    y += 22;
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace skein_bench
