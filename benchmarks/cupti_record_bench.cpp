// CPU cost of the collector's CUDA path per CUPTI record, without a GPU: synthetic
// CUpti_ActivityKernel10 + CUpti_ActivityAPI pairs (one launch each, 64 distinct kernel names as
// in a training step) go through ActivityConverter and SqliteWriter::write_gpu_batch, one
// transaction per 4 MiB CUPTI buffer's worth of records, as the writer thread does.
//
//   cmake --build build --target cupti_record_bench && ./build/csrc/collect/cupti_record_bench
//
// Prints the median of 5 runs of 200 000 launches (400 000 records).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_activity.h"
#include "sqlite_writer.h"

namespace {

using namespace pyprof::collect;
using Clock = std::chrono::steady_clock;

constexpr int kLaunches = 200'000;
constexpr int kRuns = 5;
constexpr int kNames = 64;
constexpr int kLaunchesPerBuffer = 10'000;  // ~4 MiB of kernel + API records

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main() {
  std::vector<std::string> names;
  for (int i = 0; i < kNames; ++i) {
    names.push_back("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_" + std::to_string(i) +
                    "FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_");
  }
  std::vector<CUpti_ActivityKernel10> kernels(kLaunches);
  std::vector<CUpti_ActivityAPI> calls(kLaunches);
  for (int i = 0; i < kLaunches; ++i) {
    CUpti_ActivityAPI& a = calls[i];
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = 1'000'000 + uint64_t(i) * 10'000;
    a.end = a.start + 3'000;
    a.processId = 1000;
    a.threadId = 1000;
    a.correlationId = i + 1;
    CUpti_ActivityKernel10& k = kernels[i];
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = a.end + 2'000;
    k.end = k.start + 5'000;
    k.correlationId = i + 1;
    k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
    k.name = names[i % kNames].c_str();
  }
  const auto callback_name = [](CUpti_CallbackDomain, uint32_t) {
    return "cudaLaunchKernel_v7000";
  };
  ConversionWindow window;

  std::vector<double> convert_ns;
  std::vector<double> write_ns;
  for (int run = 0; run < kRuns; ++run) {
    StringTable strings;
    ActivityConverter converter(strings, callback_name, 1000, CuptiLayout::kCuda13);
    std::vector<GpuBatch> batches(kLaunches / kLaunchesPerBuffer);
    ConversionCounters counters;
    const auto t0 = Clock::now();
    for (int i = 0; i < kLaunches; ++i) {
      GpuBatch& batch = batches[i / kLaunchesPerBuffer];
      converter.convert(reinterpret_cast<const CUpti_Activity&>(calls[i]), window, batch, counters);
      converter.convert(reinterpret_cast<const CUpti_Activity&>(kernels[i]), window, batch,
                        counters);
    }
    const auto t1 = Clock::now();
    char path[] = "/tmp/pyprof_cupti_bench_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    std::string error;
    auto writer = SqliteWriter::open(path, &error);
    if (!writer) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    const auto t2 = Clock::now();
    bool ok =
        writer->begin() && writer->write_strings(strings.take_unwritten()) && writer->commit();
    for (const GpuBatch& batch : batches) {
      ok = ok && writer->begin() && writer->write_gpu_batch(batch) && writer->commit();
    }
    writer.reset();
    const auto t3 = Clock::now();
    std::remove(path);
    if (!ok) return 1;
    const double records = 2.0 * kLaunches;
    convert_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / records);
    write_ns.push_back(std::chrono::duration<double, std::nano>(t3 - t2).count() / records);
  }
  std::printf("%d launches (%d records) per run, median of %d runs\n", kLaunches, 2 * kLaunches,
              kRuns);
  std::printf(
      "convert: %.0f ns/record\nwrite:   %.0f ns/record (SQLite, one transaction per "
      "%d launches)\ntotal:   %.0f ns/record, %.2f us per kernel launch\n",
      median(convert_ns), median(write_ns), kLaunchesPerBuffer,
      median(convert_ns) + median(write_ns), 2 * (median(convert_ns) + median(write_ns)) / 1000.0);
  return 0;
}
