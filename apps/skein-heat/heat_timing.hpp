// SPDX-License-Identifier: BSD-3-Clause
// How skein-heat times itself, on both paths (main.cpp's row split, heat_measure3d.cpp's process
// grid): wall time, medians, device time of a batch of launches, times for people.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <skein/event.hpp>
#include <skein/queue.hpp>

namespace skein::heat {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Device milliseconds of one f on one device: `per` runs back to back between two events, the
// median over `repeat` such batches after one warm-up batch. (Events around a single run of a
// kernel of tens of microseconds add microseconds of their own that move from run to run.)
template <class F>
double device_ms(const Queue& queue, std::size_t device_idx, int repeat, int per, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i <= repeat; ++i) {
    const Event start = queue.record_event(device_idx);
    for (int k = 0; k < per; ++k) f();
    const Event stop = queue.record_event(device_idx);
    stop.wait();
    if (i > 0) ms.push_back(stop.time_since(start) / per);
  }
  return median(ms);
}

inline std::string format_time(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

}  // namespace skein::heat
