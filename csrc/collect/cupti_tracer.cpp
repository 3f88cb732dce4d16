#include "cupti_tracer.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "clock.h"
#include "common/nsys_schema.h"
#include "cupti_abi_checks.h"  // what this file takes from the CUDA 13 headers holds for CUDA 12
#include "diagnostics.h"

namespace pyprof::collect {

std::atomic<CuptiTracer*> CuptiTracer::instance_{nullptr};

namespace {

// One CUPTI buffer. Kineto uses 4 MiB too: about 20 000 kernel records.
constexpr size_t kBufferBytes = size_t{4} << 20;
constexpr size_t kBufferAlignment = 8;  // ACTIVITY_RECORD_ALIGNMENT

// Enabled for the whole run, or only inside the cudaProfilerApi capture range.
constexpr CUpti_ActivityKind kGpuKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,  // not KERNEL: that one serialises kernels
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};
// Always enabled: CUDA emits them once, at initialisation or context creation.
constexpr CUpti_ActivityKind kDescriptionKinds[] = {
    CUPTI_ACTIVITY_KIND_DEVICE,
    CUPTI_ACTIVITY_KIND_CONTEXT,
};

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return "DEVICE";
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      return "CONTEXT";
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return "RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return "DRIVER";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return "MEMCPY2";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "MEMSET";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return "SYNCHRONIZATION";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "EXTERNAL_CORRELATION";
    default:
      return "activity";
  }
}

// cudaProfilerStart() calls the driver's cuProfilerStart(): both callbacks fire. The runtime
// one is authoritative while it runs on this thread.
thread_local bool t_in_runtime_profiler_call = false;

// Other CUPTI clients the program announced (pyprof_collect_cupti_request): the last one that
// came before this collector held CUPTI is the likely holder when its subscription fails.
std::mutex g_clients_mutex;
std::string g_announced_client;

}  // namespace

void CuptiTracer::start(Collector& collector) noexcept {
  static std::once_flag once;
  try {
    std::call_once(once, [&collector] {
      if (!collector.config().cuda_trace) return;  // PYPROF_CUDA_TRACE=0: status says so
      auto* tracer = new CuptiTracer(collector);   // never deleted: CUPTI may call back late
      instance_.store(tracer);
      collector.attach_gpu_trace(tracer);
      if (!tracer->attach())
        print_line("CUDA kernels are not recorded: %s", tracer->status().c_str());
    });
  } catch (...) {
  }
}

void CuptiTracer::set_status(std::string status) {
  std::lock_guard lock(status_mutex_);
  status_ = std::move(status);
}

std::string CuptiTracer::status() const {
  std::lock_guard lock(status_mutex_);
  if (refused_clients_.empty()) return status_;
  return status_ + "; CUPTI refused to " + refused_clients_ + ", which asked for it later";
}

int CuptiTracer::announce_other_client(const std::string& tool) noexcept {
  try {
    CuptiTracer* tracer = instance_.load();
    if (tracer == nullptr || !tracer->holds_cupti_.load()) {
      std::lock_guard lock(g_clients_mutex);
      g_announced_client = tool;
      return 0;
    }
    {
      std::lock_guard lock(tracer->status_mutex_);
      const std::string listed = ", " + tracer->refused_clients_ + ",";
      if (listed.find(", " + tool + ",") != std::string::npos) return 1;  // said once already
      tracer->refused_clients_ += (tracer->refused_clients_.empty() ? "" : ", ") + tool;
    }
    print_line(
        "%s asked for CUDA activity, but pyprof profile holds CUPTI, which serves one client "
        "per process: %s records no GPU events in this run (pyprof's database has the "
        "kernels); to give it CUPTI, run `pyprof profile --no-cuda-trace` (NVTX ranges only)",
        tool.c_str(), tool.c_str());
    return 1;
  } catch (...) {
    return 0;
  }
}

bool CuptiTracer::attach() {
  std::string error;
  api_ = load_cupti(collector_.config().cupti_library, &error);
  if (!api_) {
    set_status("off: " + error);
    return false;
  }
  const CuptiApi& api = *api_;
  const auto failed = [&](const char* call, CUptiResult result) {
    std::string status = std::string("off: ") + call + " failed with " + api.result_name(result) +
                         " (" + api.describe() + ")";
    if (api.driver_version > 0) {
      // The usual cause when nothing else is wrong: a libcupti newer than the driver.
      status += "; the driver runs CUDA " + std::to_string(api.driver_version / 1000) + "." +
                std::to_string(api.driver_version % 1000 / 10) +
                ": a libcupti of that release, or a newer driver, may be needed";
    } else {
      status += "; no NVIDIA driver answered (libcuda.so.1 not loaded)";
    }
    set_status(std::move(status));
    return false;
  };

  // The subscriber is CUPTI's lock (CUDA 12 and 13): only one tool may hold it. If
  // torch.profiler, Nsight Systems or Nsight Compute has it, enabling activity kinds would steal
  // its buffers. The first client keeps CUPTI; the other records without it (docs/install.md).
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUptiResult result;
  if (api.Subscribe_v2 != nullptr) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "pyprof";
    params.oldSubscriberName = other;
    params.oldSubscriberSize = sizeof(other) - 1;
    result = api.Subscribe_v2(&subscriber_, &CuptiTracer::api_callback, this, &params);
  } else {
    result = api.Subscribe(&subscriber_, &CuptiTracer::api_callback, this);
  }
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    std::string holder = other;  // CUDA 13 names the holder; CUDA 12 does not
    if (holder.empty()) {
      std::lock_guard lock(g_clients_mutex);
      holder = g_announced_client;
    }
    if (holder.empty()) holder = "another tool (torch.profiler, Nsight Systems, Nsight Compute?)";
    set_status("off: CUPTI is already in use by " + holder +
               " (CUPTI serves one client per process); NVTX ranges were recorded, CUDA kernels "
               "were not: the kernels are in " +
               holder + "'s own trace");
    return false;
  }
  if (result != CUPTI_SUCCESS) return failed("cuptiSubscribe", result);

  for (const auto& [domain, cbid] :
       {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API,
                  CUpti_CallbackId{CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000}},
        std::pair{CUPTI_CB_DOMAIN_RUNTIME_API,
                  CUpti_CallbackId{CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000}},
        std::pair{CUPTI_CB_DOMAIN_DRIVER_API,
                  CUpti_CallbackId{CUPTI_DRIVER_TRACE_CBID_cuProfilerStart}},
        std::pair{CUPTI_CB_DOMAIN_DRIVER_API,
                  CUpti_CallbackId{CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}}}) {
    if ((result = api.EnableCallback(1, subscriber_, domain, cbid)) != CUPTI_SUCCESS) {
      return failed("cuptiEnableCallback", result);
    }
  }
  // CUDA graph nodes as they are made and cloned: a replayed kernel is attributed to the op that
  // launched it at capture (docs/formats.md §2.1). Without them replays keep the replay's op.
  if (api.GetGraphNodeId != nullptr && api.GetGraphId != nullptr) {
    bool graphs = true;
    for (const CUpti_CallbackId cbid : {CUpti_CallbackId{CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED},
                                        CUpti_CallbackId{CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED}}) {
      graphs = graphs &&
               api.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid) == CUPTI_SUCCESS;
    }
    if (!graphs) missing_kinds_ += " (no CUDA graph node callbacks: replays keep the replay's op)";
  } else {
    missing_kinds_ += " (no cuptiGetGraphNodeId: replays keep the replay's op)";
  }
  // OS thread ids (gettid), as NVTX_EVENTS.globalTid has them; CUPTI's default is pthread_self.
  if ((result = api.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) != CUPTI_SUCCESS) {
    return failed("cuptiSetThreadIdType", result);
  }
  // Before any kind is enabled, so that every record uses the collector's clock.
  if ((result = api.ActivityRegisterTimestampCallback(&CuptiTracer::timestamp)) != CUPTI_SUCCESS) {
    return failed("cuptiActivityRegisterTimestampCallback", result);
  }
  if ((result = api.ActivityRegisterCallbacks(&CuptiTracer::buffer_requested,
                                              &CuptiTracer::buffer_completed)) != CUPTI_SUCCESS) {
    return failed("cuptiActivityRegisterCallbacks", result);
  }
  const CuptiApi* api_pointer = &*api_;
  converter_ = std::make_unique<ActivityConverter>(
      collector_.strings(),
      [api_pointer](CUpti_CallbackDomain domain, uint32_t cbid) -> const char* {
        const char* name = nullptr;
        return api_pointer->GetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS ? name : nullptr;
      },
      static_cast<uint32_t>(collector_.pid()), api.layout);
  // Device facts help prof but attribution does not need them: a failure is only noted.
  for (const CUpti_ActivityKind kind : kDescriptionKinds) {
    if ((result = api.ActivityEnable(kind)) != CUPTI_SUCCESS) {
      const std::string note =
          std::string(" (no ") + kind_name(kind) + " records: " + api.result_name(result) + ")";
      print_line("CUDA trace%s", note.c_str());
      missing_kinds_ += note;
    }
  }
  attached_ = true;
  holds_cupti_.store(true);
  if (!collector_.config().capture_range_cuda_profiler && !enable_gpu_kinds(true)) return false;
  set_status("on: " + api.describe() + ", " + layout_name(api.layout) + " records" +
             (collector_.config().capture_range_cuda_profiler
                  ? ", between cudaProfilerStart() and cudaProfilerStop()"
                  : "") +
             missing_kinds_);
  return true;
}

bool CuptiTracer::enable_gpu_kinds(bool enable) {
  std::lock_guard lock(kinds_mutex_);
  if (!attached_ || gpu_kinds_enabled_ == enable) return true;
  for (const CUpti_ActivityKind kind : kGpuKinds) {
    const CUptiResult result = enable ? api_->ActivityEnable(kind) : api_->ActivityDisable(kind);
    const bool essential =
        kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_RUNTIME;
    if (result != CUPTI_SUCCESS && !essential) {
      // Copies, syncs or driver calls missing still leave kernels attributable.
      if (enable) {
        const std::string note =
            std::string(" (no ") + kind_name(kind) + " records: " + api_->result_name(result) + ")";
        print_line("CUDA trace%s", note.c_str());
        missing_kinds_ += note;
      }
      continue;
    }
    if (result != CUPTI_SUCCESS) {
      set_status(std::string("off: cuptiActivity") + (enable ? "Enable" : "Disable") + "(" +
                 kind_name(kind) + ") failed with " + api_->result_name(result));
      print_line("CUDA kernels are not recorded: %s", status().c_str());
      return false;
    }
  }
  gpu_kinds_enabled_ = enable;
  return true;
}

void CuptiTracer::on_profiler_api(bool start_call, bool enter) {
  // Without --capture-range cudaProfilerApi these calls mean nothing to us (nsys too ignores
  // them then). Start counts at the call's exit, stop at its entry: the window holds neither.
  if (!collector_.config().capture_range_cuda_profiler) return;
  if (start_call && !enter) {
    if (collector_.begin_capture()) enable_gpu_kinds(true);
  } else if (!start_call && enter) {
    if (collector_.end_capture()) enable_gpu_kinds(false);
  }
}

void CuptiTracer::on_graph_node(CUpti_CallbackId cbid, const CUpti_GraphData& graph) {
  GraphNodeRow row;
  uint32_t graph_id = 0;
  if (api_->GetGraphNodeId(graph.node, &row.node_id) != CUPTI_SUCCESS ||
      api_->GetGraphId(graph.graph, &graph_id) != CUPTI_SUCCESS) {
    graph_nodes_unreadable_.fetch_add(1);
    return;
  }
  row.graph_id = graph_id;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    uint64_t original = 0;
    if (graph.originalNode == nullptr ||
        api_->GetGraphNodeId(graph.originalNode, &original) != CUPTI_SUCCESS) {
      graph_nodes_unreadable_.fetch_add(1);
      return;
    }
    row.original_node_id = original;
  }
  // The database's time line starts with the session, as the CUPTI records' (gpu_activity).
  row.start = monotonic_ns() - collector_.config().session_start_mono_ns;
  row.global_tid =
      nsys::global_tid(static_cast<uint32_t>(collector_.pid()), static_cast<uint32_t>(::gettid()));
  graph_nodes_.fetch_add(1);
  auto batch = std::make_unique<GpuBatch>();
  batch->graph_nodes.push_back(row);
  collector_.submit_gpu_batch(std::move(batch), 0);
}

void CUPTIAPI CuptiTracer::api_callback(void* user, CUpti_CallbackDomain domain,
                                        CUpti_CallbackId cbid, const void* data) {
  auto* tracer = static_cast<CuptiTracer*>(user);
  if (tracer == nullptr || data == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED &&
        cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
      return;
    }
    const auto* resource = static_cast<const CUpti_ResourceData*>(data);
    const auto* graph = static_cast<const CUpti_GraphData*>(resource->resourceDescriptor);
    if (graph == nullptr) return;
    try {
      tracer->on_graph_node(cbid, *graph);
    } catch (...) {
    }
    return;
  }
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  const bool enter = info->callbackSite == CUPTI_API_ENTER;
  bool start_call = false;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cbid != CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 &&
        cbid != CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000) {
      return;
    }
    t_in_runtime_profiler_call = enter;
    start_call = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    if (t_in_runtime_profiler_call) return;
    if (cbid != CUPTI_DRIVER_TRACE_CBID_cuProfilerStart &&
        cbid != CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) {
      return;
    }
    start_call = cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
  } else {
    return;
  }
  try {
    tracer->on_profiler_api(start_call, enter);
  } catch (...) {
  }
}

uint64_t CUPTIAPI CuptiTracer::timestamp() { return static_cast<uint64_t>(monotonic_ns()); }

void CUPTIAPI CuptiTracer::buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  CuptiTracer* tracer = instance_.load();
  if (tracer == nullptr) return;
  // Refusing a buffer makes CUPTI drop records and count them (cuptiActivityGetNumDropped-
  // Records): memory stays bounded and the loss is reported, never silent.
  const uint64_t lent = tracer->outstanding_bytes_.load();
  if (!tracer->collector_.gpu_buffer_allowed(lent, kBufferBytes)) return;
  void* memory = std::aligned_alloc(kBufferAlignment, kBufferBytes);
  if (memory == nullptr) return;
  tracer->outstanding_bytes_.fetch_add(kBufferBytes);
  *buffer = static_cast<uint8_t*>(memory);
  *size = kBufferBytes;
}

void CUPTIAPI CuptiTracer::buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                            size_t size, size_t valid_size) {
  CuptiTracer* tracer = instance_.load();
  if (tracer != nullptr) {
    try {
      tracer->process_buffer(context, stream_id, buffer, valid_size);
    } catch (...) {
    }
    if (buffer != nullptr) tracer->outstanding_bytes_.fetch_sub(size);
  }
  std::free(buffer);
}

void CuptiTracer::process_buffer(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                 size_t valid_size) {
  const CuptiApi& api = *api_;
  if (buffer != nullptr && valid_size > 0) {
    auto batch = std::make_unique<GpuBatch>();
    ConversionCounters counters;
    ConversionWindow window;
    window.session_start_ns = collector_.config().session_start_mono_ns;
    // Under a capture range the device window is --delay/--duration's alone, which is fixed.
    const bool capture_range = collector_.config().capture_range_cuda_profiler;
    if (capture_range) {
      window.device_begin = collector_.config().window_begin_ns();
      window.device_end = collector_.config().window_end_ns();
    }
    CUpti_Activity* record = nullptr;
    for (;;) {
      // Re-read per record: cudaProfilerStart/Stop may move the window while we convert.
      window.begin = collector_.window_begin();
      window.end = collector_.window_end();
      if (!capture_range) {
        window.device_begin = window.begin;
        window.device_end = window.end;
      }
      if (api.ActivityGetNextRecord(buffer, valid_size, &record) != CUPTI_SUCCESS) break;
      converter_->convert(*record, window, *batch, counters);
    }
    records_.fetch_add(counters.records);
    no_timestamp_.fetch_add(counters.no_timestamp);
    outside_window_.fetch_add(counters.outside_window);
    ignored_.fetch_add(counters.ignored);
    collector_.submit_gpu_batch(std::move(batch), counters.records);
  }
  size_t dropped = 0;
  if (api.ActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) {
    dropped_.fetch_add(dropped);
  }
}

void CuptiTracer::flush_for_exit() noexcept {
  if (!attached_ || flushed_.exchange(true)) return;
  // FORCED also returns buffers that are not full yet; CUPTI calls buffer_completed for each
  // before this returns. Kernels still running on the GPU have no record yet and are missed.
  api_->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  // Records dropped since the last delivered buffer (or with no buffer ever delivered, when
  // every request was refused) are only visible here. CUDA 12+ keeps one global queue, which
  // CUPTI reports under a null context and stream 0.
  size_t dropped = 0;
  if (api_->ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) {
    dropped_.fetch_add(dropped);
  }
}

void CuptiTracer::fill_stats(CollectorStats& stats) const noexcept {
  stats.cupti_records += records_.load();
  stats.cupti_records_dropped += dropped_.load();
  stats.cupti_records_no_timestamp += no_timestamp_.load();
  stats.cupti_records_outside_window += outside_window_.load();
  stats.cupti_records_ignored += ignored_.load();
  stats.cuda_graph_nodes += graph_nodes_.load();
  stats.cuda_graph_nodes_unreadable += graph_nodes_unreadable_.load();
}

}  // namespace pyprof::collect
