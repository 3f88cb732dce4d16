#include "parse/trace.h"

#include <simdjson.h>

#include <algorithm>
#include <tuple>

#include "common/terminal_text.h"

namespace pyprof::parse {

void Trace::warn(std::string_view category, std::string message) {
  // Examples quote the trace (markers, names), and they are printed to a terminal.
  for (auto& group : warnings) {
    if (group.category == category) {
      ++group.count;
      if (group.examples.size() < kWarningExamples) {
        group.examples.push_back(terminal_safe(message));
      }
      return;
    }
  }
  warnings.push_back({std::string(category), 1, {terminal_safe(message)}});
}

namespace {

int32_t clamp_tid(int64_t v) { return (v < 0 || v > INT32_MAX) ? -1 : static_cast<int32_t>(v); }

// Adds a compiled kernel's mark to the trace's, unless the same (name, graph, kernel) is there
// (a graph's marks are sent again when it is loaded from Inductor's cache). The object is kept
// minified (pyprof writes it so; a hand-made trace may not), which is the form prof reads its
// "symbolic":true flags in.
void add_compiled_kernel(Trace& trace, const std::string& name, const std::string& graph,
                         const std::string& object) {
  std::string kernel(object.size(), '\0');
  size_t length = 0;
  if (simdjson::minify(object.data(), object.size(), kernel.data(), length) == simdjson::SUCCESS) {
    kernel.resize(length);
  } else {
    kernel = object;  // validated when decoded: not reached
  }
  std::vector<size_t>& entries = trace.compiled_kernel_index[name];
  for (size_t i : entries) {
    const Trace::CompiledKernel& k = trace.compiled_kernels[i];
    if (k.graph == graph && k.kernel == kernel) return;
  }
  entries.push_back(trace.compiled_kernels.size());
  trace.compiled_kernels.push_back({name, graph, kernel});
}

}  // namespace

uint32_t intern_bounded(Trace& trace, std::string_view s) {
  if (s.size() <= kMaxNameBytes) return trace.pool.intern(s);
  size_t cut = kMaxNameBytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
  std::string bounded(s.substr(0, cut));
  bounded += "...(+" + std::to_string(s.size() - cut) + " bytes)";
  return trace.pool.intern(bounded);
}

MarkerDomain marker_domain(const Trace& trace, const RangeRecord& r) {
  if (r.domain == 0) return MarkerDomain::kDefault;
  return trace.pool.get(r.domain) == "pyprof" ? MarkerDomain::kPyprof : MarkerDomain::kOther;
}

void count_reversed_times(Trace& trace) {
  for (const GpuActivity& a : trace.activities) {
    if (a.end >= a.start) continue;
    ++trace.stats.gpu_end_before_start;
    std::string what = a.kind == ActivityKind::kKernel
                           ? "kernel " + std::string(trace.pool.get(a.short_name).substr(0, 60))
                       : a.kind == ActivityKind::kMemcpy ? std::string("memcpy")
                                                         : std::string("memset");
    trace.warn("GPU rows that end before they start",
               what + " (correlation " + std::to_string(a.correlation_id) + ") start " +
                   std::to_string(a.start) + " end " + std::to_string(a.end) +
                   ": written with duration null, left out of time sums");
  }
  for (const ApiCall& call : trace.api_calls) {
    if (call.end >= call.start) continue;
    ++trace.stats.api_end_before_start;
    trace.warn("API calls that end before they start",
               std::string(trace.pool.get(call.name).substr(0, 60)) + " (correlation " +
                   std::to_string(call.correlation_id) + ") start " + std::to_string(call.start) +
                   " end " + std::to_string(call.end) + ": its launch duration is written null");
  }
}

void merge_compiled_kernels(const Trace& part, Trace& trace) {
  for (const Trace::CompiledKernel& k : part.compiled_kernels) {
    add_compiled_kernel(trace, k.name, k.graph, k.kernel);
  }
  trace.compiled_calls.insert(trace.compiled_calls.end(), part.compiled_calls.begin(),
                              part.compiled_calls.end());
}

void resolve_compiled_kernels(Trace& trace) {
  trace.compiled_names.clear();
  trace.compiled_marked.clear();
  trace.compiled_by_graph.clear();
  trace.compiled_by_site.clear();
  trace.compiled_symbolic.clear();
  std::stable_sort(trace.compiled_calls.begin(), trace.compiled_calls.end(),
                   [](const Trace::CompiledCall& a, const Trace::CompiledCall& b) {
                     return std::tie(a.pid, a.tid, a.time) < std::tie(b.pid, b.tid, b.time);
                   });
  for (const Trace::CompiledKernel& k : trace.compiled_kernels) {
    // pyprof writes a symbolic size's tensor with "symbolic":true (docs/formats.md §1.5).
    if (k.kernel.find("\"symbolic\":true") != std::string::npos) {
      trace.compiled_symbolic.insert(trace.pool.intern(k.name));
    }
  }
  for (const Trace::CompiledKernel& first : trace.compiled_kernels) {
    if (trace.compiled_names.count(first.name)) continue;
    const std::vector<size_t>& entries = trace.compiled_kernel_index.at(first.name);
    bool same = true, by_graph = true;
    const std::string* repeated_in = nullptr;  // a graph that marks the name with two objects
    for (size_t i : entries) {
      const Trace::CompiledKernel& k = trace.compiled_kernels[i];
      same = same && k.kernel == first.kernel;
      by_graph = by_graph && !k.graph.empty();
      for (size_t j : entries) {
        // One graph marking the name with two objects: its records cannot be told apart.
        if (j != i && trace.compiled_kernels[j].graph == k.graph) {
          by_graph = false;
          if (!k.graph.empty()) repeated_in = &k.graph;
        }
      }
    }
    Trace::CompiledName verdict = same       ? Trace::CompiledName::kOne
                                  : by_graph ? Trace::CompiledName::kByGraph
                                             : Trace::CompiledName::kAmbiguous;
    trace.compiled_names.emplace(first.name, verdict);
    trace.compiled_marked.insert(trace.pool.intern(first.name));
    if (verdict == Trace::CompiledName::kByGraph) {
      trace.compiled_by_graph.insert(trace.pool.intern(first.name));
      for (size_t i : entries) {
        // The decoder appended the place to the graph id (compiled_site_suffix).
        if (trace.compiled_kernels[i].graph.find('#') != std::string::npos) {
          trace.compiled_by_site.insert(trace.pool.intern(first.name));
          break;
        }
      }
    } else if (verdict == Trace::CompiledName::kAmbiguous && repeated_in != nullptr) {
      // Inductor's C++ wrapper (config.cpp_wrapper) runs each extern ATen call through a shim
      // named for the op (aoti_torch_cpu_mm_out), once per call site of the graph.
      trace.warn("ambiguous compiled kernel",
                 "compiled graph " + *repeated_in + " runs a kernel named \"" + first.name +
                     "\" at several places, each computing other nodes, and its records do not "
                     "say which place they ran: they keep no FLOP model");
    } else if (verdict == Trace::CompiledName::kAmbiguous) {
      trace.warn("ambiguous compiled kernel",
                 "compiled graphs have a kernel named \"" + first.name +
                     "\" that computes different nodes, and their marks do not say which graph "
                     "is which: its records keep no FLOP model");
    }
  }
}

std::string_view compiled_region_id(std::string_view range_name) {
  constexpr std::string_view kRegion = "Torch-Compiled Region: ";
  if (range_name.substr(0, kRegion.size()) != kRegion) return {};
  return range_name.substr(kRegion.size());
}

void add_range(Trace& trace, RangeRecord r, std::string_view text, TextRef ref, Marker& m,
               const RangeValues& values) {
  decode_marker(text, marker_domain(trace, r), m);
  add_decoded_range(trace, r, text, ref, m, values);
}

namespace {

// What add_decoded_range interns from marker `m`.
MarkerPoolIds intern_marker(Trace& trace, const Marker& m) {
  MarkerPoolIds ids;
  ids.known = true;
  ids.name = intern_bounded(trace, m.name);
  if (m.kind == MarkerKind::kTrace) {
    std::string joined;
    for (const auto& frame : m.trace) {
      if (!joined.empty()) joined += '\n';
      joined += frame;
    }
    ids.detail = intern_bounded(trace, joined);
  } else if (!m.module_type.empty()) {
    ids.detail = intern_bounded(trace, m.module_type);
  } else if (!m.legacy_mod.empty()) {
    ids.detail = intern_bounded(trace, m.legacy_mod);
  }
  if (!m.stack.empty()) ids.stack = intern_bounded(trace, m.stack);
  if (!m.args.empty() && m.args.size() < UINT32_MAX &&
      trace.interned_args_bytes + m.args.size() <= trace.interned_args_budget) {
    // A training loop calls the same ops on the same arguments step after step: the args are
    // kept once in the pool, and the record writer finds them there instead of fetching and
    // cutting the message again from the database (most of its time at 1M kernels). Once the
    // budget is spent it stays spent, so args that did not fit never will.
    const size_t pool_size = trace.pool.size();
    ids.args = trace.pool.intern(m.args);
    ids.args_in_pool = true;
    if (trace.pool.size() != pool_size) trace.interned_args_bytes += m.args.size();
  }
  return ids;
}

}  // namespace

void add_decoded_range(Trace& trace, RangeRecord r, std::string_view text, TextRef ref,
                       const Marker& m, const RangeValues& values, MarkerPoolIds* known_ids) {
  if (!m.error.empty()) {
    ++trace.stats.malformed_markers;
    std::string_view head = text.substr(0, 80);
    trace.warn("malformed marker", m.error + " in \"" + std::string(head) +
                                       (text.size() > head.size() ? "...\"" : "\""));
  }
  if (m.kind == MarkerKind::kSettings) {
    // Not a range: the flags go to the header, the last mark winning (pyprof writes one at
    // init() and one at exit, when the program has set what it trains with).
    trace.torch_settings = m.args;
    ++trace.stats.marks;
    return;
  }
  if (m.kind == MarkerKind::kCompiledKernel) {
    ++trace.stats.marks;
    add_compiled_kernel(trace, m.name, m.overload, m.args);
    return;
  }
  if (m.kind == MarkerKind::kCompiledCall) {
    ++trace.stats.marks;
    trace.compiled_calls.push_back({r.pid, r.tid, r.start, m.name, m.args});
    return;
  }
  r.kind = m.kind;
  r.dialect = m.dialect;
  r.op_id = m.op_id;
  r.seq = m.seq;
  if (m.interned) {
    if (values.has_uint64 && values.uint64_value <= uint64_t{INT64_MAX}) {
      r.op_id = static_cast<int64_t>(values.uint64_value);
    } else {
      trace.warn("interned marker without its op id",
                 "op \"" + std::string(m.name.substr(0, 60)) +
                     "\" has no uint64 payload (or one past 2^63): its op_id is left out");
    }
    r.seq = static_cast<int64_t>(values.category) - 1;
  }
  r.rf_tid = clamp_tid(m.tid);
  r.fwd_tid = clamp_tid(m.fwd_tid);
  MarkerPoolIds fresh_ids;
  if (known_ids == nullptr || !known_ids->known) {
    fresh_ids = intern_marker(trace, m);
    if (known_ids != nullptr) *known_ids = fresh_ids;
  }
  const MarkerPoolIds& ids = known_ids != nullptr ? *known_ids : fresh_ids;
  r.name = ids.name;
  r.detail = ids.detail;
  r.stack = ids.stack;
  r.has_args = !m.args.empty();
  if (ids.args_in_pool) {
    r.args_offset = ids.args;
    r.args_length = kArgsInPool;
  } else if (m.dialect == Dialect::kPyprof && r.has_args && text.size() > m.args.size() &&
             text.size() < UINT32_MAX) {
    // The annotator writes "args" last: then the object is the text's tail before the '}'.
    size_t at = text.size() - 1 - m.args.size();
    if (text.compare(at, m.args.size(), m.args) == 0) {
      r.args_offset = static_cast<uint32_t>(at);
      r.args_length = static_cast<uint32_t>(m.args.size());
    }
  }
  r.text = ref;
  if (r.shape == RangeShape::kMark) {
    ++trace.stats.marks;
  } else {
    ++trace.stats.ranges;
    if (r.end == kOpenEnd) ++trace.stats.ranges_unclosed;
  }
  if (r.end != kOpenEnd && r.end < r.start) {
    ++trace.stats.ranges_end_before_start;
    trace.warn("range ends before it starts",
               "range \"" + std::string(trace.pool.get(r.name).substr(0, 60)) + "\" start " +
                   std::to_string(r.start) + " end " + std::to_string(r.end) +
                   ": kept as an empty range at its start");
    r.end = r.start;
  }
  trace.ranges.push_back(r);
}

void TextMarkerCache::add_range(Trace& trace, RangeRecord base, std::string_view text, TextRef ref,
                                Marker& scratch, const RangeValues& values) {
  const MarkerDomain domain = marker_domain(trace, base);
  // Only the pyprof domain reads the text as JSON; elsewhere the digits are part of a name.
  const std::optional<PyprofIdDigits> digits =
      domain == MarkerDomain::kPyprof ? find_pyprof_id_digits(text) : std::nullopt;
  if (!digits) {
    parse::add_range(trace, base, text, ref, scratch, values);
    return;
  }
  key_.assign(text.substr(0, digits->id_begin));
  key_.append(text.substr(digits->seq_end));
  auto it = entries_.find(key_);
  if (it == entries_.end()) {
    if (entries_.size() >= kMaxEntries || bytes_ + 2 * text.size() > kMaxBytes) {
      parse::add_range(trace, base, text, ref, scratch, values);
      return;
    }
    bytes_ += 2 * text.size();
    it = entries_.try_emplace(key_).first;
    Entry& fresh = it->second;
    decode_marker(text, domain, fresh.marker);
    // The key stands for every text that has it only when the decoding read the id and seq
    // from the digits the key leaves out, and from nowhere else.
    const std::string_view rest = text.substr(digits->seq_end);
    fresh.usable = fresh.marker.error.empty() && !fresh.marker.interned &&
                   fresh.marker.op_id == digits->id && fresh.marker.seq == digits->seq &&
                   rest.find(R"("id")") == std::string_view::npos &&
                   rest.find(R"("seq")") == std::string_view::npos;
    add_decoded_range(trace, base, text, ref, fresh.marker, values,
                      fresh.usable ? &fresh.ids : nullptr);
    return;
  }
  Entry& entry = it->second;
  if (!entry.usable) {
    parse::add_range(trace, base, text, ref, scratch, values);
    return;
  }
  entry.marker.op_id = digits->id;
  entry.marker.seq = digits->seq;
  ++hits_;
  add_decoded_range(trace, base, text, ref, entry.marker, values, &entry.ids);
}

}  // namespace pyprof::parse
