// libfake_cupti.so: the parts of libcupti that pyprof's collector uses, faithful where the
// collector depends on CUPTI's behaviour, so its CUPTI backend can be tested without a GPU.
// See fake_cupti.h for the control functions and the environment.
//
// What is modelled as CUPTI does it (cupti_activity.h, cupti_callbacks.h, CUDA 13.0 and the CUDA
// 12 releases; the records of the release FAKE_CUPTI_VERSION names, fake_cupti_records.h):
//   - records only for enabled kinds (and API records only for API cbids not disabled with
//     cuptiActivityEnableRuntimeApi/DriverApi);
//   - records laid back to back, each padded to 8 bytes, in buffers the client's request
//     callback provides; a buffer that cannot take the next record is completed (completion
//     callback) on the thread that emitted that record; a request answered with no buffer drops
//     the record, counted for cuptiActivityGetNumDroppedRecords (which resets the count);
//   - cuptiActivityFlushAll completes the partially filled buffer (and returns unused ones) before
//     it returns;
//   - timestamps from the registered timestamp callback, else CLOCK_REALTIME (CUPTI's default
//     is not the collector's clock either);
//   - API records carry the OS tid only with CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM (the default
//     type gives pthread_self()), so a collector that forgets cuptiSetThreadIdType mismatches;
//   - kernel names belong to CUPTI: they are overwritten and freed once the completion callback
//     returns, so a collector that keeps the pointer instead of copying reads garbage;
//   - one subscriber per process: another tool's subscription (FAKE_CUPTI_OTHER_SUBSCRIBER)
//     makes cuptiSubscribe(_v2) and the activity API fail with
//     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.
//
// Locking: client callbacks (buffer request/completion, subscriber) are never called with a
// lock of ours held, because the collector calls back into us from them
// (cuptiActivityGetNextRecord, cuptiActivityEnable from the subscriber callback) and may take
// its own locks there. Everything the callbacks call is lock-free or takes only `state_mutex`.
#include "fake_cupti.h"

#include <cupti.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fake_cupti_records.h"

namespace {

namespace records = fake_cupti::records;

constexpr size_t kRecordAlignment = 8;  // CUPTI's ACTIVITY_RECORD_ALIGNMENT
constexpr uint32_t kPrimaryContext = 1;
constexpr uint32_t kKindSlots = CUPTI_ACTIVITY_KIND_COUNT;
constexpr size_t kDeadNameBuffers = 8;

size_t align_up(size_t n) { return (n + kRecordAlignment - 1) & ~(kRecordAlignment - 1); }

// The CUPTI API version this fake reports (FAKE_CUPTI_VERSION, default the CUDA 13 headers'),
// which decides the layout of every record it writes (fake_cupti_records.h).
uint32_t reported_version() {
  static const uint32_t version = [] {
    const char* forced = std::getenv("FAKE_CUPTI_VERSION");
    return forced != nullptr && *forced != '\0' ? uint32_t(std::strtoul(forced, nullptr, 10))
                                                : uint32_t{CUPTI_API_VERSION};
  }();
  return version;
}

uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// One buffer handed to us by the client's request callback.
struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  size_t used = 0;
  size_t records = 0;
  size_t max_records = 0;  // 0: as many as fit
  // Kernel names the records in this buffer point to: ours until the completion returns.
  std::vector<std::unique_ptr<char[]>> names;

  bool fits(size_t bytes) const {
    return used + bytes <= size && (max_records == 0 || records < max_records);
  }
};

struct Stats {
  std::atomic<uint64_t> records_emitted{0};
  std::atomic<uint64_t> records_dropped{0};
  std::atomic<uint64_t> records_disabled{0};
  std::atomic<uint64_t> dropped_reported{0};
  std::atomic<uint64_t> buffers_requested{0};
  std::atomic<uint64_t> buffers_refused{0};
  std::atomic<uint64_t> buffers_completed{0};
  std::atomic<uint64_t> buffers_completed_full{0};
  std::atomic<uint64_t> flushes{0};
  std::atomic<uint64_t> subscribe_calls{0};
  std::atomic<uint64_t> subscriber_callbacks{0};
  std::atomic<uint64_t> contract_violations{0};
};

struct Subscriber {
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
};

struct State {
  Stats stats;
  std::atomic<bool> kind_enabled[kKindSlots] = {};
  std::atomic<CUpti_TimestampCallbackFunc> timestamp_callback{nullptr};
  std::atomic<uint32_t> thread_id_type{CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT};
  std::atomic<uint64_t> dropped_unreported{0};
  std::atomic<uint32_t> last_correlation_id{0};
  std::atomic<int64_t> last_grid_id{0};

  // Guards everything below. Never held while a client callback runs.
  std::mutex state_mutex;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  bool subscribed = false;
  std::string subscriber_name;
  Subscriber subscriber;
  std::set<std::pair<int, uint32_t>> enabled_callbacks;  // (domain, cbid)
  std::set<std::pair<int, uint32_t>> disabled_api;       // (activity kind, cbid)
  std::set<uint32_t> devices_emitted;
  std::set<uint32_t> contexts_emitted;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> stream_busy_until;  // (context, stream)
  // The buffer being filled, and buffers requested by one thread while another installed its
  // own (kept for later instead of being lost).
  std::unique_ptr<Buffer> current;
  std::vector<std::unique_ptr<Buffer>> spares;
  // Buffers taken out of `current` whose completion callback has not returned yet:
  // cuptiActivityFlushAll waits for them, as CUPTI's flush returns only once all is delivered.
  int deliveries_in_flight = 0;
  std::condition_variable deliveries_done;
  // Kernel names of recently completed buffers, overwritten with '#' (see deliver()).
  std::deque<std::vector<std::unique_ptr<char[]>>> dead_names;
};

// Leaked on purpose: the collector may flush from its own exit-time code, after static
// destructors of this library would have run.
State& state() {
  static State* const instance = new State;
  return *instance;
}

// Set while this thread runs one of the client's buffer callbacks.
thread_local bool in_buffer_callback = false;

// External correlation ids pushed on this thread (kind, id).
thread_local std::vector<std::pair<uint32_t, uint64_t>> external_ids;

void violation(const char* format, ...) __attribute__((format(printf, 1, 2)));
void violation(const char* format, ...) {
  state().stats.contract_violations.fetch_add(1);
  char message[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  std::fprintf(stderr, "fake_cupti: contract violation: %s\n", message);
}

const char* other_subscriber() {
  const char* name = std::getenv("FAKE_CUPTI_OTHER_SUBSCRIBER");
  return name != nullptr && name[0] != '\0' ? name : nullptr;
}

uint64_t now() {
  const CUpti_TimestampCallbackFunc callback = state().timestamp_callback.load();
  return callback != nullptr ? callback() : clock_ns(CLOCK_REALTIME);
}

bool enabled(CUpti_ActivityKind kind) {
  return uint32_t(kind) < kKindSlots && state().kind_enabled[kind].load();
}

uint32_t device_of_context(uint32_t context_id) { return context_id == 0 ? 0 : context_id - 1; }

uint32_t api_thread_id() {
  // CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT is pthread_self(), truncated to 32 bits.
  return state().thread_id_type.load() == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
             ? uint32_t(gettid())
             : uint32_t(pthread_self());
}

// Hands a buffer back to the client (completion callback) and then kills the kernel names its
// records pointed to. Called without state_mutex; `in_flight` says that the caller counted
// this delivery in deliveries_in_flight.
void deliver(std::unique_ptr<Buffer> buffer, CUpti_BuffersCallbackCompleteFunc complete, bool full,
             bool in_flight) {
  State& s = state();
  s.stats.buffers_completed.fetch_add(1);
  if (full) s.stats.buffers_completed_full.fetch_add(1);
  in_buffer_callback = true;
  complete(nullptr, 0, buffer->data, buffer->size, buffer->used);
  in_buffer_callback = false;
  // Overwritten rather than freed at once: a collector that kept a pointer then reads "####"
  // (a clear test failure) instead of freed memory (undefined, often still the old string).
  // The last few buffers' names stay allocated; older ones are freed.
  for (const auto& name : buffer->names) std::memset(name.get(), '#', std::strlen(name.get()));
  std::vector<std::unique_ptr<char[]>> dead = std::move(buffer->names);
  buffer.reset();
  std::lock_guard lock(s.state_mutex);
  s.dead_names.push_back(std::move(dead));
  while (s.dead_names.size() > kDeadNameBuffers) s.dead_names.pop_front();
  if (in_flight) {
    --s.deliveries_in_flight;
    s.deliveries_done.notify_all();
  }
}

// Asks the client for a buffer; nullptr when it gives none (or one too small for `needed`).
std::unique_ptr<Buffer> request_buffer(CUpti_BuffersCallbackRequestFunc request,
                                       CUpti_BuffersCallbackCompleteFunc complete, size_t needed) {
  State& s = state();
  s.stats.buffers_requested.fetch_add(1);
  uint8_t* data = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  in_buffer_callback = true;
  request(&data, &size, &max_records);
  in_buffer_callback = false;
  if (data != nullptr && reinterpret_cast<uintptr_t>(data) % kRecordAlignment != 0) {
    violation("buffer %p from the request callback is not %zu-byte aligned",
              static_cast<void*>(data), kRecordAlignment);
  }
  auto buffer = std::make_unique<Buffer>();
  buffer->data = data;
  buffer->size = size;
  buffer->max_records = max_records;
  if (data == nullptr || size < needed) {
    s.stats.buffers_refused.fetch_add(1);
    // A buffer too small for one record goes straight back, empty, so the client can free it.
    if (data != nullptr) deliver(std::move(buffer), complete, false, false);
    return nullptr;
  }
  return buffer;
}

// Copies one record into the client's buffers, as CUPTI does when an activity completes.
// `name`, if given, is copied into storage owned by the buffer and the record's `const char*`
// at its name_offset is pointed at it.
void emit(const records::Record& record, const char* name = nullptr) {
  State& s = state();
  const size_t size = record.size;
  const size_t stride = align_up(size);
  std::unique_lock lock(s.state_mutex);
  for (;;) {
    if (s.request == nullptr || s.complete == nullptr) {
      // No buffer callbacks: CUPTI has nowhere to put the record.
      s.stats.records_dropped.fetch_add(1);
      s.dropped_unreported.fetch_add(1);
      return;
    }
    if (s.current != nullptr && s.current->fits(stride)) {
      Buffer& buffer = *s.current;
      uint8_t* slot = buffer.data + buffer.used;
      std::memcpy(slot, record.bytes, size);
      std::memset(slot + size, 0, stride - size);
      if (name != nullptr && record.name_offset != records::kNoName) {
        const size_t length = std::strlen(name);
        auto copy = std::make_unique<char[]>(length + 1);
        std::memcpy(copy.get(), name, length + 1);
        const char* pointer = copy.get();
        std::memcpy(slot + record.name_offset, &pointer, sizeof(pointer));
        buffer.names.push_back(std::move(copy));
      }
      buffer.used += stride;
      ++buffer.records;
      s.stats.records_emitted.fetch_add(1);
      return;
    }
    // The current buffer is full: complete it on this thread, then take a spare or a new one.
    std::unique_ptr<Buffer> full = std::move(s.current);
    if (!s.spares.empty()) {
      s.current = std::move(s.spares.back());
      s.spares.pop_back();
    }
    const auto request = s.request;
    const auto complete = s.complete;
    if (full != nullptr) ++s.deliveries_in_flight;
    lock.unlock();
    if (full != nullptr) deliver(std::move(full), complete, true, true);
    std::unique_ptr<Buffer> fresh;
    lock.lock();
    if (s.current == nullptr) {
      lock.unlock();
      fresh = request_buffer(request, complete, stride);
      lock.lock();
      if (fresh == nullptr) {
        s.stats.records_dropped.fetch_add(1);
        s.dropped_unreported.fetch_add(1);
        return;
      }
      if (s.current == nullptr) {
        s.current = std::move(fresh);
      } else {
        s.spares.push_back(std::move(fresh));  // another thread installed one meanwhile
      }
    }
  }
}

// Emits the DEVICE record of `device_id` once, if DEVICE is enabled.
void emit_device_once(uint32_t device_id) {
  State& s = state();
  if (!enabled(CUPTI_ACTIVITY_KIND_DEVICE)) return;
  {
    std::lock_guard lock(s.state_mutex);
    if (!s.devices_emitted.insert(device_id).second) return;
  }
  // An H100 SXM5 (fake_cupti.h), told apart by id and uuid.
  records::Record record;
  records::write_device(reported_version(), {device_id}, &record);
  emit(record);
}

// Emits the CONTEXT record of `context_id` once, if CONTEXT is enabled (context creation).
void emit_context_once(uint32_t context_id) {
  State& s = state();
  if (!enabled(CUPTI_ACTIVITY_KIND_CONTEXT)) return;
  {
    std::lock_guard lock(s.state_mutex);
    if (!s.contexts_emitted.insert(context_id).second) return;
  }
  records::ContextFacts facts;
  facts.context_id = context_id;
  facts.device_id = device_of_context(context_id);
  facts.null_stream_id = 7;
  facts.multiprocessors = static_cast<uint16_t>(fake_cupti::kNumMultiprocessors);
  records::Record record;
  records::write_context(reported_version(), facts, &record);
  emit(record);
}

uint32_t context_or_primary(uint32_t context_id) {
  return context_id == 0 ? kPrimaryContext : context_id;
}

// Where the GPU runs work submitted at `submit_time` on (context, stream) for `duration` ns:
// after the launch and after the stream's previous work.
std::pair<uint64_t, uint64_t> schedule(uint32_t context_id, uint32_t stream_id,
                                       uint64_t submit_time, uint64_t duration) {
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  uint64_t& busy_until = s.stream_busy_until[{context_id, stream_id}];
  const uint64_t start = std::max(submit_time + 1'500, busy_until + 200);
  busy_until = start + duration;
  return {start, start + duration};
}

CUpti_ActivityKind api_kind(CUpti_CallbackDomain domain) {
  return domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_ACTIVITY_KIND_DRIVER
                                              : CUPTI_ACTIVITY_KIND_RUNTIME;
}

bool api_record_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const CUpti_ActivityKind kind = api_kind(domain);
  if (!enabled(kind)) return false;
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  return s.disabled_api.count({int(kind), cbid}) == 0;
}

// The subscriber, if one is subscribed and enabled the callback (domain, cbid).
std::optional<Subscriber> subscriber_for(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  if (!s.subscribed || s.enabled_callbacks.count({int(domain), cbid}) == 0) return std::nullopt;
  return s.subscriber;
}

// The subscriber's callback for (domain, cbid) at `site`, if it enabled that callback.
void invoke_subscriber(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                       CUpti_ApiCallbackSite site, const char* function_name,
                       uint32_t correlation_id, int* return_value) {
  const std::optional<Subscriber> subscriber = subscriber_for(domain, cbid);
  if (!subscriber) return;
  State& s = state();
  thread_local uint64_t correlation_data = 0;
  static const int kNoParameters = 0;
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = function_name;
  data.functionParams = &kNoParameters;
  data.functionReturnValue = return_value;
  data.symbolName = nullptr;
  data.context = reinterpret_cast<CUcontext>(uintptr_t{0x1000} * kPrimaryContext);
  data.contextUid = kPrimaryContext;
  data.correlationData = &correlation_data;
  data.correlationId = correlation_id;
  s.stats.subscriber_callbacks.fetch_add(1);
  subscriber->callback(subscriber->userdata, domain, cbid, &data);
}

// One CUDA API call on this thread: subscriber callbacks at enter and exit, an
// EXTERNAL_CORRELATION record per pushed external id, the API record, then `gpu_work` (given
// the correlation id and the call's start and end times) emits the record of the work the call
// caused, so GPU records follow their API record as they do in a real trace.
template <class GpuWork>
uint32_t api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* function_name,
                  uint64_t min_duration_ns, GpuWork gpu_work) {
  State& s = state();
  emit_context_once(kPrimaryContext);  // the runtime creates the primary context lazily
  const uint32_t correlation_id = s.last_correlation_id.fetch_add(1) + 1;
  int return_value = 0;
  invoke_subscriber(domain, cbid, CUPTI_API_ENTER, function_name, correlation_id, &return_value);
  const bool record_api = api_record_enabled(domain, cbid);  // decided at entry
  const uint64_t start = now();
  // A call lasts at least 1 us, so that tests can place it inside an NVTX range by time.
  const uint64_t deadline = start + std::max<uint64_t>(min_duration_ns, 1'000);
  uint64_t end = now();
  while (end < deadline) {
    if (deadline - end > 200'000) {
      const timespec pause{0, static_cast<long>(deadline - end - 100'000)};
      nanosleep(&pause, nullptr);
    }
    end = now();
  }
  invoke_subscriber(domain, cbid, CUPTI_API_EXIT, function_name, correlation_id, &return_value);
  if (enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
    for (const auto& [kind, id] : external_ids) {
      records::Record record;
      records::write_external_correlation(reported_version(), {kind, id, correlation_id}, &record);
      emit(record);
    }
  }
  if (record_api && api_record_enabled(domain, cbid)) {
    records::ApiFacts facts;
    facts.kind = api_kind(domain);
    facts.cbid = cbid;
    facts.start = start;
    facts.end = end;
    facts.process_id = uint32_t(getpid());
    facts.thread_id = api_thread_id();
    facts.correlation_id = correlation_id;
    facts.return_value = uint32_t(return_value);
    records::Record record;
    records::write_api(reported_version(), facts, &record);
    emit(record);
  } else {
    s.stats.records_disabled.fetch_add(1);
  }
  gpu_work(correlation_id, start, end);
  return correlation_id;
}

void count_disabled() { state().stats.records_disabled.fetch_add(1); }

struct CallbackName {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const char* name;
};

#define FAKE_CUPTI_RUNTIME(name) \
  { CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##name, #name }
#define FAKE_CUPTI_DRIVER(name) \
  { CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name, #name }
// cuptiGetCallbackName's answers for the calls this fake makes (the enum names without their
// prefix, as CUPTI returns them).
constexpr CallbackName kCallbackNames[] = {
    FAKE_CUPTI_RUNTIME(cudaLaunchKernel_v7000),
    FAKE_CUPTI_RUNTIME(cudaMemcpy_v3020),
    FAKE_CUPTI_RUNTIME(cudaMemcpyAsync_v3020),
    FAKE_CUPTI_RUNTIME(cudaMemcpyPeerAsync_v4000),
    FAKE_CUPTI_RUNTIME(cudaMemsetAsync_v3020),
    FAKE_CUPTI_RUNTIME(cudaStreamSynchronize_v3020),
    FAKE_CUPTI_RUNTIME(cudaEventSynchronize_v3020),
    FAKE_CUPTI_RUNTIME(cudaDeviceSynchronize_v3020),
    FAKE_CUPTI_RUNTIME(cudaProfilerStart_v4000),
    FAKE_CUPTI_RUNTIME(cudaProfilerStop_v4000),
    FAKE_CUPTI_DRIVER(cuLaunchKernel),
    FAKE_CUPTI_DRIVER(cuProfilerStart),
    FAKE_CUPTI_DRIVER(cuProfilerStop),
    FAKE_CUPTI_DRIVER(cuCtxSynchronize),
};
#undef FAKE_CUPTI_RUNTIME
#undef FAKE_CUPTI_DRIVER

}  // namespace

// ------------------------------------------------------------------------------------------
// The CUPTI API (signatures from the CUDA 13.0 headers).
// ------------------------------------------------------------------------------------------
extern "C" {

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
  if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = reported_version();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (result) {
    case CUPTI_SUCCESS:
      *str = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *str = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    case CUPTI_ERROR_INVALID_OPERATION:
      *str = "CUPTI_ERROR_INVALID_OPERATION";
      break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      *str = "CUPTI_ERROR_MAX_LIMIT_REACHED";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED:
      *str = "CUPTI_ERROR_NOT_INITIALIZED";
      break;
    case CUPTI_ERROR_INVALID_KIND:
      *str = "CUPTI_ERROR_INVALID_KIND";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

// cuptiSubscribe and cuptiSubscribe_v2; only CUDA 13 names the subscribers (params).
static CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                             void* userdata, CUpti_SubscriberParams* params) {
  State& s = state();
  s.stats.subscribe_calls.fetch_add(1);
  if (subscriber == nullptr || callback == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  if (params != nullptr && params->structSize < CUpti_SubscriberParams_STRUCT_SIZE) {
    violation("CUpti_SubscriberParams.structSize %zu < %zu", params->structSize,
              size_t{CUpti_SubscriberParams_STRUCT_SIZE});
  }
  std::lock_guard lock(s.state_mutex);
  const char* owner = other_subscriber();
  std::string existing = owner != nullptr ? owner : s.subscribed ? s.subscriber_name : "";
  if (owner != nullptr || s.subscribed) {
    if (params != nullptr && params->oldSubscriberName != nullptr &&
        params->oldSubscriberSize > 0) {
      const size_t n = std::min(existing.size(), params->oldSubscriberSize - 1);
      std::memcpy(params->oldSubscriberName, existing.data(), n);
      params->oldSubscriberName[n] = '\0';
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  s.subscribed = true;
  s.subscriber = {callback, userdata};
  s.subscriber_name =
      params != nullptr && params->subscriberName != nullptr ? params->subscriberName : "";
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s.subscriber);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber,
                                       CUpti_CallbackFunc callback, void* userdata,
                                       CUpti_SubscriberParams* params) {
  if (!records::is_cuda13(reported_version())) {
    // A CUDA 12 libcupti has no such symbol: a client that found it would crash on a real one.
    violation("cuptiSubscribe_v2 called, but CUPTI API version %u (CUDA 12) has none",
              reported_version());
  }
  return subscribe(subscriber, callback, userdata, params);
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  return subscribe(subscriber, callback, userdata, nullptr);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  if (!s.subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s.subscriber)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  s.subscribed = false;
  s.subscriber = {};
  s.enabled_callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  if (!s.subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&s.subscriber)) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (enable != 0) {
    s.enabled_callbacks.insert({int(domain), cbid});
  } else {
    s.enabled_callbacks.erase({int(domain), cbid});
  }
  return CUPTI_SUCCESS;
}

// Fake graph and node handles are their ids (never 0, as real handles are never null).
CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t* node_id) {
  if (node == nullptr || node_id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *node_id = reinterpret_cast<uintptr_t>(node);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t* graph_id) {
  if (graph == nullptr || graph_id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *graph_id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(graph));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                          const char** name) {
  if (name == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  for (const CallbackName& entry : kCallbackNames) {
    if (entry.domain == domain && entry.cbid == cbid) {
      *name = entry.name;
      return CUPTI_SUCCESS;
    }
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
  if (funcBufferRequested == nullptr || funcBufferCompleted == nullptr) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (other_subscriber() != nullptr) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  s.request = funcBufferRequested;
  s.complete = funcBufferCompleted;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp) {
  if (funcTimestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  state().timestamp_callback.store(funcTimestamp);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
  if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT &&
      type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  state().thread_id_type.store(uint32_t(type));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  // Kinds this fake cannot produce are accepted (CUPTI knows them) and never recorded.
  if (uint32_t(kind) >= kKindSlots) return CUPTI_ERROR_INVALID_KIND;
  if (other_subscriber() != nullptr) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (in_buffer_callback) violation("cuptiActivityEnable called from a buffer callback");
  state().kind_enabled[kind].store(true);
  // CUPTI reports the devices it knows when DEVICE tracing starts (CUDA is initialised here).
  if (kind == CUPTI_ACTIVITY_KIND_DEVICE) emit_device_once(0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (uint32_t(kind) >= kKindSlots) return CUPTI_ERROR_INVALID_KIND;
  state().kind_enabled[kind].store(false);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  if (enable != 0) {
    s.disabled_api.erase({int(CUPTI_ACTIVITY_KIND_RUNTIME), cbid});
  } else {
    s.disabled_api.insert({int(CUPTI_ACTIVITY_KIND_RUNTIME), cbid});
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  State& s = state();
  std::lock_guard lock(s.state_mutex);
  if (enable != 0) {
    s.disabled_api.erase({int(CUPTI_ACTIVITY_KIND_DRIVER), cbid});
  } else {
    s.disabled_api.insert({int(CUPTI_ACTIVITY_KIND_DRIVER), cbid});
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  static_cast<void>(flag);  // forced or not: every record of this fake is complete
  State& s = state();
  s.stats.flushes.fetch_add(1);
  if (in_buffer_callback) {
    violation("cuptiActivityFlushAll called from a buffer callback");
    return CUPTI_ERROR_INVALID_OPERATION;
  }
  std::unique_lock lock(s.state_mutex);
  if (s.request == nullptr || s.complete == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
  const auto complete = s.complete;
  std::vector<std::unique_ptr<Buffer>> buffers = std::move(s.spares);
  s.spares.clear();
  if (s.current != nullptr) buffers.push_back(std::move(s.current));
  lock.unlock();
  // Partial buffer first (spares are empty and come back with validSize 0).
  std::reverse(buffers.begin(), buffers.end());
  for (auto& buffer : buffers) deliver(std::move(buffer), complete, false, false);
  // Buffers other threads are completing right now count as pending too.
  lock.lock();
  if (!s.deliveries_done.wait_for(lock, std::chrono::seconds(10),
                                  [&s] { return s.deliveries_in_flight == 0; })) {
    // Most likely the completion callback on the other thread waits for the thread flushing.
    violation("cuptiActivityFlushAll waited 10 s for a completion callback on another thread");
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes,
                                                CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record != nullptr) {
    const uint8_t* previous = reinterpret_cast<const uint8_t*>(*record);
    if (previous < buffer || previous >= buffer + validBufferSizeBytes) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    const size_t previous_size = records::record_size(reported_version(), (*record)->kind);
    if (previous_size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = size_t(previous - buffer) + align_up(previous_size);
  }
  if (offset >= validBufferSizeBytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t size = records::record_size(reported_version(), next->kind);
  if (size == 0 || offset + size > validBufferSizeBytes) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                       size_t* dropped) {
  static_cast<void>(context);  // one global queue, as for every buffer since CUDA 6.0
  static_cast<void>(streamId);
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  State& s = state();
  *dropped = s.dropped_unreported.exchange(0);  // CUPTI resets the count when it is read
  s.stats.dropped_reported.fetch_add(*dropped);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void) {
  // Delivers what is pending, then detaches everything: the next client starts from scratch.
  State& s = state();
  bool registered;
  {
    std::lock_guard lock(s.state_mutex);
    registered = s.request != nullptr;
  }
  if (registered) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (auto& kind : s.kind_enabled) kind.store(false);
  s.timestamp_callback.store(nullptr);
  s.thread_id_type.store(CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
  s.dropped_unreported.store(0);
  std::lock_guard lock(s.state_mutex);
  s.request = nullptr;
  s.complete = nullptr;
  s.subscribed = false;
  s.subscriber = {};
  s.subscriber_name.clear();
  s.enabled_callbacks.clear();
  s.disabled_api.clear();
  s.devices_emitted.clear();
  s.contexts_emitted.clear();
  s.stream_busy_until.clear();
  return CUPTI_SUCCESS;
}

// ------------------------------------------------------------------------------------------
// Control functions (fake_cupti.h).
// ------------------------------------------------------------------------------------------

fake_cupti_kernel_t fake_cupti_kernel(const char* mangled_name, int32_t grid_x, int32_t block_x,
                                      uint32_t stream_id, uint64_t duration_ns) {
  fake_cupti_kernel_t kernel{};
  kernel.mangled_name = mangled_name;
  kernel.grid_x = grid_x;
  kernel.grid_y = 1;
  kernel.grid_z = 1;
  kernel.block_x = block_x;
  kernel.block_y = 1;
  kernel.block_z = 1;
  kernel.context_id = kPrimaryContext;
  kernel.stream_id = stream_id;
  kernel.duration_ns = duration_ns;
  kernel.registers_per_thread = 32;
  kernel.launch_type = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
  kernel.shmem_limit_config = CUPTI_FUNC_SHMEM_LIMIT_DEFAULT;
  return kernel;
}

uint32_t fake_cupti_launch(const fake_cupti_kernel_t* kernel) {
  const fake_cupti_kernel_t k = *kernel;
  const uint32_t context_id = context_or_primary(k.context_id);
  const auto domain = k.driver_api != 0 ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  const CUpti_CallbackId cbid =
      k.driver_api != 0 ? CUpti_CallbackId{CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel}
                        : CUpti_CallbackId{CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000};
  const char* function = k.driver_api != 0 ? "cuLaunchKernel" : "cudaLaunchKernel";
  return api_call(
      domain, cbid, function, 0, [&](uint32_t correlation_id, uint64_t, uint64_t submitted) {
        if (!enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return count_disabled();
        const auto [start, end] = schedule(context_id, k.stream_id, submitted, k.duration_ns);
        records::KernelFacts f;
        f.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        f.cache_config = k.cache_config;
        f.registers_per_thread = k.registers_per_thread;
        f.start = k.no_timestamp != 0 ? 0 : start;
        f.end = k.no_timestamp != 0 ? 0 : end;
        f.device_id = device_of_context(context_id);
        f.context_id = context_id;
        f.stream_id = k.stream_id;
        f.grid[0] = k.grid_x;
        f.grid[1] = k.grid_y;
        f.grid[2] = k.grid_z;
        f.block[0] = k.block_x;
        f.block[1] = k.block_y;
        f.block[2] = k.block_z;
        f.static_shared_memory = k.static_shared_memory;
        f.dynamic_shared_memory = k.dynamic_shared_memory;
        f.local_memory_per_thread = k.local_memory_per_thread;
        f.local_memory_total = k.local_memory_total;
        f.correlation_id = correlation_id;
        f.grid_id = state().last_grid_id.fetch_add(1) + 1;
        f.launch_type = k.launch_type;
        f.shared_memory_executed = k.shared_memory_executed;
        f.graph_node_id = k.graph_node_id;
        f.shmem_limit_config = k.shmem_limit_config;
        f.graph_id = k.graph_id;
        records::Record record;
        records::write_kernel(reported_version(), f, &record);
        emit(record, k.mangled_name != nullptr ? k.mangled_name : "");
      });
}

uint32_t fake_cupti_launch_kernel(const char* mangled_name, int32_t grid_x, int32_t block_x,
                                  uint32_t stream_id, uint64_t duration_ns) {
  const fake_cupti_kernel_t kernel =
      fake_cupti_kernel(mangled_name, grid_x, block_x, stream_id, duration_ns);
  return fake_cupti_launch(&kernel);
}

uint32_t fake_cupti_memcpy(uint64_t bytes, uint8_t copy_kind, uint8_t src_kind, uint8_t dst_kind,
                           uint32_t stream_id, uint64_t duration_ns) {
  return api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                  "cudaMemcpyAsync", 0, [&](uint32_t correlation_id, uint64_t, uint64_t submitted) {
                    if (!enabled(CUPTI_ACTIVITY_KIND_MEMCPY)) return count_disabled();
                    const auto [start, end] =
                        schedule(kPrimaryContext, stream_id, submitted, duration_ns);
                    records::CopyFacts f;
                    f.copy_kind = copy_kind;
                    f.src_kind = src_kind;
                    f.dst_kind = dst_kind;
                    f.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
                    f.bytes = bytes;
                    f.start = start;
                    f.end = end;
                    f.device_id = device_of_context(kPrimaryContext);
                    f.context_id = kPrimaryContext;
                    f.stream_id = stream_id;
                    f.correlation_id = correlation_id;
                    f.channel_id = 2;
                    f.channel_type = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
                    records::Record record;
                    records::write_memcpy(reported_version(), f, &record);
                    emit(record);
                  });
}

uint32_t fake_cupti_memcpy_peer(uint64_t bytes, uint32_t src_device, uint32_t dst_device,
                                uint32_t stream_id, uint64_t duration_ns) {
  const uint32_t src_context = src_device + 1;
  const uint32_t dst_context = dst_device + 1;
  return api_call(
      CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
      "cudaMemcpyPeerAsync", 0, [&](uint32_t correlation_id, uint64_t, uint64_t submitted) {
        if (!enabled(CUPTI_ACTIVITY_KIND_MEMCPY2)) return count_disabled();
        const auto [start, end] = schedule(src_context, stream_id, submitted, duration_ns);
        records::CopyFacts f;
        f.copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
        f.src_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        f.dst_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        f.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
        f.bytes = bytes;
        f.start = start;
        f.end = end;
        f.device_id = src_device;
        f.context_id = src_context;
        f.stream_id = stream_id;
        f.src_device_id = src_device;
        f.src_context_id = src_context;
        f.dst_device_id = dst_device;
        f.dst_context_id = dst_context;
        f.correlation_id = correlation_id;
        f.channel_id = 3;
        f.channel_type = CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
        records::Record record;
        records::write_peer_copy(reported_version(), f, &record);
        emit(record);
      });
}

uint32_t fake_cupti_memset(uint64_t bytes, uint32_t value, uint16_t memory_kind, uint32_t stream_id,
                           uint64_t duration_ns) {
  return api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                  "cudaMemsetAsync", 0, [&](uint32_t correlation_id, uint64_t, uint64_t submitted) {
                    if (!enabled(CUPTI_ACTIVITY_KIND_MEMSET)) return count_disabled();
                    const auto [start, end] =
                        schedule(kPrimaryContext, stream_id, submitted, duration_ns);
                    records::MemsetFacts f;
                    f.value = value;
                    f.bytes = bytes;
                    f.start = start;
                    f.end = end;
                    f.device_id = device_of_context(kPrimaryContext);
                    f.context_id = kPrimaryContext;
                    f.stream_id = stream_id;
                    f.correlation_id = correlation_id;
                    f.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
                    f.memory_kind = memory_kind;
                    records::Record record;
                    records::write_memset(reported_version(), f, &record);
                    emit(record);
                  });
}

uint32_t fake_cupti_synchronize(uint32_t sync_type, uint32_t context_id, uint32_t stream_id,
                                uint32_t cuda_event_id, uint64_t duration_ns) {
  CUpti_CallbackId cbid = CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;
  const char* function = "cudaDeviceSynchronize";
  if (sync_type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) {
    cbid = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
    function = "cudaStreamSynchronize";
  } else if (sync_type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE) {
    cbid = CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020;
    function = "cudaEventSynchronize";
  }
  const uint32_t context = context_or_primary(context_id);
  emit_context_once(context);
  // The host waits inside the call: the record lies within the API call's [start, end].
  return api_call(
      CUPTI_CB_DOMAIN_RUNTIME_API, cbid, function, duration_ns + 2'000,
      [&](uint32_t correlation_id, uint64_t call_start, uint64_t) {
        if (!enabled(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) return count_disabled();
        records::SyncFacts f;
        f.type = sync_type;
        f.start = call_start + 500;
        f.end = f.start + duration_ns;
        f.correlation_id = correlation_id;
        f.context_id = context;
        f.stream_id = sync_type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
                          ? CUPTI_SYNCHRONIZATION_INVALID_VALUE
                          : stream_id;
        const bool has_event = sync_type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
                               sync_type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
        f.cuda_event_id = has_event ? cuda_event_id : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
        f.cuda_event_sync_id = has_event ? 1 : 0;
        records::Record record;
        records::write_sync(reported_version(), f, &record);
        emit(record);
      });
}

void fake_cupti_push_external_id(uint32_t external_kind, uint64_t external_id) {
  external_ids.emplace_back(external_kind, external_id);
}

void fake_cupti_pop_external_id(void) {
  if (!external_ids.empty()) external_ids.pop_back();
}

void fake_cupti_emit_device(uint32_t device_id) {
  emit_device_once(device_id);
  emit_context_once(device_id + 1);
}

uint32_t fake_cupti_profiler_start(int driver_api) {
  if (driver_api != 0) {
    return api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
                    "cuProfilerStart", 0, [](uint32_t, uint64_t, uint64_t) {});
  }
  return api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
                  "cudaProfilerStart", 0, [](uint32_t, uint64_t, uint64_t) {});
}

uint32_t fake_cupti_profiler_stop(int driver_api) {
  if (driver_api != 0) {
    return api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,
                    "cuProfilerStop", 0, [](uint32_t, uint64_t, uint64_t) {});
  }
  return api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000,
                  "cudaProfilerStop", 0, [](uint32_t, uint64_t, uint64_t) {});
}

void fake_cupti_graph_node(uint64_t node_id, uint64_t original_node_id, uint32_t graph_id) {
  const CUpti_CallbackId cbid = original_node_id != 0 ? CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED
                                                      : CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED;
  const std::optional<Subscriber> subscriber = subscriber_for(CUPTI_CB_DOMAIN_RESOURCE, cbid);
  if (!subscriber) return;
  CUpti_GraphData graph{};
  graph.graph = reinterpret_cast<CUgraph>(uintptr_t{graph_id});
  graph.node = reinterpret_cast<CUgraphNode>(uintptr_t{node_id});
  graph.originalNode = reinterpret_cast<CUgraphNode>(uintptr_t{original_node_id});
  graph.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
  CUpti_ResourceData data{};
  data.context = reinterpret_cast<CUcontext>(uintptr_t{0x1000} * kPrimaryContext);
  data.resourceDescriptor = &graph;
  state().stats.subscriber_callbacks.fetch_add(1);
  subscriber->callback(subscriber->userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

void fake_cupti_add_dropped(uint64_t n) {
  State& s = state();
  s.stats.records_dropped.fetch_add(n);
  s.dropped_unreported.fetch_add(n);
}

void fake_cupti_deliver_now(void) { cuptiActivityFlushAll(0); }

uint64_t fake_cupti_timestamp(void) { return now(); }

void fake_cupti_get_stats(fake_cupti_stats_t* out) {
  State& s = state();
  fake_cupti_stats_t stats{};
  stats.records_emitted = s.stats.records_emitted.load();
  stats.records_dropped = s.stats.records_dropped.load();
  stats.records_disabled = s.stats.records_disabled.load();
  stats.dropped_reported = s.stats.dropped_reported.load();
  stats.buffers_requested = s.stats.buffers_requested.load();
  stats.buffers_refused = s.stats.buffers_refused.load();
  stats.buffers_completed = s.stats.buffers_completed.load();
  stats.buffers_completed_full = s.stats.buffers_completed_full.load();
  stats.flushes = s.stats.flushes.load();
  stats.subscribe_calls = s.stats.subscribe_calls.load();
  stats.subscriber_callbacks = s.stats.subscriber_callbacks.load();
  stats.contract_violations = s.stats.contract_violations.load();
  stats.thread_id_type = s.thread_id_type.load();
  stats.timestamp_callback = s.timestamp_callback.load() != nullptr ? 1 : 0;
  {
    std::lock_guard lock(s.state_mutex);
    stats.subscribed = s.subscribed ? 1 : 0;
    std::snprintf(stats.subscriber_name, sizeof(stats.subscriber_name), "%s",
                  s.subscriber_name.c_str());
  }
  *out = stats;
}

}  // extern "C"
