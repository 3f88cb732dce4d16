#include "prof/above_peak.h"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "prof/roofline.h"

namespace pyprof::prof {

double fastest_flop_rate(const PeakEntry& roof, std::string_view dtype, bool tensor_cores) {
  const std::optional<Mode> core = math_mode(dtype, 0, /*cpu=*/false);
  if (!core) return *std::max_element(roof.flops.begin(), roof.flops.end());
  double rate = mode_peak(roof, *core);
  if (tensor_cores || *core != Mode::kFp32) {
    if (const std::optional<Mode> tc = math_mode(dtype, 1, /*cpu=*/false)) {
      rate = std::max(rate, mode_peak(roof, *tc));
    }
  }
  return rate;
}

namespace {

// What a record is judged against on one device.
struct Limits {
  std::string name;  // for the warning
  const PeakEntry* roof = nullptr;
  double densest = 0;  // FLOP/s of the architecture's densest mode (DevicePeak::flops)
  double bandwidth = 0;
};

}  // namespace

void flag_above_peak(ReadResult& result, const PeaksFile* peaks) {
  if (result.cpu_only || result.devices.empty()) return;
  const std::vector<DeviceRoofs> roofs = resolve_device_roofs(result, peaks);
  std::vector<std::pair<int64_t, Limits>> devices;
  for (const DevicePeak& d : result.devices) {
    Limits l;
    l.name = d.name.empty() ? "device " + std::to_string(d.id) : d.name;
    l.densest = d.flops;
    l.bandwidth = d.memory_bandwidth;
    for (const DeviceRoofs& r : roofs) {
      if (r.id == d.id && r.roof) l.roof = &*r.roof;
    }
    devices.emplace_back(d.id, std::move(l));
  }
  std::unordered_map<uint64_t, double> peak_of;  // see below
  const ProfRecord* first = nullptr;
  const Limits* first_device = nullptr;
  double first_peak = 0;
  for (ProfRecord& r : result.records) {
    if (!r.counted || r.duration <= 0) continue;
    size_t index = devices.size();
    for (size_t k = 0; k < devices.size(); ++k) {
      if (devices[k].first == r.device) index = k;
    }
    if (index == devices.size()) continue;
    const Limits* device = &devices[index].second;
    double peak = device->densest;
    if (device->roof) {
      // Records repeat a few (device, dtype, Tensor Core) combinations: each judged once.
      const bool tensor_cores = r.tc == 1 || r.tc_eligible;
      const uint64_t key = (static_cast<uint64_t>(index) << 33) |
                           (static_cast<uint64_t>(r.dtype) << 1) | (tensor_cores ? 1 : 0);
      auto [it, added] = peak_of.try_emplace(key, 0.0);
      if (added) {
        it->second = fastest_flop_rate(*device->roof, result.strings.get(r.dtype), tensor_cores);
      }
      peak = it->second;
    }
    const double seconds = static_cast<double>(r.duration) * 1e-9;
    const double slack_seconds = static_cast<double>(r.duration + kTimerSlackNs) * 1e-9;
    const bool bytes_impossible =
        device->bandwidth > 0 && r.bytes / seconds > kBandwidthMargin * device->bandwidth;
    const bool flops_impossible = peak > 0 && r.flops / slack_seconds > kFlopPeakMargin * peak;
    if (!bytes_impossible && !flops_impossible) continue;
    r.above_peak = true;
    r.counted = false;
    if (result.above_peak++ == 0) {
      first = &r;
      first_device = device;
      first_peak = peak;
    }
  }
  if (!first) return;
  const double seconds = static_cast<double>(first->duration) * 1e-9;
  const std::string dtype(result.strings.get(first->dtype));
  result.warnings.push_back(fmt::format(
      "{} {} faster than their device can run (bytes over {:.0f}x its memory bandwidth, or FLOPs "
      "over {:.0f}% of the peak of the fastest unit their math could use, with {} ns added to "
      "each duration; first: {}, {:.0f} bytes and {:.0f} FLOPs{} in {} ns = {:.1f} GB/s, "
      "{:.3f} TFLOP/s on {} (peak {:.1f} GB/s, {:.1f} TFLOP/s)): a timing artefact or a cost "
      "its kernel did not do, flagged `above-peak` (column flag) and left out of the totals",
      result.above_peak, result.above_peak == 1 ? "record" : "records", kBandwidthMargin,
      kFlopPeakMargin * 100, kTimerSlackNs, result.strings.get(first->name), first->bytes,
      first->flops, dtype.empty() ? "" : " (" + dtype + ")", first->duration,
      first->bytes / seconds / 1e9, first->flops / seconds / 1e12, first_device->name,
      first_device->bandwidth / 1e9, first_peak / 1e12));
}

}  // namespace pyprof::prof
