// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Rendering datperf's rows.
#include "tools/datperf/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace softdat::datperf {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
      continue;
    }
    out += ch;
  }
  return out + "\"";
}

std::string Number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", std::isfinite(value) ? value : 0.0);
  return buf;
}

}  // namespace

std::string SizeText(std::uint64_t size) {
  char buf[32];
  if (size >= (1u << 20) && size % (1u << 20) == 0) std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(size >> 20));
  else if (size >= 1024 && size % 1024 == 0) std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(size >> 10));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(size));
  return buf;
}

void PrintTable(const RunInfo& info, const std::vector<Row>& rows) {
  std::printf("datperf over %s (%s), reap %s%s%s\n", info.ia_name.c_str(), info.provider.c_str(), info.reap.c_str(),
              info.srq ? ", server SRQ" : "", info.one_buffer ? ", one buffer" : "");
  std::printf("%-9s %9s %8s %7s %7s %11s %11s %11s %10s\n", "test", "size", "clients", "window", "iters",
              "lat p50 us", "lat p99 us", "bw MB/s", "Mmsg/s");
  for (const Row& r : rows) {
    std::printf("%-9s %9s %8u %7u %7llu ", r.test.c_str(), SizeText(r.size).c_str(), r.clients, r.window,
                static_cast<unsigned long long>(r.iters));
    if (r.test == "lat" || r.test == "write_lat") std::printf("%11.2f %11.2f ", r.lat_us_p50, r.lat_us_p99);
    else std::printf("%11s %11s ", "-", "-");
    std::printf("%11.1f %10.4f\n", r.bw_MBps, r.msg_rate_Mps);
  }
}

void PrintJson(const RunInfo& info, const std::vector<Row>& rows) {
  std::ostringstream out;
  out << "{\"ia\": " << JsonString(info.ia_name) << ", \"provider\": " << JsonString(info.provider)
      << ", \"reap\": " << JsonString(info.reap) << ", \"srq\": " << (info.srq ? "true" : "false")
      << ", \"one_buffer\": " << (info.one_buffer ? "true" : "false") << ", \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << (i == 0 ? "\n  " : ",\n  ") << "{\"test\": " << JsonString(r.test) << ", \"size\": " << r.size
        << ", \"lat_us_p50\": " << Number(r.lat_us_p50) << ", \"lat_us_p99\": " << Number(r.lat_us_p99)
        << ", \"lat_us_avg\": " << Number(r.lat_us_avg) << ", \"bw_MBps\": " << Number(r.bw_MBps)
        << ", \"msg_rate_Mps\": " << Number(r.msg_rate_Mps) << ", \"iters\": " << r.iters
        << ", \"clients\": " << r.clients << ", \"window\": " << r.window << ", \"seconds\": " << Number(r.seconds)
        << ", \"bad_bytes\": " << r.bad_bytes << "}";
  }
  out << "\n]}\n";
  std::fputs(out.str().c_str(), stdout);
}

void PrintCsv(const std::vector<Row>& rows) {
  std::printf("test,size,lat_us_p50,lat_us_p99,lat_us_avg,bw_MBps,msg_rate_Mps,iters,clients,window,seconds,bad_bytes\n");
  for (const Row& r : rows)
    std::printf("%s,%llu,%s,%s,%s,%s,%s,%llu,%u,%u,%s,%llu\n", r.test.c_str(), static_cast<unsigned long long>(r.size),
                Number(r.lat_us_p50).c_str(), Number(r.lat_us_p99).c_str(), Number(r.lat_us_avg).c_str(),
                Number(r.bw_MBps).c_str(), Number(r.msg_rate_Mps).c_str(), static_cast<unsigned long long>(r.iters),
                r.clients, r.window, Number(r.seconds).c_str(), static_cast<unsigned long long>(r.bad_bytes));
}

bool WritePlot(const std::string& path, const RunInfo& info, const std::vector<Row>& rows, std::string& error) {
  // Two panels side by side: latency (p50) and bandwidth against size, log-log.
  constexpr int kW = 420, kH = 300, kLeft = 60, kTop = 40, kPlotW = 320, kPlotH = 210;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << 2 * kW << "\" height=\"" << kH
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"10\" y=\"16\" font-size=\"13\">datperf over " << info.ia_name << " (" << info.provider
      << "), reap " << info.reap << "</text>\n";
  auto panel = [&](int x0, const char* title, const char* unit, bool latency) {
    std::vector<std::pair<double, double>> points;
    for (const Row& r : rows) {
      const double y = latency ? r.lat_us_p50 : r.bw_MBps;
      const bool is_latency = r.test == "lat" || r.test == "write_lat";
      if (latency == is_latency && y > 0 && r.size > 0) points.emplace_back(r.size, y);
    }
    svg << "<g transform=\"translate(" << x0 << ",0)\"><text x=\"" << kLeft << "\" y=\"" << kTop - 8 << "\">" << title
        << " (" << unit << ")</text>\n<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotW
        << "\" height=\"" << kPlotH << "\" fill=\"none\" stroke=\"#888\"/>\n";
    if (points.empty()) {
      svg << "<text x=\"" << kLeft + 10 << "\" y=\"" << kTop + 20 << "\">no data</text></g>\n";
      return;
    }
    double xmin = points[0].first, xmax = xmin, ymin = points[0].second, ymax = ymin;
    for (auto [x, y] : points) {
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
    const double lx0 = std::log10(xmin), lx1 = std::log10(xmax) + (xmax == xmin ? 1 : 0);
    const double ly0 = std::floor(std::log10(ymin)), ly1 = std::ceil(std::log10(ymax)) + (ymax == ymin ? 1 : 0);
    auto px = [&](double x) { return kLeft + (std::log10(x) - lx0) / (lx1 - lx0) * kPlotW; };
    auto py = [&](double y) { return kTop + kPlotH - (std::log10(y) - ly0) / (ly1 - ly0 == 0 ? 1 : ly1 - ly0) * kPlotH; };
    for (double d = ly0; d <= ly1; d += 1)
      svg << "<text x=\"" << kLeft - 6 << "\" y=\"" << py(std::pow(10, d)) + 4 << "\" text-anchor=\"end\">"
          << Number(std::pow(10, d)) << "</text>\n";
    for (auto [x, y] : points)
      svg << "<text x=\"" << px(x) << "\" y=\"" << kTop + kPlotH + 14 << "\" text-anchor=\"middle\">"
          << SizeText(static_cast<std::uint64_t>(x)) << "</text>\n";
    svg << "<polyline fill=\"none\" stroke=\"#1f6fb2\" stroke-width=\"2\" points=\"";
    for (auto [x, y] : points) svg << px(x) << "," << py(y) << " ";
    svg << "\"/>\n";
    for (auto [x, y] : points) svg << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\"#1f6fb2\"/>\n";
    svg << "<text x=\"" << kLeft + kPlotW / 2 << "\" y=\"" << kTop + kPlotH + 30 << "\" text-anchor=\"middle\">message size</text></g>\n";
  };
  panel(0, "latency, half round trip p50", "us", true);
  panel(kW, "bandwidth", "MB/s", false);
  svg << "</svg>\n";
  std::ofstream file(path);
  if (!file || !(file << svg.str())) return error = "cannot write " + path, false;
  return true;
}

}  // namespace softdat::datperf
