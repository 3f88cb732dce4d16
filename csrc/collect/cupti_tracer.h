// CUDA activity for the collector: kernels, runtime and driver calls, copies, memsets,
// synchronizations and device facts, recorded through the CUPTI Activity API.
//
// Started by the CUDA driver itself: the launcher sets CUDA_INJECTION64_PATH to the collector,
// and cuInit calls InitializeInjection (cuda_injection.cpp) before any CUDA work, so device
// records and the first kernels are not missed. CUPTI then reports on the collector's clock
// (timestamp callback) and with OS thread ids, so every launch call lands on the same globalTid
// and time line as the NVTX op range around it. Without a GPU nothing here ever runs.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "collector.h"
#include "cupti_api.h"
#include "gpu_activity.h"

namespace pyprof::collect {

class CuptiTracer final : public GpuTraceSource {
 public:
  // Starts CUDA tracing for `collector`, once per process; later calls do nothing. When CUPTI
  // cannot be used it prints one line, keeps the reason for PYPROF_CUDA_TRACE, and NVTX
  // recording goes on.
  static void start(Collector& collector) noexcept;

  // The program says that `tool` (torch.profiler) is about to ask CUPTI for CUDA activity
  // (pyprof_collect_cupti_request). Returns 1 when this collector holds CUPTI: the tool will get
  // none, and one line says so and what to do; 0 otherwise (its name is kept for the message
  // should this collector's own subscription fail later).
  static int announce_other_client(const std::string& tool) noexcept;

  void flush_for_exit() noexcept override;
  std::string status() const override;
  void fill_stats(CollectorStats& stats) const noexcept override;

 private:
  explicit CuptiTracer(Collector& collector) : collector_(collector) {}
  bool attach();  // false: status_ says why
  bool enable_gpu_kinds(bool enable);
  void set_status(std::string status);
  void on_profiler_api(bool start_call, bool enter);
  // A CUDA graph node created or cloned (CUPTI resource callback): one PYPROF_CUDA_GRAPH_NODES
  // row with this thread and time.
  void on_graph_node(CUpti_CallbackId cbid, const CUpti_GraphData& graph);
  void process_buffer(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t valid_size);

  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                        size_t size, size_t valid_size);
  static uint64_t CUPTIAPI timestamp();
  static void CUPTIAPI api_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                    const void* data);

  static std::atomic<CuptiTracer*> instance_;

  Collector& collector_;
  std::optional<CuptiApi> api_;
  std::unique_ptr<ActivityConverter> converter_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool attached_ = false;
  std::atomic<bool> holds_cupti_{false};  // subscribed: no other client can have CUPTI
  std::atomic<bool> flushed_{false};
  std::mutex kinds_mutex_;
  bool gpu_kinds_enabled_ = false;

  std::string missing_kinds_;  // " (no MEMCPY2 records: ...)" for kinds CUPTI refused

  mutable std::mutex status_mutex_;
  std::string status_ = "off: CUPTI was not started";
  std::string refused_clients_;  // "torch.profiler": clients that asked for CUPTI while we held it

  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> dropped_{0};  // CUPTI's count, which includes buffers we refused
  std::atomic<uint64_t> no_timestamp_{0};
  std::atomic<uint64_t> outside_window_{0};
  std::atomic<uint64_t> ignored_{0};
  std::atomic<uint64_t> outstanding_bytes_{0};  // buffers lent to CUPTI
  std::atomic<uint64_t> graph_nodes_{0};
  std::atomic<uint64_t> graph_nodes_unreadable_{0};  // cuptiGetGraph(Node)Id failed
};

}  // namespace pyprof::collect
