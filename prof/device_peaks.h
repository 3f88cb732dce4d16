// Peak rates of the devices a profile ran on, for the roofline (docs/peaks.md): the built-in
// datasheet table (prof/gpu_peaks.txt, compiled in), peaks derived from the header's SMs, clock
// and compute capability for a GPU the table lacks, and `--peaks FILE` entries (datasheet
// overrides and measured roofs, the format `pyprof peak` writes).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prof/records.h"

namespace pyprof::prof {

// A math mode: the unit and precision an op's FLOPs run on. `_tc` modes are Tensor Core
// (FP32 accumulate); fp16 and bf16 are CUDA-core (or CPU) arithmetic.
enum class Mode : uint8_t {
  kFp64,
  kFp64Tc,
  kFp32,
  kTf32Tc,
  kFp16Tc,
  kBf16Tc,
  kFp8Tc,
  kInt8Tc,
  kFp4Tc,
  kFp16,
  kBf16,
};
inline constexpr size_t kModeCount = 11;

// "fp64", "tf32_tc", ... (the names of the peaks file and the reports).
const char* mode_name(Mode mode);
// The mode of a name; nullopt for an unknown one.
std::optional<Mode> mode_from_name(std::string_view name);

// One device's peaks: a row of the built-in table, a derived entry, or an entry of a peaks file.
struct PeakEntry {
  std::string kind;  // datasheet | derived | measured | override
  std::string gpu;   // the table's short name ("H100 SXM5"); peaks file: its `name`
  std::string name;  // CUDA device name ("NVIDIA H100 80GB HBM3"); peaks file: its `name`
  int cc_major = 0, cc_minor = 0;  // 0: unknown
  int64_t sm_count = 0;
  double clock_hz = 0;
  double memory_gb = 0;                           // nominal memory size (GB as the datasheet says)
  double memory_bandwidth = 0;                    // bytes/s; 0: unknown (no memory roof)
  std::string bandwidth_marks;                    // "u": unconfirmed
  std::array<double, kModeCount> flops{};         // FLOP/s (INT8: OP/s); 0: no such unit
  std::array<std::string, kModeCount> marks{};    // per mode: "d", "u", "h" (see gpu_peaks.txt)
  std::string identity_sources, compute_sources;  // the reference's ids ("N2,N17")
  std::string source;  // derived / peaks file: where the numbers come from, in words

  double peak(Mode m) const { return flops[static_cast<size_t>(m)]; }
  // The Source column of the peaks report for mode `m` (or the bandwidth when m is nullopt).
  std::string describe_source(std::optional<Mode> m) const;
};

// The built-in datasheet table.
class PeakTable {
 public:
  // Parses gpu_peaks.txt's text; nullopt with `errors` (line: problem) when it is malformed.
  static std::optional<PeakTable> parse(std::string_view text, std::vector<std::string>& errors);
  // The compiled-in table (prof/gpu_peaks.txt).
  static const PeakTable& builtin();
  static std::string_view builtin_text();

  const std::vector<PeakEntry>& entries() const { return entries_; }
  // The entry for a CUDA device name: an exact match first, then the same words ignoring case,
  // punctuation and the `NVIDIA`/`Tesla` prefixes; nullptr when none.
  const PeakEntry* find_by_name(std::string_view cuda_name) const;
  // The entry of a GPU whose name the table lacks ("NVIDIA A100-PG509-200"): the rows of the
  // same model word (a100), compute capability and SM count, narrowed by memory size when
  // `total_memory` (bytes) is known, when they all hold the same peaks and bandwidth; nullptr
  // otherwise (an ambiguous name such as "NVIDIA H100" without its memory size).
  const PeakEntry* find_by_model(std::string_view name, int cc_major, int cc_minor,
                                 int64_t sm_count, double total_memory) const;

 private:
  std::vector<PeakEntry> entries_;
};

// Names compared by their words: lower case, split at spaces, '-' and '_', without the
// `nvidia` and `tesla` words ("Tesla V100-SXM2-16GB" -> "v100 sxm2 16gb").
std::string normalized_gpu_name(std::string_view name);

// Peaks from the per-SM rates of an architecture (reference §3): SMs x clock x FLOP/clk/SM per
// mode, memory bandwidth as given. nullopt when the architecture is not in the rate table.
// `geforce`: the GeForce rates (half-rate FP32-accumulate Tensor modes).
std::optional<PeakEntry> derive_peaks(int cc_major, int cc_minor, int64_t sm_count, double clock_hz,
                                      double memory_bandwidth, bool geforce);

// The entries of a `--peaks` file (docs/peaks.md): kind "datasheet" (shown as `override`) or
// "measured"; `name` is a CUDA device name, "*" (every GPU) or "cpu" (the host CPU).
struct PeaksFile {
  std::string path;
  std::vector<PeakEntry> entries;
};

// Reads and checks a peaks file; false with `error` naming the file, the entry and the problem.
bool read_peaks_file(const std::string& path, PeaksFile& out, std::string& error);
// The same from text (`path` names it in messages).
bool parse_peaks_json(std::string_view text, const std::string& path, PeaksFile& out,
                      std::string& error);

// What prof knows about one device of a profile: its roof (datasheet, derived or override
// peaks) and its measured roofs, or why it has none.
struct DeviceRoofs {
  std::string device;                 // the CUDA ordinal as text, or "cpu"
  int64_t id = -1;                    // CUDA ordinal; -1 for the CPU
  std::string name;                   // the header's device name ("" when the header names none)
  std::optional<PeakEntry> roof;      // the one the roofline uses
  std::optional<PeakEntry> measured;  // shown beside it
  std::string reason;                 // why there is no roof (empty when there is one)
  double header_bandwidth = 0;        // the header's memory_bandwidth (bytes/s), 0: not given
};

// The roofs of the devices of a profile: the GPUs its records ran on (the header's entry, or
// none for an id the header lacks; every header GPU when no record names one), or the host CPU
// (CPU-only profile). `file` may be null.
std::vector<DeviceRoofs> resolve_device_roofs(const ReadResult& data, const PeaksFile* file);

}  // namespace pyprof::prof
