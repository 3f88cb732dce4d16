#include "prof/records.h"

#include <fmt/core.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#include "common/marker_schema.h"
#include "models/op_model.h"
#include "prof/above_peak.h"
#include "prof/tensor_cores.h"

// read_dict runs four steps per line of net.dict, in one pass over the input, steps 1 and 2 on
// two threads of their own (FieldReader) a few blocks ahead of steps 3 and 4:
//   1. line:   BlockReader reads blocks of whole lines, padded for simdjson;
//   2. fields: read_object_fields picks the keys prof uses out of each line's JSON object
//              (On-Demand, one pass, no document tree), as views into the block;
//   3. record: make_record turns them into a ProfRecord: identity, place, timing, names, and
//              TimeChecker makes a time that cannot be right unknown (bad_time);
//   4. cost:   RecordCoster adds what the record cost (models/, each distinct op call costed
//              once) and, for kernels, Tensor Core use (each distinct kernel name judged once).
// Then link_cpu_parents joins the records of a CPU-only profile into call trees.

namespace pyprof::prof {

namespace {

// How parse writes a pyprof.autotune range in a record's `user_ranges` (domain:message).
constexpr std::string_view kAutotuneRangePrefix = "pyprof.autotune:";
static_assert(kAutotuneRangePrefix.substr(0, kAutotuneRangePrefix.size() - 1) == kAutotuneDomain);

// "1 record", "3 records": the count with its noun for messages.
std::string count_of(int64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// Records with one kind of problem: how many, and the first of them, for its one warning.
struct ProblemTally {
  int64_t records = 0;
  int64_t first_line = 0;
  std::string first_name, first_detail;

  void note(int64_t line, std::string_view name, std::string_view detail) {
    if (records++ > 0) return;
    first_line = line;
    first_name = name;
    first_detail = detail;
  }
};

namespace od = simdjson::ondemand;

// ---- 1. line ----------------------------------------------------------------------------------

// Bytes [0, size) of the input, with simdjson's padding readable beyond them, so that every
// line in it can be parsed in place. Never zero-filled: a block is a megabyte.
struct Block {
  std::unique_ptr<char[]> data;
  size_t size = 0;
  size_t capacity = 0;  // without the padding

  void reserve(size_t n) {
    if (n <= capacity) return;
    n = std::max(n, 2 * capacity);
    std::unique_ptr<char[]> grown(new char[n + simdjson::SIMDJSON_PADDING]);
    if (size > 0) std::memcpy(grown.get(), data.get(), size);
    data = std::move(grown);
    capacity = n;
  }
};

// A line past kMaxDictLineBytes: the read stops there.
struct LineTooLong : std::length_error {
  LineTooLong()
      : std::length_error(fmt::format(
            "longer than {} MiB, the most a net.dict line may hold (pyprof parse writes none that "
            "long: not a net.dict?)",
            kMaxDictLineBytes >> 20)) {}
};

// The input in blocks of whole lines.
class BlockReader {
 public:
  explicit BlockReader(std::FILE* in) : in_(in) {}

  // Fills `block` with the next lines (the last one possibly without its line end, at the end
  // of the input); false when nothing is left. A line longer than a block makes its block longer.
  bool next(Block& block) {
    block.size = 0;
    block.reserve(carry_.size() + kBlockBytes);
    if (!carry_.empty()) std::memcpy(block.data.get(), carry_.data(), carry_.size());
    block.size = carry_.size();
    carry_.clear();
    while (!eof_) {
      const size_t old = block.size;
      block.reserve(old + kBlockBytes);
      const size_t n = std::fread(block.data.get() + old, 1, kBlockBytes, in_);
      block.size = old + n;
      // Only the block's first line, begun before this read (what came before has no line
      // end), can be longer than a read: it must not grow without bound (/dev/zero).
      if (block.size > kMaxDictLineBytes) {
        const auto* first_end =
            static_cast<const char*>(std::memchr(block.data.get() + old, '\n', n));
        const size_t first_line =
            first_end != nullptr ? static_cast<size_t>(first_end - block.data.get()) : block.size;
        if (first_line > kMaxDictLineBytes) throw LineTooLong();
      }
      if (n < kBlockBytes) {
        eof_ = true;
        failed_ = std::ferror(in_) != 0;
        break;
      }
      // The carried part has no line end: only the new bytes can hold the last one.
      const auto* last = static_cast<const char*>(memrchr(block.data.get() + old, '\n', n));
      if (last != nullptr) {
        const size_t kept = static_cast<size_t>(last - block.data.get()) + 1;
        carry_.assign(block.data.get() + kept, block.size - kept);
        block.size = kept;
        break;
      }
    }
    return block.size > 0;
  }
  // Whether reading stopped on an I/O error rather than the end of the input.
  bool failed() const { return failed_; }

 private:
  static constexpr size_t kBlockBytes = size_t{1} << 20;
  std::FILE* in_;
  std::string carry_;  // the unfinished line after the last block's last line end
  bool eof_ = false, failed_ = false;
};

// ---- 2. fields --------------------------------------------------------------------------------

// The keys of one line that prof uses, as views into the line's block or into its batch's
// unescaped strings (valid while the batch is). Absent keys keep these defaults.
struct Fields {
  int64_t line = 0;       // the line's number in the input (for messages)
  size_t line_bytes = 0;  // its length in the input, line end included
  bool object = true;     // false: the line is not a JSON object
  bool header = false;
  int64_t version = 0;
  std::string_view records, source, kind, dir, name, long_name, op, legacy_mod, module, stack,
      bwd_op, args, bwd_args, src_kind, dst_kind;
  std::string_view domain;  // a mark line's NVTX domain
  std::string_view kernel;  // a compiled_kernel line's "kernel" object
  // A compiled_kernel line's "graph", a record's "compiled_graph": the compile id that tells
  // apart kernels of one name in two graphs (docs/formats.md §3).
  std::string_view compiled_graph;
  // A record's "compiled_symbols": the sizes its dynamic-shape graph's call ran with.
  std::string_view compiled_symbols;
  int64_t launch_start = -1;  // the launch call's start (GPU records); -1: none
  int64_t device = -1, stream = -1, start = 0, duration = 0, self_duration = 0, tid = -1, seq = -1,
          sub = 0, parent_id = 0, pid = 0, op_id = 0, fwd_op_id = 0, fwd_instance = 0, instance = 0,
          id = 0, bwd_op_id = 0, bytes = -1;
  int64_t rank = -1, world_size = -1;  // header (and records): the process's rank, -1: none
  // The compact form's references to `"kind":"args"` lines (docs/formats.md §3); -1: none.
  // Resolved by ArgsTable::resolve, which points `args` and `bwd_args` at the defined text.
  int64_t args_ref = -1, bwd_args_ref = -1;
  bool has_self_duration = false;  // absent or null: the record's duration stands in
  bool graph_launched = false;     // a `graph_node` key: launched by a CUDA graph replay
  bool autotune = false;           // a user range of the pyprof.autotune domain around it
  bool before_trace = false;       // launched before the trace began (in no step)
  // The first of start, duration, self_duration that holds a value but not an integer int64
  // holds (a fraction, a number past 2^63): the record's time is unknown. null is parse's
  // "unknown" (a GPU row that ends before it starts, an op range never closed) and reads as 0.
  std::string_view unreadable_time;
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  std::string layer;                // user ranges joined by ':'
  std::string trace;                // legacy trace frames joined by ','
  std::vector<DevicePeak> devices;  // header only
  // header only: `torch_settings`, each key with its value's JSON text ("false", "\"high\"").
  std::vector<std::pair<std::string, std::string>> torch_settings;
  // The header's `iterations` (docs/formats.md §3) when it is well formed, else why not.
  bool has_iterations = false;
  Iterations iterations;
  std::string iterations_problem;
  // A record's `step`: kNoStep when absent, kBadStep when not an integer.
  int64_t step = kNoStep;
  static constexpr int64_t kNoStep = -1, kBadStep = -2;
  static constexpr int64_t kBadRef = -2;  // args_ref / bwd_args_ref not a non-negative integer
};

// FLOPs per clock per SM of an architecture's densest dense Tensor Core mode (FP4/FP8/INT8
// where it has them; ../shared/reference/gpu-peaks.md §3): an upper bound on any op's rate.
// 0 for an architecture not known here (no FLOP check).
double max_flops_per_clock_per_sm(int64_t major, int64_t minor) {
  if (major < 7) return 1024;  // Maxwell/Pascal: no Tensor Cores; INT8 DP4A is below this
  if (major == 7) return minor >= 5 ? 2048 : 1024;  // Turing INT8; Volta FP16
  if (major == 8) return minor == 0 ? 4096 : 2048;  // A100 INT8; sm_86/87/89
  if (major == 9) return 8192;                      // Hopper FP8/INT8
  if (major == 10) return 32768;                    // Blackwell FP4
  if (major == 12) return 4096;                     // GeForce Blackwell FP4
  return 0;
}

// One object of the header's `devices`.
DevicePeak read_device(od::object o) {
  DevicePeak d;
  int64_t sm_count = 0, clock_hz = 0, major = -1, minor = 0;
  for (auto field : o) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) break;
    od::value v = field.value();
    int64_t x = 0;
    if (key == "id" && v.get_int64().get(x) == simdjson::SUCCESS) {
      d.id = x;
    } else if (key == "name") {
      std::string_view name;
      if (v.get_string().get(name) == simdjson::SUCCESS) d.name = name;
    } else if (key == "memory_bandwidth" && v.get_int64().get(x) == simdjson::SUCCESS) {
      d.memory_bandwidth = static_cast<double>(std::max<int64_t>(x, 0));
    } else if (key == "total_memory" && v.get_int64().get(x) == simdjson::SUCCESS) {
      d.total_memory = std::max<int64_t>(x, 0);
    } else if (key == "sm_count" && v.get_int64().get(x) == simdjson::SUCCESS) {
      sm_count = x;
    } else if (key == "clock_hz" && v.get_int64().get(x) == simdjson::SUCCESS) {
      clock_hz = x;
    } else if (key == "compute_capability") {
      od::array a;
      if (v.get_array().get(a) != simdjson::SUCCESS) continue;
      int i = 0;
      for (auto e : a) {
        if (e.get_int64().get(x) == simdjson::SUCCESS) (i == 0 ? major : minor) = x;
        ++i;
      }
    }
  }
  d.sm_count = sm_count;
  d.clock_hz = clock_hz;
  d.cc_major = static_cast<int>(std::clamp<int64_t>(major, -1, 1000));
  d.cc_minor = static_cast<int>(std::clamp<int64_t>(minor, 0, 1000));
  if (sm_count > 0 && clock_hz > 0 && major >= 0) {
    d.flops = static_cast<double>(sm_count) * static_cast<double>(clock_hz) *
              max_flops_per_clock_per_sm(major, minor);
  }
  return d;
}

// The header's `iterations` object into f.iterations; a problem (a missing or mistyped key,
// indices not 0..N-1, steps out of time order or overlapping) is said in f.iterations_problem,
// and prof then reads the profile as one without iterations.
void read_iterations(od::value v, Fields& f) {
  f.has_iterations = true;
  Iterations& it = f.iterations;
  std::string& problem = f.iterations_problem;
  od::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) {
    problem = "not an object";
    return;
  }
  int64_t count = -1;
  bool steps_seen = false;
  for (auto field : o) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      problem = "unreadable key";
      return;
    }
    od::value value = field.value();
    std::string_view text;
    if (key == "rule" || key == "range") {
      if (value.get_string().get(text) != simdjson::SUCCESS) {
        problem = fmt::format("`{}` is not a string", key);
        return;
      }
      (key == "rule" ? it.rule : it.range) = text;
    } else if (key == "count") {
      if (value.get_int64().get(count) != simdjson::SUCCESS) {
        problem = "`count` is not an integer";
        return;
      }
    } else if (key == "steps") {
      steps_seen = true;
      od::array a;
      if (value.get_array().get(a) != simdjson::SUCCESS) {
        problem = "`steps` is not an array";
        return;
      }
      for (auto e : a) {
        od::object so;
        if (e.get_object().get(so) != simdjson::SUCCESS) {
          problem = fmt::format("step {} is not an object", it.steps.size());
          return;
        }
        Step step;
        int64_t index = -1;
        bool has_start = false, has_end = false;
        for (auto sf : so) {
          std::string_view k;
          if (sf.unescaped_key().get(k) != simdjson::SUCCESS) break;
          od::value sv = sf.value();
          if (k == "index") {
            if (sv.get_int64().get(index) != simdjson::SUCCESS) index = -1;
          } else if (k == "name") {
            if (sv.get_string().get(text) == simdjson::SUCCESS) step.name = text;
          } else if (k == "start") {
            has_start = sv.get_int64().get(step.start) == simdjson::SUCCESS;
          } else if (k == "end") {
            has_end = sv.get_int64().get(step.end) == simdjson::SUCCESS;
          } else if (k == "cut") {
            bool cut = false;
            step.cut = sv.get_bool().get(cut) == simdjson::SUCCESS && cut;
          }
        }
        const size_t i = it.steps.size();
        if (index != static_cast<int64_t>(i)) {
          problem = fmt::format("step {} has index {} (expected 0..N-1 in order)", i, index);
          return;
        }
        if (!has_start || !has_end || step.start < 0 || step.end < step.start ||
            step.end > kMaxRecordStart) {
          problem = fmt::format("step {} has no credible span [start, end)", i);
          return;
        }
        if (i > 0 && step.start < it.steps.back().end) {
          problem = fmt::format(
              "step {} starts before step {} ends (steps must be in time "
              "order and not overlap)",
              i, i - 1);
          return;
        }
        step.index = static_cast<int32_t>(i);
        if (step.name.empty()) step.name = fmt::format("step {}", i);
        it.steps.push_back(std::move(step));
        if (it.steps.size() > (size_t{1} << 30)) {
          problem = "more than 2^30 steps";
          return;
        }
      }
    }
  }
  if (!steps_seen || it.steps.empty()) {
    problem = "no `steps`";
  } else if (count >= 0 && count != static_cast<int64_t>(it.steps.size())) {
    problem = fmt::format("`count` {} but {} steps", count, it.steps.size());
  } else if (it.rule.empty()) {
    problem = "no `rule`";
  }
}

void read_xyz(od::value v, int32_t out[3]) {
  od::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return;
  int i = 0;
  for (auto e : a) {
    int64_t x;
    if (i < 3 && e.get_int64().get(x) == simdjson::SUCCESS) out[i] = static_cast<int32_t>(x);
    ++i;
  }
}

// Keys longer than this are read through simdjson's unescaping (none of prof's keys is).
constexpr size_t kMaxRawKey = 64;

// One pass over the object's fields (On-Demand): no tape of the whole record, and `args` comes
// back as its raw JSON text.
// Strings that hold escapes are unescaped into `unescaped`; the others are views into the line.
bool read_object_fields(od::object o, Fields& f, std::deque<std::string>& unescaped) {
  for (auto field : o) {
    std::string_view key;
    // The key as it is in the line when it holds no escape (parse writes none): unescaping
    // copies every key of every line, a tenth of the read.
    if (field.error() != simdjson::SUCCESS) return false;
    const char* raw_key = field.value_unsafe().key().raw();
    const auto* key_end = static_cast<const char*>(std::memchr(raw_key, '"', kMaxRawKey));
    const size_t length = key_end != nullptr ? static_cast<size_t>(key_end - raw_key) : 0;
    if (key_end != nullptr && std::memchr(raw_key, '\\', length) == nullptr) {
      key = std::string_view(raw_key, length);
    } else if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      return false;
    }
    od::value v = field.value();
    // A string: a view into the line unless it holds an escape (parse writes few), so that
    // the line's fields outlive the parser's string buffer, which the next line reuses.
    auto str = [&](std::string_view& out) {
      std::string_view token = v.raw_json_token();
      while (!token.empty() && (token.back() == ' ' || token.back() == '\t' ||
                                token.back() == '\n' || token.back() == '\r'))
        token.remove_suffix(1);
      // A quote inside the token is escaped: looking for backslashes is enough.
      if (token.size() >= 2 && token.front() == '"' && token.back() == '"' &&
          std::memchr(token.data() + 1, '\\', token.size() - 2) == nullptr) {
        out = token.substr(1, token.size() - 2);
      } else if (v.get_string().get(out) == simdjson::SUCCESS) {
        out = unescaped.emplace_back(out);
      } else {
        out = {};
      }
    };
    auto num = [&](int64_t& out) {
      int64_t x;
      if (v.get_int64().get(x) == simdjson::SUCCESS) out = x;
    };
    // A time: an integer, or null (unknown: 0); anything else is noted in unreadable_time.
    // Returns whether it held an integer.
    auto time = [&](int64_t& out, std::string_view name) {
      bool null = false;
      if (v.is_null().get(null) == simdjson::SUCCESS && null) return false;
      int64_t x;
      if (v.get_int64().get(x) == simdjson::SUCCESS) {
        out = x;
        return true;
      }
      if (f.unreadable_time.empty()) f.unreadable_time = name;
      return false;
    };
    // parse writes args as an object (pyprof, emit_nvtx) or an array (legacy PyProf).
    auto raw = [&](std::string_view& out) {
      out = {};
      od::json_type type;
      if (v.type().get(type) != simdjson::SUCCESS) return;
      if (type == od::json_type::object) {
        od::object obj;
        if (v.get_object().get(obj) == simdjson::SUCCESS &&
            obj.raw_json().get(out) != simdjson::SUCCESS)
          out = {};
      } else if (type == od::json_type::array) {
        od::array arr;
        if (v.get_array().get(arr) == simdjson::SUCCESS &&
            arr.raw_json().get(out) != simdjson::SUCCESS)
          out = {};
      }
    };
    // A reference to an args line: a non-negative integer; anything else is kBadRef, which
    // resolve() reports.
    auto ref = [&](int64_t& out) {
      int64_t x;
      out = v.get_int64().get(x) == simdjson::SUCCESS && x >= 0 ? x : Fields::kBadRef;
    };
    switch (key.empty() ? '\0' : key[0]) {
      case 'a':
        if (key == "args")
          raw(f.args);
        else if (key == "args_ref")
          ref(f.args_ref);
        break;
      case 'c':
        if (key == "compiled_graph")
          str(f.compiled_graph);
        else if (key == "compiled_symbols")
          raw(f.compiled_symbols);
        break;
      case 'b':
        if (key == "bwd_op")
          str(f.bwd_op);
        else if (key == "bwd_op_id")
          num(f.bwd_op_id);
        else if (key == "bwd_args")
          raw(f.bwd_args);
        else if (key == "bwd_args_ref")
          ref(f.bwd_args_ref);
        else if (key == "block")
          read_xyz(v, f.block);
        else if (key == "bytes")
          num(f.bytes);
        else if (key == "before_trace") {
          bool b = false;
          f.before_trace = v.get_bool().get(b) == simdjson::SUCCESS && b;
        }
        break;
      case 'd':
        if (key == "dir")
          str(f.dir);
        else if (key == "dst_kind")
          str(f.dst_kind);
        else if (key == "domain")
          str(f.domain);
        else if (key == "duration")
          time(f.duration, "duration");
        else if (key == "device")
          num(f.device);
        else if (key == "devices") {
          od::array a;
          if (v.get_array().get(a) == simdjson::SUCCESS) {
            for (auto e : a) {
              od::object o;
              if (e.get_object().get(o) == simdjson::SUCCESS) f.devices.push_back(read_device(o));
            }
          }
        }
        break;
      case 'f':
        if (key == "fwd_op_id")
          num(f.fwd_op_id);
        else if (key == "fwd_instance")
          num(f.fwd_instance);
        break;
      case 'g':
        if (key == "grid")
          read_xyz(v, f.grid);
        else if (key == "graph_node")
          f.graph_launched = true;
        else if (key == "graph")
          str(f.compiled_graph);
        break;
      case 'w':
        if (key == "world_size") num(f.world_size);
        break;
      case 'i':
        if (key == "instance")
          num(f.instance);
        else if (key == "id")
          num(f.id);
        else if (key == "iterations")
          read_iterations(v, f);
        break;
      case 'k':
        if (key == "kind")
          str(f.kind);
        else if (key == "kernel")
          raw(f.kernel);
        break;
      case 'l':
        if (key == "launch") {
          od::object launch;
          if (v.get_object().get(launch) == simdjson::SUCCESS) {
            for (auto lf : launch) {
              std::string_view lkey;
              int64_t x;
              if (lf.unescaped_key().get(lkey) == simdjson::SUCCESS && lkey == "start" &&
                  lf.value().get_int64().get(x) == simdjson::SUCCESS)
                f.launch_start = x;
            }
          }
        } else if (key == "long_name")
          str(f.long_name);
        else if (key == "legacy_mod")
          str(f.legacy_mod);
        break;
      case 'm':
        if (key == "module") str(f.module);
        break;
      case 'n':
        if (key == "name") str(f.name);
        break;
      case 'o':
        if (key == "op")
          str(f.op);
        else if (key == "op_id")
          num(f.op_id);
        break;
      case 'p':
        if (key == "pid")
          num(f.pid);
        else if (key == "parent_id")
          num(f.parent_id);
        else if (key == "pyprof_dict") {
          f.header = true;
          num(f.version);
        }
        break;
      case 'r':
        if (key == "records")
          str(f.records);
        else if (key == "rank")
          num(f.rank);
        break;
      case 's':
        if (key == "start")
          time(f.start, "start");
        else if (key == "stream")
          num(f.stream);
        else if (key == "seq")
          num(f.seq);
        else if (key == "sub")
          num(f.sub);
        else if (key == "self_duration")
          f.has_self_duration = time(f.self_duration, "self_duration");
        else if (key == "stack")
          str(f.stack);
        else if (key == "source")
          str(f.source);
        else if (key == "src_kind")
          str(f.src_kind);
        else if (key == "step") {
          int64_t x;
          f.step = v.get_int64().get(x) == simdjson::SUCCESS && x >= 0 ? x : Fields::kBadStep;
        }
        break;
      case 't':
        if (key == "tid")
          num(f.tid);
        else if (key == "torch_settings") {
          od::object o;
          if (v.get_object().get(o) == simdjson::SUCCESS) {
            for (auto field : o) {
              std::string_view k, raw;
              if (field.unescaped_key().get(k) != simdjson::SUCCESS) continue;
              // Scalars (booleans, strings, numbers): their token's text.
              raw = field.value().raw_json_token();
              while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' ||
                                      raw.back() == ',' || raw.back() == '}')) {
                raw.remove_suffix(1);
              }
              f.torch_settings.emplace_back(std::string(k), std::string(raw));
            }
          }
        } else if (key == "trace") {
          od::array a;
          if (v.get_array().get(a) == simdjson::SUCCESS) {
            for (auto e : a) {
              std::string_view frame;
              if (e.get_string().get(frame) != simdjson::SUCCESS) continue;
              if (!f.trace.empty()) f.trace += ',';
              f.trace += frame;
            }
          }
        }
        break;
      case 'u':
        if (key == "user_ranges") {
          od::array a;
          if (v.get_array().get(a) == simdjson::SUCCESS) {
            for (auto e : a) {
              std::string_view u;
              if (e.get_string().get(u) != simdjson::SUCCESS) continue;
              if (u.starts_with(kAutotuneRangePrefix)) f.autotune = true;
              if (u.starts_with("layer:")) u.remove_prefix(6);
              if (!f.layer.empty()) f.layer += ':';
              f.layer += u;
            }
          }
        }
        break;
      default:
        break;
    }
  }
  return true;
}

// One block's lines read into Fields.
struct FieldBatch {
  Block text;                         // the block's lines
  std::vector<Fields> fields;         // its non-blank lines in order: the first `size` of them
  size_t size = 0;                    // their `line` counts from 1 at the block's first line
  std::deque<std::string> unescaped;  // the strings of `fields` that held escapes
  int64_t lines = 0;                  // the block's lines, blank ones included
};

// Steps 1 and 2 on threads of their own, a few blocks ahead of the caller, who makes and costs
// the records (steps 3 and 4) block after block in input order. On a million-kernel net.dict
// reading the fields costs about twice what the rest of the read does: two threads read them.
class FieldReader {
 public:
  explicit FieldReader(std::FILE* in) : blocks_(in) {
    const int threads = std::thread::hardware_concurrency() > 1 ? 2 : 1;
    for (int i = 0; i < 3 * threads; ++i) free_.push_back(std::make_unique<FieldBatch>());
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~FieldReader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  FieldReader(const FieldReader&) = delete;
  FieldReader& operator=(const FieldReader&) = delete;

  // The next non-blank line's fields, `line` its number in the input; valid until the next
  // call. nullptr at the end of the input (or where reading failed: failure()).
  Fields* next_line() {
    while (batch_ == nullptr || index_ == batch_->size) {
      if (batch_ != nullptr) lines_ += batch_->lines;
      batch_ = next_batch();
      index_ = 0;
      if (batch_ == nullptr) return nullptr;
    }
    Fields& f = batch_->fields[index_++];
    f.line += lines_;
    return &f;
  }
  // After next_line() returned nullptr: the lines read, blank ones included.
  int64_t lines() const { return lines_; }
  // After next_line() returned nullptr: why reading stopped early ("" at the end of the input).
  const std::string& failure() const { return failure_; }
  // Whether it stopped at a line too long (the line after lines()).
  bool line_too_long() const { return line_too_long_; }

 private:
  // The next batch in input order, valid until the next call; nullptr after the last one.
  FieldBatch* next_batch() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (current_) free_.push_back(std::move(current_));
    changed_.notify_all();
    changed_.wait(lock, [this] { return ready_.count(next_) > 0 || next_ >= end_; });
    auto it = ready_.find(next_);
    if (it == ready_.end()) return nullptr;
    current_ = std::move(it->second);
    ready_.erase(it);
    ++next_;
    return current_.get();
  }

  void run() {
    od::parser parser;
    for (;;) {
      std::unique_ptr<FieldBatch> batch;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stop_ || exhausted_ || !free_.empty(); });
        if (stop_ || exhausted_) return;
        batch = std::move(free_.front());
        free_.pop_front();
      }
      // Blocks are read one thread at a time, and numbered in the order they were read.
      int64_t sequence;
      bool more = false, too_long = false;
      std::string failure;
      {
        std::lock_guard<std::mutex> lock(read_mutex_);
        sequence = read_++;
        try {
          more = blocks_.next(batch->text);
          if (!more && blocks_.failed()) failure = "read error";
        } catch (const LineTooLong& e) {
          failure = e.what();
          too_long = true;
        } catch (const std::exception& e) {
          failure = e.what();
        }
      }
      if (more) {
        try {
          fill(parser, *batch);
        } catch (const std::exception& e) {
          more = false;
          failure = e.what();
        }
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (more) {
          ready_.emplace(sequence, std::move(batch));
        } else {
          // The input ends (or fails) at this block: the caller stops before it.
          exhausted_ = true;
          if (sequence < end_) {
            end_ = sequence;
            failure_ = failure;
            line_too_long_ = too_long;
          }
        }
      }
      changed_.notify_all();
    }
  }

  // Parses each line of the batch's block in place (the block's padding covers the last one).
  static void fill(od::parser& parser, FieldBatch& batch) {
    batch.size = 0;
    batch.unescaped.clear();
    int64_t lines = 0;
    const char* p = batch.text.data.get();
    const char* end = p + batch.text.size;
    const char* padded_end = end + simdjson::SIMDJSON_PADDING;
    while (p < end) {
      const auto* line_end = static_cast<const char*>(std::memchr(p, '\n', end - p));
      const char* next = line_end != nullptr ? line_end + 1 : end;
      if (line_end == nullptr) line_end = end;
      ++lines;
      size_t length = static_cast<size_t>(line_end - p);
      while (length > 0 && (p[length - 1] == '\r' || p[length - 1] == '\n')) --length;
      if (length > 0) {
        if (batch.size == batch.fields.size()) batch.fields.emplace_back();
        Fields& f = batch.fields[batch.size++];
        f = Fields{};
        f.line = lines;
        f.line_bytes = static_cast<size_t>(next - p);
        od::document doc;
        od::object o;
        f.object = parser.iterate(p, length, static_cast<size_t>(padded_end - p)).get(doc) ==
                       simdjson::SUCCESS &&
                   doc.get_object().get(o) == simdjson::SUCCESS &&
                   read_object_fields(o, f, batch.unescaped);
      }
      p = next;
    }
    batch.lines = lines;
  }

  BlockReader blocks_;  // read under read_mutex_
  int64_t read_ = 0;    // blocks read (or tried) so far, under read_mutex_
  std::mutex read_mutex_;
  std::mutex mutex_;  // guards what follows, up to the threads
  std::condition_variable changed_;
  std::deque<std::unique_ptr<FieldBatch>> free_;
  std::map<int64_t, std::unique_ptr<FieldBatch>> ready_;  // by block number
  std::unique_ptr<FieldBatch> current_;                   // the caller's
  int64_t next_ = 0;                                      // the block the caller reads next
  int64_t end_ = std::numeric_limits<int64_t>::max();     // the first block past the input
  bool stop_ = false, exhausted_ = false;
  std::string failure_;
  bool line_too_long_ = false;
  FieldBatch* batch_ = nullptr;       // the caller's: the batch next_line() is in
  size_t index_ = 0;                  // its next line
  int64_t lines_ = 0;                 // the input's lines before it
  std::vector<std::thread> threads_;  // last: started once the members they use exist
};

// The header line: what kind of records follow and where they came from.
void read_header(const Fields& f, ReadResult& out) {
  if (f.version > kNewestDictVersion) {
    out.warnings.push_back(
        fmt::format("net.dict version {} is newer than this prof ({}): unknown keys are ignored",
                    f.version, kNewestDictVersion));
  }
  out.cpu_only = f.records == "op";
  out.source = std::string(f.source);
  out.rank = f.rank;
  out.world_size = f.world_size;
  out.devices = f.devices;
  out.torch_settings.clear();
  for (const auto& [k, v] : f.torch_settings) out.torch_settings[k] = v;
  out.iterations = {};
  if (!f.has_iterations) return;
  if (!f.iterations_problem.empty()) {
    out.warnings.push_back("header: `iterations` is malformed (" + f.iterations_problem +
                           "): ignored, the reports cover every record");
    return;
  }
  out.iterations = f.iterations;
}

// The compact form's `"kind":"args"` lines (docs/formats.md §3): each distinct arguments value,
// defined once before the first record that refers to it by `args_ref` or `bwd_args_ref`.
class ArgsTable {
 public:
  // Keeps line `f`'s definition; false with `error` set when it is malformed or repeats an id.
  bool define(const Fields& f, std::string& error) {
    if (f.id < 0 || f.args.empty()) {
      error = fmt::format(
          "line {}: an \"args\" line needs an \"id\" (a non-negative integer) and \"args\" (an "
          "object or array)",
          f.line);
      return false;
    }
    if (!text_.emplace(f.id, std::string(f.args)).second) {
      error = fmt::format("line {}: args id {} is defined twice", f.line, f.id);
      return false;
    }
    return true;
  }

  // Points f.args / f.bwd_args at the text their references name; false with `error` set when
  // a reference is malformed or names no earlier args line.
  bool resolve(Fields& f, std::string& error) const {
    return resolve_one(f, "args_ref", f.args_ref, f.args, error) &&
           resolve_one(f, "bwd_args_ref", f.bwd_args_ref, f.bwd_args, error);
  }

 private:
  bool resolve_one(const Fields& f, const char* key, int64_t id, std::string_view& args,
                   std::string& error) const {
    if (id == -1) return true;
    if (id == Fields::kBadRef) {
      error = fmt::format("line {}: \"{}\" is not a non-negative integer", f.line, key);
      return false;
    }
    auto it = text_.find(id);
    if (it == text_.end()) {
      error = fmt::format("line {}: \"{}\": {} names no \"args\" line before it", f.line, key, id);
      return false;
    }
    args = it->second;
    return true;
  }

  std::unordered_map<int64_t, std::string> text_;  // id -> the args JSON
};

// Counts line `out.lines` as unreadable; warns about the first few.
void skip_line(ReadResult& out) {
  ++out.skipped_lines;
  if (out.warnings.size() < 5) {
    out.warnings.push_back("line " + std::to_string(out.lines) + ": not a JSON object");
  }
}

// ---- 3. record --------------------------------------------------------------------------------

Kind kind_of(std::string_view kind) {
  return kind == "kernel"   ? Kind::kKernel
         : kind == "memcpy" ? Kind::kMemcpy
         : kind == "memset" ? Kind::kMemset
                            : Kind::kOp;
}

MemoryKind memory_kind_of(std::string_view kind) {
  return kind.empty()         ? MemoryKind::kUnknown
         : kind == "pageable" ? MemoryKind::kPageable
         : kind == "pinned"   ? MemoryKind::kPinned
         : kind == "device"   ? MemoryKind::kDevice
         : kind == "managed"  ? MemoryKind::kManaged
                              : MemoryKind::kOther;
}

Dir dir_of(std::string_view dir) {
  return dir == "fprop" ? Dir::kFprop : dir == "bprop" ? Dir::kBprop : Dir::kNone;
}

// The record of a line, everything but its cost and Tensor Core use. `index` is its position
// in ReadResult::records. Interns its strings in a fixed order (reports break ties by string
// id).
ProfRecord make_record(const Fields& f, size_t index, Strings& s) {
  ProfRecord r;
  r.kind = kind_of(f.kind);
  r.dir = dir_of(f.dir);
  r.name = s.intern(f.name);
  r.long_name = s.intern(f.long_name);
  r.device = static_cast<int32_t>(f.device);
  r.stream = f.stream;
  std::copy(f.grid, f.grid + 3, r.grid);
  std::copy(f.block, f.block + 3, r.block);
  r.start = f.start;
  r.duration = f.duration;
  r.launch_start = f.launch_start;
  r.graph_launched = f.graph_launched;
  r.autotune = f.autotune;
  r.before_trace = f.before_trace;
  r.src_memory = memory_kind_of(f.src_kind);
  r.dst_memory = memory_kind_of(f.dst_kind);
  r.self_duration = f.has_self_duration ? f.self_duration : f.duration;
  r.tid = f.tid;
  r.seq = f.seq;
  r.sub = static_cast<int32_t>(f.sub);
  r.fwd_instance = f.fwd_instance;
  r.op_id = r.dir == Dir::kBprop ? f.fwd_op_id : f.op_id;
  if (r.kind == Kind::kOp) {
    // parse's `instance` of a CPU record inside a backward node is the node, shared with the
    // node's other ops; prof counts every CPU op record as an instance of its own
    // (docs/prof.md §1), so its position is its instance.
    r.instance = static_cast<int64_t>(index) + 1;
  } else if (r.kind == Kind::kKernel) {
    // parse writes `instance` on every record that has an op, and has since prof first read it
    // (both came in one change), so there is no older numbering to fall back to; a record
    // without one has no op and shares its cost with nothing.
    r.instance = f.instance;
  }  // a copy's bytes are its own, not shared with its op's kernels: instance 0
  std::string_view op = f.op;
  r.op = s.intern(op);
  size_t colon = op.rfind("::");
  r.mod = s.intern(!f.legacy_mod.empty()             ? f.legacy_mod
                   : colon != std::string_view::npos ? op.substr(0, colon)
                                                     : std::string_view());
  r.module = s.intern(f.module);
  r.layer = s.intern(f.layer);
  r.trace = s.intern(f.stack.empty() ? std::string_view(f.trace) : f.stack);
  return r;
}

// Checks each record's times against the credible bounds and the running sums (records.h,
// kMaxRecordDuration); a record outside them gets an unknown time (bad_time). Counts them and
// keeps the first for the one warning.
class TimeChecker {
 public:
  void check(const Fields& f, ProfRecord& r) {
    std::string problem = problem_of(f, r);
    if (problem.empty()) {
      total_duration_ += r.duration;
      total_self_duration_ += r.self_duration;
      return;
    }
    r.bad_time = true;
    r.start = r.duration = r.self_duration = 0;
    bad_.note(f.line, f.name, problem);
  }

  void warn(ReadResult& out) const {
    out.bad_time = bad_.records;
    if (bad_.records == 0) return;
    out.warnings.push_back(fmt::format(
        "{} with a time that cannot be right (first: line {}, {}: {}): time unknown (0 ns), "
        "flagged `bad-time` (column flag) and left out of the time sums and the totals",
        count_of(bad_.records, "record"), bad_.first_line, bad_.first_name, bad_.first_detail));
  }

 private:
  // Why the record's times are not credible; "" when they are.
  std::string problem_of(const Fields& f, const ProfRecord& r) const {
    if (!f.unreadable_time.empty()) {
      return fmt::format("{} is not an integer of at most 63 bits", f.unreadable_time);
    }
    if (r.start < 0) return fmt::format("start {} ns is negative", r.start);
    if (r.start > kMaxRecordStart) {
      return fmt::format("start {} ns is past 2^62 ns (the year 2116)", r.start);
    }
    for (auto [name, value] : {std::pair<const char*, int64_t>{"duration", r.duration},
                               std::pair<const char*, int64_t>{"self_duration", r.self_duration}}) {
      if (value < 0) return fmt::format("{} {} ns is negative", name, value);
      if (value > kMaxRecordDuration) {
        return fmt::format("{} {} ns is past 2^50 ns (13 days)", name, value);
      }
    }
    if (r.duration > kMaxTotalTime - total_duration_ ||
        r.self_duration > kMaxTotalTime - total_self_duration_) {
      return "the durations of the records up to it add up past 2^62 ns (146 years)";
    }
    return {};
  }

  int64_t total_duration_ = 0;  // of the records with credible times, each <= kMaxTotalTime
  int64_t total_self_duration_ = 0;
  ProblemTally bad_;
};

// ---- 4. cost ----------------------------------------------------------------------------------

// Which op's model costs a record, and with which arguments.
struct CostSource {
  std::string_view op;    // "" when the record carries no op cost
  std::string_view args;  // that op's args JSON
  int64_t args_ref = -1;  // the compact form's id of `args`; -1: written inline
  // A bprop kernel whose backward node ran no op the trace names (emit_nvtx, legacy PyProf):
  // its forward op's cost stands in (docs/prof.md §1, "Backward").
  bool backward_estimate = false;
};

CostSource cost_source(const Fields& f, const ProfRecord& r) {
  // Its own op (CPU records: the record's name), or for bprop the op that ran inside the
  // backward node.
  CostSource source{r.kind == Kind::kOp ? f.name : f.op, f.args, f.args_ref};
  if (r.dir != Dir::kBprop) return source;
  if (!f.bwd_op.empty()) {
    source.op = f.bwd_op;
    source.args = f.bwd_args;
    source.args_ref = f.bwd_args_ref;
  } else if (r.kind == Kind::kOp) {
    source.op = {};  // a backward node's own record: its ops carry the cost
  } else {
    source.backward_estimate = true;
  }
  return source;
}

std::string shapes_of(const models::OpArgs& args) {
  std::string out;
  for (const models::Tensor* t : args.tensors()) {
    if (!out.empty()) out += ',';
    out += '[';
    for (size_t i = 0; i < t->shape.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(t->shape[i]);
    }
    out += ']';
  }
  return out;
}

// Fills in what each record cost and whether its kernel used Tensor Cores. Records repeat the
// same op calls and kernels, so each distinct (op, args) is costed once and each distinct
// kernel name judged once.
class RecordCoster {
 public:
  RecordCoster(const ReadOptions& options, Strings& strings)
      : allow_tf32_(options.allow_tf32), strings_(strings) {}

  // One warning per kind of cost problem, with how many records had it and the first of them.
  void warn_about_problems(ReadResult& out) const {
    if (overflow_.records > 0) {
      out.warnings.push_back(fmt::format(
          "{} of modelled ops with FLOP or byte counts that do not fit 64 bits (first: line {}, "
          "{}, {}): not modelled (na), left out of the totals",
          count_of(overflow_.records, "record"), overflow_.first_line, overflow_.first_name,
          overflow_.first_detail));
    }
    if (negative_.records > 0) {
      out.warnings.push_back(fmt::format(
          "{} of modelled ops with a tensor with a negative dimension (first: line {}, {}: {}): "
          "not modelled (na), left out of the totals",
          count_of(negative_.records, "record"), negative_.first_line, negative_.first_name,
          negative_.first_detail));
    }
    for (const auto& [op, tally] : user_model_problems_) {
      out.warnings.push_back(fmt::format(
          "{} of {} that its user model cannot cost (first: line {}: {}): not modelled (na)",
          count_of(tally.records, "record"), op, tally.first_line, tally.first_detail));
    }
  }

  // A `"kind":"compiled_kernel"` line: records named `name` (its Inductor kernel) cost what its
  // node list says (models::compiled_kernel_cost); with a `graph`, only the records of that
  // graph (their `compiled_graph`). A name defined twice keeps its first line.
  void define_compiled_kernel(std::string_view name, std::string_view graph,
                              std::string_view kernel) {
    const uint32_t id = compiled_key(name, graph);
    if (compiled_.count(id)) return;
    models::OpCost c = models::compiled_kernel_cost(kernel);
    compiled_.emplace(id, CachedCost{std::move(c), ""});
    // Dynamic shapes: costed per call, with the sizes the record's graph call ran with.
    if (models::has_symbolic_sizes(kernel)) {
      symbolic_kernels_.emplace(id, std::string(kernel));
    }
  }

  // Sets r.cost_op, the cost fields (modeled, flops, bytes, op_flops, op_bytes, estimated,
  // tc_eligible, params, dtype, family, shapes) and, for kernels, r.tc.
  void cost(const Fields& f, ProfRecord& r) {
    if (!compiled_.empty() && (r.kind == Kind::kKernel || r.kind == Kind::kOp)) {
      auto it = compiled_.find(f.compiled_graph.empty() ? r.name
                                                        : compiled_key(f.name, f.compiled_graph));
      // A kernel of the C++ wrapper's extern call (cuBLAS's, under `aoti_torch_cuda_mm_out`):
      // its name has no mark, the call it ran in has (parse's compiled_call_range).
      const std::string_view call = r.dir == Dir::kBprop ? f.bwd_op : f.op;
      const bool by_call = it == compiled_.end() && r.kind == Kind::kKernel && !call.empty();
      if (by_call) it = compiled_.find(compiled_key(call, f.compiled_graph));
      if (it != compiled_.end()) {
        auto symbolic = f.compiled_symbols.empty() ? symbolic_kernels_.end()
                                                   : symbolic_kernels_.find(it->first);
        cost_compiled(symbolic == symbolic_kernels_.end()
                          ? it->second
                          : bound_cost(it->first, symbolic->second, f.compiled_symbols),
                      r);
        if (by_call) {
          // The call's cost is shared by the kernels it launched, as an eager op's is.
          r.compiled = false;
          r.compiled_call = true;
          r.cost_op = strings_.intern(call);
          if (r.dir == Dir::kBprop) r.cost_part = backward_cost_part(f, r.cost_op);
        }
        if (r.kind == Kind::kKernel) r.tc = uses_tensor_cores(r);
        return;
      }
    }
    CostSource source = cost_source(f, r);
    r.cost_op = strings_.intern(source.op);
    if (r.kind == Kind::kKernel && r.dir == Dir::kBprop && !f.bwd_op.empty()) {
      r.cost_part = backward_cost_part(f, r.cost_op);
    }
    if (r.kind == Kind::kMemcpy || r.kind == Kind::kMemset) {
      cost_copy(f, r);
    } else if (!source.op.empty()) {
      cost_op(f, source, r);
    }
    if (r.kind == Kind::kKernel) r.tc = uses_tensor_cores(r);
  }

 private:
  // A backward node's kernels come from several ops (convolution_backward's dgrad and wgrad,
  // and beside them the gradient accumulation's add): each op's cost is shared by its own
  // kernels only, the kernels of one (instance, cost_part). The part is the op's id (net.dict
  // `bwd_op_id`); without one, the op's name `cost_op` stands in (negative, apart from ids).
  static int64_t backward_cost_part(const Fields& f, uint32_t cost_op) {
    return f.bwd_op_id != 0 ? f.bwd_op_id : -static_cast<int64_t>(cost_op) - 1;
  }

  struct CachedCost {
    models::OpCost cost;
    std::string shapes;
    // The string ids of params (and of params + ",bwd=est"), dtype, family and shapes, each
    // interned when a record first needs it, as before they were cached (string ids break ties
    // in the reports, so their order must not change); 0: not yet.
    uint32_t params_id = 0, estimated_params_id = 0, dtype_id = 0, family_id = 0, shapes_id = 0;
  };

  // The cost of a dynamic-shape kernel (compiled_ key `id`) under one call's sizes; a training
  // loop repeats few sizes, so each (kernel, sizes) is costed once.
  CachedCost& bound_cost(uint32_t id, const std::string& kernel, std::string_view symbols) {
    key_.assign(reinterpret_cast<const char*>(&id), sizeof id);
    key_.append(symbols);
    auto it = bound_.find(key_);
    if (it != bound_.end()) return it->second;
    const std::string bound = models::bind_symbols(kernel, symbols);
    models::OpCost c = bound.empty() ? models::OpCost{} : models::compiled_kernel_cost(bound);
    return bound_.emplace(key_, CachedCost{std::move(c), ""}).first->second;
  }

  uint32_t interned(uint32_t& id, std::string_view text) {
    if (id == 0) id = strings_.intern(text);
    return id;
  }

  // The key of compiled_: the kernel's name, or its name and graph when the name is shared.
  uint32_t compiled_key(std::string_view name, std::string_view graph) {
    if (graph.empty()) return strings_.intern(name);
    compiled_kernel_key(name, graph, key_);
    return strings_.intern(key_);
  }

  void cost_compiled(CachedCost& cached, ProfRecord& r) {
    const models::OpCost& c = cached.cost;
    r.compiled = true;
    r.cost_op = r.name;
    r.modeled = c.modeled;
    r.flops = r.op_flops = c.flops;
    r.op_masked_flops = c.masked_flops;
    r.bytes = r.op_bytes = c.bytes;
    r.tc_eligible = c.tc_eligible && (allow_tf32_ || c.dtype != "float32");
    r.params = interned(cached.params_id, c.params);
    r.dtype = interned(cached.dtype_id, c.dtype);
    r.family = interned(cached.family_id, c.family);
    r.shapes = interned(cached.shapes_id, cached.shapes);
  }

  void cost_copy(const Fields& f, ProfRecord& r) {
    r.bytes_moved = f.bytes;
    r.modeled = r.bytes_moved >= 0;
    r.bytes = r.op_bytes = r.bytes_moved >= 0 ? static_cast<double>(r.bytes_moved) : 0;
    r.family = strings_.intern(r.kind == Kind::kMemcpy ? "memcpy" : "memset");
  }

  void cost_op(const Fields& f, CostSource source, ProfRecord& r) {
    CachedCost* cached = &lookup(r.cost_op, source.op, source.args, source.args_ref);
    if (!cached->cost.modeled && r.dir == Dir::kBprop && r.kind != Kind::kOp && source.op != f.op) {
      // The backward op's arguments are unknown (emit_nvtx without record_shapes): estimate
      // from the forward op.
      CachedCost& forward = lookup(r.op, f.op, f.args, f.args_ref);
      if (forward.cost.modeled) {
        // The registry knows the backward op's family by its name alone.
        if (!cached->cost.family.empty()) r.bwd_op_family = strings_.intern(cached->cost.family);
        cached = &forward;
        source.backward_estimate = true;
      }
    }
    const models::OpCost& c = cached->cost;
    if (c.problem == models::CostProblem::kUserModel) {
      user_model_problems_[std::string(source.op)].note(f.line, source.op, c.params);
    } else if (!c.modeled && c.problem != models::CostProblem::kNone) {
      (c.problem == models::CostProblem::kOverflow ? overflow_ : negative_)
          .note(f.line, source.op, c.params);
    }
    r.modeled = c.modeled;
    r.estimated = source.backward_estimate && c.modeled;
    // The estimate stands for the forward op's whole backward, not for one of the node's ops:
    // the node's kernels share it as one part (assign_costs), whichever op each ran in.
    if (r.estimated) r.cost_part = 0;
    // The backward of an op seen only by name (emit_nvtx / legacy records without the
    // backward node's inner ops): GEMM-like ops cost twice their forward (dgrad + wgrad).
    double scale = r.estimated && (c.family == "matmul" || c.family == "conv") ? 2 : 1;
    r.flops = r.op_flops = c.flops * scale;
    r.op_masked_flops = c.masked_flops * scale;
    r.bytes = r.op_bytes = c.bytes * scale;
    r.tc_eligible = c.tc_eligible && (allow_tf32_ || c.dtype != "float32");
    r.params = r.estimated ? interned(cached->estimated_params_id, c.params + ",bwd=est")
                           : interned(cached->params_id, c.params);
    r.dtype = interned(cached->dtype_id, c.dtype);
    r.family = interned(cached->family_id, c.family);
    r.shapes = interned(cached->shapes_id, cached->shapes);
    r.comm_group = c.group;
  }

  // `op_id` is `op`'s string id; `args_ref` the compact form's id of `args` (-1: inline), by
  // which a repeated call is found without hashing its arguments' text.
  CachedCost& lookup(uint32_t op_id, std::string_view op, std::string_view args, int64_t args_ref) {
    if (args_ref >= 0) {
      CachedCost*& known = cost_by_ref_[{op_id, args_ref}];
      if (known == nullptr) known = &lookup(op_id, op, args, -1);
      return *known;
    }
    key_.assign(op);
    key_ += '\n';
    key_ += args;
    auto it = costs_.find(key_);
    if (it == costs_.end()) {
      models::OpArgs op_args = models::OpArgs::from_json(args);
      CachedCost c{models::op_cost(op, op_args), shapes_of(op_args)};
      it = costs_.emplace(key_, std::move(c)).first;
    }
    return it->second;
  }

  int8_t uses_tensor_cores(const ProfRecord& r) {
    if (r.long_name >= tc_by_long_name_.size()) tc_by_long_name_.resize(r.long_name + 1, -1);
    int8_t& tc = tc_by_long_name_[r.long_name];
    if (tc < 0) {
      tc = static_cast<int8_t>(
          rules_.uses_tensor_cores(strings_.get(r.long_name), strings_.get(r.name)) == 1 ? 1 : 0);
    }
    return tc;
  }

  bool allow_tf32_;
  Strings& strings_;
  std::unordered_map<std::string, CachedCost> costs_;  // op + '\n' + args -> cost
  std::unordered_map<uint32_t, CachedCost> compiled_;  // compiled_key -> its cost
  std::unordered_map<std::string, CachedCost> bound_;  // bound_cost's: (id, sizes) -> cost
  // compiled_ keys of kernels with symbolic sizes -> their objects, bound per call (bound_cost)
  std::unordered_map<uint32_t, std::string> symbolic_kernels_;
  struct OpArgsRef {
    uint32_t op;
    int64_t args_ref;
    bool operator==(const OpArgsRef&) const = default;
  };
  struct OpArgsRefHash {
    size_t operator()(const OpArgsRef& k) const {
      return std::hash<int64_t>()(k.args_ref * 1000003 ^ k.op);
    }
  };
  // (op string id, args id) -> its entry in costs_ (whose nodes do not move).
  std::unordered_map<OpArgsRef, CachedCost*, OpArgsRefHash> cost_by_ref_;
  std::string key_;
  const TensorCoreRules& rules_ = TensorCoreRules::builtin();
  std::vector<int8_t> tc_by_long_name_;  // long-name string id -> 1/0, -1 not judged yet
  ProblemTally overflow_, negative_;     // records of each models::CostProblem
  // Records a user model could not cost, per op: one warning each (models/user_models.h).
  std::map<std::string, ProblemTally> user_model_problems_;
};

// ---- after the last line ----------------------------------------------------------------------

// What links a CPU op record to the one it runs inside: parse names the parent by its op id,
// which is unique within a process.
struct CpuOp {
  int32_t record = 0;  // index in ReadResult::records
  int64_t pid = 0;
  int64_t id = 0;         // 0: the markers carry no op ids
  int64_t parent_id = 0;  // 0: at the top of a call tree
};

// Sets ProfRecord::parent of the CPU op records. After the whole input, not as records come: a
// parent may follow its child (parse orders records by start; equal starts keep database order).
void link_cpu_parents(const std::vector<CpuOp>& cpu_ops, std::vector<ProfRecord>& records) {
  struct Key {
    int64_t pid, id;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.id) ^ (std::hash<int64_t>()(k.pid) << 1);
    }
  };
  std::unordered_map<Key, int32_t, KeyHash> by_id;
  for (const CpuOp& op : cpu_ops) {
    if (op.id != 0) by_id[{op.pid, op.id}] = op.record;  // a repeated id: the last one wins
  }
  for (const CpuOp& op : cpu_ops) {
    if (op.parent_id == 0) continue;
    auto it = by_id.find({op.pid, op.parent_id});
    if (it != by_id.end()) records[op.record].parent = it->second;
  }
}

// A forward op whose backward is estimated from its own cost (no backward arguments: emit_nvtx,
// legacy PyProf) may have several backward nodes, each with kernels; the estimate is charged
// once (docs/prof.md §1, "Backward"):
// - a GEMM-like op's estimate (matmul, conv: its dgrad and wgrad) is the work of the nodes that
//   ran an op of its family (MmBackward's aten::mm for a linear). The kernels of its other
//   nodes (UnsafeViewBackward's clone, AddBackward0's bias sum) did none of it: they are left
//   unmodelled (their own cost is unknown without the backward ops' arguments), in the family
//   of the op they ran;
// - otherwise (a composite such as cross_entropy, whose NllLossBackward and LogSoftmaxBackward
//   each do part of the work, or nodes whose ops are not known) the estimate is split equally
//   between the nodes.
// Within a node, its kernels share the node's part by duration (assign_costs).
void charge_backward_estimates(ReadResult& result) {
  struct Node {
    int64_t instance;
    bool work;  // ran an op of the forward op's family
  };
  struct Forward {
    std::vector<Node> nodes;
    bool gemm_like = false;
  };
  std::unordered_map<int64_t, Forward> forwards;  // by the forward op's instance
  const uint32_t matmul = result.strings.intern("matmul"), conv = result.strings.intern("conv");
  for (const ProfRecord& r : result.records) {
    if (!r.estimated || !r.fwd_instance || !r.instance) continue;
    Forward& f = forwards[r.fwd_instance];
    f.gemm_like = f.gemm_like || r.family == matmul || r.family == conv;
    auto it = std::find_if(f.nodes.begin(), f.nodes.end(),
                           [&](const Node& n) { return n.instance == r.instance; });
    if (it == f.nodes.end()) it = f.nodes.insert(f.nodes.end(), Node{r.instance, false});
    it->work = it->work || r.bwd_op_family == r.family;
  }
  for (auto& [instance, f] : forwards) {
    const bool by_work = f.gemm_like && std::any_of(f.nodes.begin(), f.nodes.end(),
                                                    [](const Node& n) { return n.work; });
    if (!by_work) {
      for (Node& n : f.nodes) n.work = true;
    }
  }
  for (ProfRecord& r : result.records) {
    if (!r.estimated || !r.fwd_instance || !r.instance) continue;
    const Forward& f = forwards[r.fwd_instance];
    const auto work = static_cast<size_t>(
        std::count_if(f.nodes.begin(), f.nodes.end(), [](const Node& n) { return n.work; }));
    const bool mine = std::any_of(f.nodes.begin(), f.nodes.end(), [&](const Node& n) {
      return n.instance == r.instance && n.work;
    });
    if (!mine) {
      r.modeled = r.estimated = r.tc_eligible = false;
      r.flops = r.bytes = r.op_flops = r.op_bytes = r.op_masked_flops = 0;
      r.family = r.bwd_op_family;  // what it ran (a copy, a reduction), not the estimate's
      continue;
    }
    const double share = 1.0 / static_cast<double>(work);
    r.flops *= share;
    r.bytes *= share;
    r.op_flops *= share;
    r.op_bytes *= share;
    r.op_masked_flops *= share;
  }
}

}  // namespace

namespace {

// The records of a net.dict of `input_bytes` (-1: not a regular file), from its first records
// (`records` of them in `record_bytes`), for sizing the array up front: grown by doubling, a
// million records are copied twice over and every move touches fresh pages, a third of the
// read's main thread. Lines that are no records (args definitions, ranges) make this larger
// than the truth, which costs address space only; 0 when there is nothing to go by.
size_t expected_records(int64_t input_bytes, size_t records, size_t record_bytes) {
  if (input_bytes <= 0 || records == 0 || record_bytes == 0) return 0;
  const double per_byte = static_cast<double>(records) / static_cast<double>(record_bytes);
  // No record line is shorter than this, so that first records far longer than the rest do
  // not ask for more than the input could hold.
  constexpr int64_t kShortestRecordLine = 32;
  return static_cast<size_t>(
      std::min<double>(static_cast<double>(input_bytes) * per_byte * 1.02,
                       static_cast<double>(input_bytes / kShortestRecordLine)));
}

int64_t regular_file_size(std::FILE* in) {
  struct stat st;
  if (fstat(fileno(in), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return static_cast<int64_t>(st.st_size);
}

}  // namespace

bool read_dict(std::FILE* in, const ReadOptions& options, ReadResult& out, std::string& error) {
  const int64_t input_bytes = regular_file_size(in);
  size_t record_bytes = 0;  // of the record lines so far, for expected_records
  FieldReader reader(in);
  RecordCoster coster(options, out.strings);
  ArgsTable args_table;
  TimeChecker times;
  std::vector<CpuOp> cpu_ops;
  bool header_seen = false;
  // Records whose `step` names no step of the header's iterations: outside every step.
  ProblemTally bad_steps;
  bool iterations_ignored = false;  // the header's were malformed (warned): no record has a step
  while (Fields* line = reader.next_line()) {
    Fields& f = *line;
    out.lines = f.line;
    if (!f.object) {
      skip_line(out);
      continue;
    }
    if (f.header) {
      read_header(f, out);
      iterations_ignored = f.has_iterations && !f.iterations_problem.empty();
      header_seen = true;
      continue;
    }
    if (!header_seen) {
      error = "line " + std::to_string(out.lines) +
              ": no pyprof_dict header (is this the output of `pyprof parse`?)";
      return false;
    }
    if (f.kind == "args") {
      if (!args_table.define(f, error)) return false;
      continue;
    }
    // `pyprof parse --ranges` appends the spans of the trace's ranges (docs/formats.md §3.1):
    // not records, and not unreadable either.
    if (f.kind == "range") continue;
    if (f.kind == "compiled_kernel") {
      coster.define_compiled_kernel(f.name, f.compiled_graph, f.kernel);
      continue;
    }
    if (!args_table.resolve(f, error)) return false;
    // A sync or comm line's step, -1 when it names none of the header's.
    auto step_index = [&](int64_t step) {
      return step >= 0 && step < static_cast<int64_t>(out.iterations.steps.size())
                 ? static_cast<int32_t>(step)
                 : -1;
    };
    if (f.kind == "comm") {
      CommSpan c;
      c.start = f.start;
      c.duration = std::max<int64_t>(f.duration, 0);
      c.tid = f.tid;
      c.name = out.strings.intern(f.name);
      c.step = step_index(f.step);
      out.comm.push_back(c);
      continue;
    }
    if (f.kind == "mark") {
      Mark m;
      m.start = f.start;
      m.tid = f.tid;
      m.name = out.strings.intern(f.name);
      m.domain = out.strings.intern(f.domain);
      m.step = step_index(f.step);
      out.marks.push_back(m);
      continue;
    }
    if (f.kind == "sync") {
      SyncCall c;
      c.start = f.start;
      c.duration = std::max<int64_t>(f.duration, 0);
      c.tid = f.tid;
      c.name = out.strings.intern(f.name);
      c.op = out.strings.intern(f.op);
      c.step = step_index(f.step);
      out.syncs.push_back(c);
      continue;
    }
    ProfRecord r = make_record(f, out.records.size(), out.strings);
    times.check(f, r);
    if (f.step != Fields::kNoStep && !iterations_ignored) {
      if (f.step >= 0 && f.step < static_cast<int64_t>(out.iterations.steps.size())) {
        r.step = static_cast<int32_t>(f.step);
      } else {
        bad_steps.note(
            f.line, f.name,
            f.step == Fields::kBadStep ? "not a step index" : fmt::format("step {}", f.step));
      }
    }
    if (r.kind == Kind::kOp) {
      cpu_ops.push_back({static_cast<int32_t>(out.records.size()), f.pid, f.id, f.parent_id});
    }
    coster.cost(f, r);
    out.records.push_back(r);
    record_bytes += f.line_bytes;
    if (constexpr size_t kSizeAfter = 4096; out.records.size() == kSizeAfter) {
      try {
        out.records.reserve(expected_records(input_bytes, kSizeAfter, record_bytes));
      } catch (const std::bad_alloc&) {
        // The estimate was too much to ask for at once: the array grows as it goes instead.
      }
    }
  }
  out.lines = reader.lines();
  if (!reader.failure().empty()) {
    error = reader.line_too_long()
                ? fmt::format("line {}: {}", out.lines + 1, reader.failure())
                : fmt::format("{} after line {} of the input", reader.failure(), out.lines);
    return false;
  }
  link_cpu_parents(cpu_ops, out.records);
  coster.warn_about_problems(out);
  times.warn(out);
  if (bad_steps.records > 0) {
    out.warnings.push_back(fmt::format(
        "{} with a `step` that names no step of the header's {} iterations (first: line {}, {}: "
        "{}): read as outside every step",
        count_of(bad_steps.records, "record"), out.iterations.steps.size(), bad_steps.first_line,
        bad_steps.first_name, bad_steps.first_detail));
  }
  if (!header_seen) {
    error = out.lines == 0 ? "empty input (expected the output of `pyprof parse`)"
                           : "no pyprof_dict header (is this the output of `pyprof parse`?)";
    return false;
  }
  return true;
}

void assign_costs(ReadResult& result, const PeaksFile* peaks) {
  auto& records = result.records;
  if (!result.cpu_only) {
    charge_backward_estimates(result);
    // An op instance's cost is spread over its kernels by duration, so that the instance is
    // counted once and each kernel shows the rate of the op it belongs to. In a backward node
    // (the instance), each backward op's cost is spread over that op's kernels (cost_part).
    // Grouped by sorting the records' (instance, part) keys: a hash map of a million
    // instances cost more than the rest of the costing.
    struct Keyed {
      int64_t instance, part;
      int32_t record;
    };
    std::vector<Keyed> keyed;
    for (size_t i = 0; i < records.size(); ++i) {
      ProfRecord& r = records[i];
      if (!r.modeled) continue;
      // A record without a credible time keeps its cost but is out of the totals: the achieved
      // rate divides the counted FLOPs by the time they took.
      r.counted = !r.bad_time;
      if (r.instance != 0 && !r.compiled)
        keyed.push_back({r.instance, r.cost_part, static_cast<int32_t>(i)});
    }
    std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
      return a.instance != b.instance ? a.instance < b.instance
             : a.part != b.part       ? a.part < b.part
                                      : a.record < b.record;
    });
    for (size_t first = 0, last; first < keyed.size(); first = last) {
      int64_t duration = 0;
      for (last = first; last < keyed.size() && keyed[last].instance == keyed[first].instance &&
                         keyed[last].part == keyed[first].part;
           ++last) {
        duration += records[keyed[last].record].duration;
      }
      const auto count = static_cast<double>(last - first);
      for (size_t k = first; k < last; ++k) {
        ProfRecord& r = records[keyed[k].record];
        double share = duration > 0
                           ? static_cast<double>(r.duration) / static_cast<double>(duration)
                           : 1.0 / count;
        r.flops *= share;
        r.bytes *= share;
      }
    }
    flag_above_peak(result, peaks);
    return;
  }
  // CPU records: each op instance is a record; a call tree is counted at its outermost
  // modelled op (aten::linear's aten::addmm is not counted again).
  //
  // Except a dispatch wrapper: an op whose record holds a call of the same op on tensors of the
  // same shapes that costs differently, because their dtypes differ. That is what
  // torch.autocast records: aten::linear on the caller's fp32 weight holds the casts of its
  // inputs and aten::linear again on the bf16 copies. The inner call is the one that ran, so the
  // wrapper is not counted, and its casts and inner call are counted as what they are, each at
  // its own outermost modelled op. (A same-op child on other shapes, a part of the work, leaves
  // the outer op counted.)
  std::vector<char> is_wrapper(records.size(), 0);
  for (const ProfRecord& r : records) {
    if (!r.modeled || r.parent < 0) continue;
    const ProfRecord& parent = records[r.parent];
    if (parent.modeled && parent.cost_op == r.cost_op && parent.shapes == r.shapes &&
        (parent.dtype != r.dtype || parent.op_bytes != r.op_bytes)) {
      is_wrapper[r.parent] = 1;
    }
  }
  for (size_t i = 0; i < records.size(); ++i) {
    ProfRecord& r = records[i];
    if (!r.modeled) continue;
    bool inside_modelled = false;
    // The guard stops a cycle of parent links, which only a malformed input can hold.
    for (int32_t p = r.parent, guard = 0; p >= 0 && guard < 1000; ++guard) {
      const ProfRecord& parent = records[p];
      if (parent.modeled && !is_wrapper[p]) {
        inside_modelled = true;
        break;
      }
      p = parent.parent;
    }
    r.wrapper = is_wrapper[i] != 0;
    r.counted = !inside_modelled && !r.wrapper && !r.bad_time;
    if (!r.counted) {
      r.flops = 0;
      r.bytes = 0;
    }
  }
}

}  // namespace pyprof::prof
