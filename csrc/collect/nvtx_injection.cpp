// The NVTX side of the collector: InitializeInjectionNvtx2 and the callbacks it installs into
// NVTX's CORE and CORE2 function tables. Each callback turns NVTX's arguments into collector
// calls (messages bounded and converted to UTF-8, handles checked) and never lets an exception
// reach the application.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "collector.h"
#include "nvtx_attributes.h"
#include "nvtx_tool_headers.h"
#include "pyprof_collect.h"
#include "text_utils.h"

namespace pyprof::collect {
namespace {

inline Collector* collector() { return Collector::instance(); }

BoundedText ascii_text(const char* text) { return bounded_c_string(text, kMaxMessageBytes); }

// wchar_t messages are converted into a per-thread scratch string; the collector copies the
// bytes before the next NVTX call on this thread can overwrite them.
BoundedText wide_text(const wchar_t* text) {
  thread_local std::string scratch;
  scratch.clear();
  const bool truncated = append_wide_as_utf8(text, kMaxMessageBytes, scratch);
  return {scratch, truncated};
}

EventAttributes message_only(const void* message) {
  EventAttributes attrs;
  attrs.has_text = message != nullptr;
  return attrs;
}

struct ResolvedEvent {
  EventAttributes attrs;
  BoundedText text;
};

ResolvedEvent resolve(const nvtxEventAttributes_t* attributes) {
  DecodedAttributes decoded = decode_event_attributes(attributes);
  ResolvedEvent event{decoded.attrs, {}};
  switch (decoded.message.kind) {
    case DecodedMessage::Kind::kAscii:
      event.text = ascii_text(decoded.message.ascii);
      event.attrs.has_text = true;
      break;
    case DecodedMessage::Kind::kWide:
      event.text = wide_text(decoded.message.wide);
      event.attrs.has_text = true;
      break;
    case DecodedMessage::Kind::kRegistered:
      // A handle we did not hand out is dropped rather than written as a dangling textId.
      if (collector()->is_string(decoded.message.registered_id)) {
        event.attrs.text_id = decoded.message.registered_id;
      }
      break;
    case DecodedMessage::Kind::kNone:
      break;
  }
  return event;
}

// Domain handles are our domain ids; NULL is the default domain (0).
bool domain_id_of(nvtxDomainHandle_t domain, uint32_t* id) {
  const uintptr_t value = reinterpret_cast<uintptr_t>(domain);
  if (value > UINT32_MAX || !collector()->is_domain(static_cast<uint32_t>(value))) return false;
  *id = static_cast<uint32_t>(value);
  return true;
}

nvtxDomainHandle_t domain_handle(uint32_t id) {
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<uintptr_t>(id));
}

nvtxStringHandle_t string_handle(uint64_t id) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id));
}

// True (and counted) if the collector has finalized: skip all decoding work.
bool ignored_after_shutdown() {
  Collector* c = collector();
  if (!c->finished()) return false;
  c->count_call_after_shutdown();
  return true;
}

// ---- CORE -----------------------------------------------------------------------------------

void NVTX_API MarkEx(const nvtxEventAttributes_t* attributes) {
  try {
    if (ignored_after_shutdown()) return;
    const ResolvedEvent event = resolve(attributes);
    collector()->mark(0, event.attrs, event.text);
  } catch (...) {
  }
}

void NVTX_API MarkA(const char* message) {
  try {
    collector()->mark(0, message_only(message), ascii_text(message));
  } catch (...) {
  }
}

void NVTX_API MarkW(const wchar_t* message) {
  try {
    if (ignored_after_shutdown()) return;
    collector()->mark(0, message_only(message), wide_text(message));
  } catch (...) {
  }
}

nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* attributes) {
  try {
    if (ignored_after_shutdown()) return 0;
    const ResolvedEvent event = resolve(attributes);
    return collector()->start_range(0, event.attrs, event.text);
  } catch (...) {
    return 0;
  }
}

nvtxRangeId_t NVTX_API RangeStartA(const char* message) {
  try {
    return collector()->start_range(0, message_only(message), ascii_text(message));
  } catch (...) {
    return 0;
  }
}

nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* message) {
  try {
    if (ignored_after_shutdown()) return 0;
    return collector()->start_range(0, message_only(message), wide_text(message));
  } catch (...) {
    return 0;
  }
}

void NVTX_API RangeEnd(nvtxRangeId_t id) {
  try {
    collector()->end_range(id);
  } catch (...) {
  }
}

int NVTX_API RangePushEx(const nvtxEventAttributes_t* attributes) {
  try {
    if (ignored_after_shutdown()) return kNoPushPopTracking;
    const ResolvedEvent event = resolve(attributes);
    return collector()->push_range(0, event.attrs, event.text);
  } catch (...) {
    return kNoPushPopTracking;
  }
}

int NVTX_API RangePushA(const char* message) {
  try {
    return collector()->push_range(0, message_only(message), ascii_text(message));
  } catch (...) {
    return kNoPushPopTracking;
  }
}

int NVTX_API RangePushW(const wchar_t* message) {
  try {
    if (ignored_after_shutdown()) return kNoPushPopTracking;
    return collector()->push_range(0, message_only(message), wide_text(message));
  } catch (...) {
    return kNoPushPopTracking;
  }
}

int NVTX_API RangePop() {
  try {
    return collector()->pop_range(0);
  } catch (...) {
    return kNoPushPopTracking;
  }
}

void NVTX_API NameCategoryA(uint32_t category, const char* name) {
  try {
    collector()->name_category(0, category, ascii_text(name));
  } catch (...) {
  }
}

void NVTX_API NameCategoryW(uint32_t category, const wchar_t* name) {
  try {
    if (ignored_after_shutdown()) return;
    collector()->name_category(0, category, wide_text(name));
  } catch (...) {
  }
}

void NVTX_API NameOsThreadA(uint32_t thread_id, const char* name) {
  try {
    collector()->name_os_thread(thread_id, ascii_text(name));
  } catch (...) {
  }
}

void NVTX_API NameOsThreadW(uint32_t thread_id, const wchar_t* name) {
  try {
    if (ignored_after_shutdown()) return;
    collector()->name_os_thread(thread_id, wide_text(name));
  } catch (...) {
  }
}

// ---- CORE2 (domains) ------------------------------------------------------------------------

void NVTX_API DomainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  try {
    uint32_t id = 0;
    if (ignored_after_shutdown() || !domain_id_of(domain, &id)) return;
    const ResolvedEvent event = resolve(attributes);
    collector()->mark(id, event.attrs, event.text);
  } catch (...) {
  }
}

nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t domain,
                                          const nvtxEventAttributes_t* attributes) {
  try {
    uint32_t id = 0;
    if (ignored_after_shutdown() || !domain_id_of(domain, &id)) return 0;
    const ResolvedEvent event = resolve(attributes);
    return collector()->start_range(id, event.attrs, event.text);
  } catch (...) {
    return 0;
  }
}

void NVTX_API DomainRangeEnd(nvtxDomainHandle_t /*domain: range ids are unique*/,
                             nvtxRangeId_t id) {
  try {
    collector()->end_range(id);
  } catch (...) {
  }
}

int NVTX_API DomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  try {
    if (ignored_after_shutdown()) return kNoPushPopTracking;
    uint32_t id = 0;
    if (!domain_id_of(domain, &id)) return -1;
    const ResolvedEvent event = resolve(attributes);
    return collector()->push_range(id, event.attrs, event.text);
  } catch (...) {
    return kNoPushPopTracking;
  }
}

int NVTX_API DomainRangePop(nvtxDomainHandle_t domain) {
  try {
    uint32_t id = 0;
    if (!domain_id_of(domain, &id)) return -1;
    return collector()->pop_range(id);
  } catch (...) {
    return kNoPushPopTracking;
  }
}

void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t domain, uint32_t category, const char* name) {
  try {
    uint32_t id = 0;
    if (!domain_id_of(domain, &id)) return;
    collector()->name_category(id, category, ascii_text(name));
  } catch (...) {
  }
}

void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t domain, uint32_t category,
                                  const wchar_t* name) {
  try {
    uint32_t id = 0;
    if (ignored_after_shutdown() || !domain_id_of(domain, &id)) return;
    collector()->name_category(id, category, wide_text(name));
  } catch (...) {
  }
}

// Registered strings and domains get handles even after finalization (see create_domain).
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t /*domain*/,
                                                  const char* string) {
  try {
    if (string == nullptr) return nullptr;
    return string_handle(collector()->register_string(ascii_text(string)));
  } catch (...) {
    return nullptr;
  }
}

nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t /*domain*/,
                                                  const wchar_t* string) {
  try {
    if (string == nullptr) return nullptr;
    return string_handle(collector()->register_string(wide_text(string)));
  } catch (...) {
    return nullptr;
  }
}

nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  try {
    if (name == nullptr) return nullptr;
    return domain_handle(collector()->create_domain(ascii_text(name)));
  } catch (...) {
    return nullptr;
  }
}

nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  try {
    if (name == nullptr) return nullptr;
    return domain_handle(collector()->create_domain(wide_text(name)));
  } catch (...) {
    return nullptr;
  }
}

void NVTX_API DomainDestroy(nvtxDomainHandle_t domain) {
  try {
    uint32_t id = 0;
    if (domain == nullptr || !domain_id_of(domain, &id)) return;
    collector()->destroy_domain(id);
  } catch (...) {
  }
}

void NVTX_API Initialize(const void* /*reserved*/) {}

// ---- Installation ---------------------------------------------------------------------------

template <class Function>
NvtxFunctionPointer as_entry(Function* function) {
  return reinterpret_cast<NvtxFunctionPointer>(function);
}

// Writes our functions into one module's table. The table holds pointers to the module's own
// function-pointer slots; `size` is its highest valid callback id + 1.
void fill_module(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module,
                 std::initializer_list<std::pair<unsigned, NvtxFunctionPointer>> entries) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks.GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return;
  for (const auto& [callback_id, function] : entries) {
    if (callback_id < size && table[callback_id] != nullptr) *table[callback_id] = function;
  }
}

void fill_tables(const NvtxExportTableCallbacks& callbacks) {
  fill_module(callbacks, NVTX_CB_MODULE_CORE,
              {
                  {NVTX_CBID_CORE_MarkEx, as_entry(MarkEx)},
                  {NVTX_CBID_CORE_MarkA, as_entry(MarkA)},
                  {NVTX_CBID_CORE_MarkW, as_entry(MarkW)},
                  {NVTX_CBID_CORE_RangeStartEx, as_entry(RangeStartEx)},
                  {NVTX_CBID_CORE_RangeStartA, as_entry(RangeStartA)},
                  {NVTX_CBID_CORE_RangeStartW, as_entry(RangeStartW)},
                  {NVTX_CBID_CORE_RangeEnd, as_entry(RangeEnd)},
                  {NVTX_CBID_CORE_RangePushEx, as_entry(RangePushEx)},
                  {NVTX_CBID_CORE_RangePushA, as_entry(RangePushA)},
                  {NVTX_CBID_CORE_RangePushW, as_entry(RangePushW)},
                  {NVTX_CBID_CORE_RangePop, as_entry(RangePop)},
                  {NVTX_CBID_CORE_NameCategoryA, as_entry(NameCategoryA)},
                  {NVTX_CBID_CORE_NameCategoryW, as_entry(NameCategoryW)},
                  {NVTX_CBID_CORE_NameOsThreadA, as_entry(NameOsThreadA)},
                  {NVTX_CBID_CORE_NameOsThreadW, as_entry(NameOsThreadW)},
              });
  fill_module(callbacks, NVTX_CB_MODULE_CORE2,
              {
                  {NVTX_CBID_CORE2_DomainMarkEx, as_entry(DomainMarkEx)},
                  {NVTX_CBID_CORE2_DomainRangeStartEx, as_entry(DomainRangeStartEx)},
                  {NVTX_CBID_CORE2_DomainRangeEnd, as_entry(DomainRangeEnd)},
                  {NVTX_CBID_CORE2_DomainRangePushEx, as_entry(DomainRangePushEx)},
                  {NVTX_CBID_CORE2_DomainRangePop, as_entry(DomainRangePop)},
                  {NVTX_CBID_CORE2_DomainNameCategoryA, as_entry(DomainNameCategoryA)},
                  {NVTX_CBID_CORE2_DomainNameCategoryW, as_entry(DomainNameCategoryW)},
                  {NVTX_CBID_CORE2_DomainRegisterStringA, as_entry(DomainRegisterStringA)},
                  {NVTX_CBID_CORE2_DomainRegisterStringW, as_entry(DomainRegisterStringW)},
                  {NVTX_CBID_CORE2_DomainCreateA, as_entry(DomainCreateA)},
                  {NVTX_CBID_CORE2_DomainCreateW, as_entry(DomainCreateW)},
                  {NVTX_CBID_CORE2_DomainDestroy, as_entry(DomainDestroy)},
                  {NVTX_CBID_CORE2_Initialize, as_entry(Initialize)},
              });
}

}  // namespace
}  // namespace pyprof::collect

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  using namespace pyprof::collect;
  try {
    if (get_export_table == nullptr) return 0;
    const auto* callbacks =
        static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
        callbacks->GetModuleFunctionTable == nullptr) {
      return 0;  // nothing initialised yet, so NVTX may unload us
    }
    Collector* collector = Collector::initialize();
    if (collector == nullptr) return 0;
    collector->count_nvtx_init();
    fill_tables(*callbacks);
    const auto* version =
        static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
    if (version != nullptr && version->struct_size >= sizeof(NvtxExportTableVersionInfo) &&
        version->SetInjectionNvtxVersion != nullptr) {
      version->SetInjectionNvtxVersion(NVTX_VERSION);
    }
    return 1;
  } catch (...) {
    return pyprof::collect::Collector::instance() != nullptr ? 1 : 0;
  }
}
