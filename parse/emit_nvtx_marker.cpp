// PyTorch's emit_nvtx strings (markers.h shows every era's form), scanned by hand: their fields
// are torch's own notation, which no JSON or Python-literal reader accepts.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>

#include "parse/ascii.h"
#include "parse/marker_dialects.h"

namespace pyprof::parse {
namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || is_digit(s[0])) return false;
  return std::all_of(s.begin(), s.end(), is_ident_char);
}

// The operator namespaces of PyTorch and its domain libraries: those torch 2.13 registers with
// its dispatcher (torch._C._dispatch_get_all_op_names(), test namespaces left out), TorchScript's
// "prim", and namespaces of earlier releases and of torchvision/torchaudio. A bare name (no
// ", seq = N" or other field) is an emit_nvtx op only in one of these: other libraries name
// their own NVTX ranges the same way (nvFuser's "executor_utils::bindInputs",
// "python_frontend::define_vector_fn"). A name with emit_nvtx's fields may be in any namespace,
// as custom operators (torch.library) are.
bool in_torch_namespace(std::string_view name) {
  static constexpr std::string_view kTorchNamespaces[] = {"_c10d_functional",
                                                          "_c10d_functional_autograd",
                                                          "_caffe2",
                                                          "_dtensor",
                                                          "_quantized",
                                                          "aten",
                                                          "c10d",
                                                          "inductor",
                                                          "inductor_prims",
                                                          "mkl",
                                                          "mkldnn",
                                                          "mkldnn_prepacked",
                                                          "onednn",
                                                          "prim",
                                                          "prims",
                                                          "profiler",
                                                          "quantization",
                                                          "quantized",
                                                          "quantized_decomposed",
                                                          "rngprims",
                                                          "sparse",
                                                          "static_runtime",
                                                          "symm_mem",
                                                          "torchaudio",
                                                          "torchvision",
                                                          "xnnpack"};
  const size_t colon = name.find("::");
  if (colon == std::string_view::npos) return false;
  return std::find(std::begin(kTorchNamespaces), std::end(kTorchNamespaces),
                   name.substr(0, colon)) != std::end(kTorchNamespaces);
}

size_t find_first_field(std::string_view text) {
  for (size_t pos = text.find(", "); pos != std::string_view::npos;
       pos = text.find(", ", pos + 1)) {
    const std::string_view rest = text.substr(pos + 2);
    if (rest.starts_with("seq") || rest.starts_with("stashed seq") || rest.starts_with("op_id") ||
        rest.starts_with("sizes = ") || rest.starts_with("input_op_ids = ")) {
      return pos;
    }
  }
  return std::string_view::npos;
}

struct Cursor {
  const char* p;
  const char* end;

  bool at_end() const { return p == end; }
  bool eat(std::string_view literal) {
    if (static_cast<size_t>(end - p) < literal.size() ||
        std::memcmp(p, literal.data(), literal.size()) != 0) {
      return false;
    }
    p += literal.size();
    return true;
  }
  bool eat(char c) {
    if (p == end || *p != c) return false;
    ++p;
    return true;
  }
  void skip_spaces() {
    while (p != end && *p == ' ') ++p;
  }
};

enum class NumberStatus { kOk, kOutOfRange, kMalformed };

NumberStatus parse_integer(Cursor& c, bool allow_negative, int64_t& value) {
  const char* start = c.p;
  const bool negative = allow_negative && c.eat('-');
  const char* digits = c.p;
  while (c.p != c.end && is_digit(*c.p)) ++c.p;
  const size_t count = static_cast<size_t>(c.p - digits);
  if (count == 0) return NumberStatus::kMalformed;
  if (count <= 18) {  // cannot overflow
    int64_t v = 0;
    for (const char* d = digits; d != c.p; ++d) v = v * 10 + (*d - '0');
    value = negative ? -v : v;
    return NumberStatus::kOk;
  }
  const auto [ptr, ec] = std::from_chars(start, c.p, value);
  if (ec == std::errc::result_out_of_range) return NumberStatus::kOutOfRange;
  if (ec != std::errc() || ptr != c.p) return NumberStatus::kMalformed;
  return NumberStatus::kOk;
}

// Gathers short pieces in a stack buffer: appending a few bytes at a time to a std::string
// costs more than parsing them. The caller flushes (a destructor must not throw).
class Appender {
 public:
  explicit Appender(std::string& out) : out_(out) {}
  void put(char c) {
    if (used_ == sizeof buf_) flush();
    buf_[used_++] = c;
  }
  void put(std::string_view s) {
    if (used_ + s.size() > sizeof buf_) flush();
    if (s.size() > sizeof buf_) {
      out_.append(s);
      return;
    }
    std::memcpy(buf_ + used_, s.data(), s.size());
    used_ += s.size();
  }
  template <typename Int>
  void put_integer(Int value) {
    if (used_ + 24 > sizeof buf_) flush();
    used_ = std::to_chars(buf_ + used_, buf_ + sizeof buf_, value).ptr - buf_;
  }
  void flush() {
    out_.append(buf_, used_);
    used_ = 0;
  }

 private:
  std::string& out_;
  char buf_[256];
  size_t used_ = 0;
};

// "[[32, 128], [], [5]]" → {"0":{"shape":[32,128]},"1":{"shape":[]},"2":{"shape":[5]}}.
// Returns false when the list is malformed; `absurd` is set for numbers past int64.
bool parse_sizes(Cursor& c, std::string& args, bool& absurd) {
  args.clear();
  Appender json(args);
  json.put('{');
  if (!c.eat('[')) return false;
  c.skip_spaces();
  if (!c.eat(']')) {
    for (uint64_t index = 0;; ++index) {
      c.skip_spaces();
      if (!c.eat('[')) return false;
      json.put(index > 0 ? std::string_view(",\"") : std::string_view("\""));
      json.put_integer(index);
      json.put("\":{\"shape\":[");
      c.skip_spaces();
      if (!c.eat(']')) {
        for (bool first = true;; first = false) {
          c.skip_spaces();
          int64_t dim;
          const NumberStatus status = parse_integer(c, true, dim);
          if (status == NumberStatus::kMalformed) return false;
          if (!first) json.put(',');
          if (status == NumberStatus::kOutOfRange) {
            absurd = true;
          } else {
            json.put_integer(dim);
          }
          c.skip_spaces();
          if (c.eat(']')) break;
          if (!c.eat(',')) return false;
        }
      }
      json.put("]}");
      c.skip_spaces();
      if (c.eat(']')) break;
      if (!c.eat(',')) return false;
    }
  }
  json.put('}');
  json.flush();
  return true;
}

}  // namespace

bool decode_emit_nvtx(std::string_view text, Marker& out) {
  const size_t fields_at = find_first_field(text);
  if (fields_at == std::string_view::npos) {
    if (is_backward_node_name(text)) {
      out.kind = MarkerKind::kBackwardNode;
    } else if (is_namespaced_op(text, /*max_namespaces=*/1) && in_torch_namespace(text)) {
      out.kind = MarkerKind::kOp;
    } else {
      return false;
    }
    out.dialect = Dialect::kEmitNvtx;
    out.name.assign(text);
    return true;
  }

  const std::string_view name = text.substr(0, fields_at);
  Cursor c{text.data() + fields_at, text.data() + text.size()};
  const char* malformed = nullptr;
  bool stashed = false, has_seq = false, has_op_id = false;
  std::string_view absurd_field;
  int64_t number;
  if (c.eat(", seq = ") || c.eat(", seq=")) {
    has_seq = true;
  } else if (c.eat(", stashed seq=") || c.eat(", stashed seq = ")) {
    has_seq = stashed = true;
  }
  if (has_seq) {
    switch (parse_integer(c, true, number)) {
      case NumberStatus::kOk:
        out.seq = number;
        break;
      case NumberStatus::kOutOfRange:
        absurd_field = "seq";
        break;
      case NumberStatus::kMalformed:
        malformed = "seq";
        break;
    }
  }
  if (malformed == nullptr && (c.eat(", op_id = ") || c.eat(", op_id="))) {
    has_op_id = true;
    switch (parse_integer(c, false, number)) {
      case NumberStatus::kOk:
        out.op_id = number;
        break;
      case NumberStatus::kOutOfRange:
        if (absurd_field.empty()) absurd_field = "op_id";
        break;
      case NumberStatus::kMalformed:
        malformed = "op_id";
        break;
    }
  }
  if (malformed == nullptr && c.eat(", sizes = ")) {
    bool absurd = false;
    if (!parse_sizes(c, out.args, absurd)) {
      malformed = "sizes";
    } else if (absurd) {
      out.args.clear();
      if (absurd_field.empty()) absurd_field = "sizes";
    }
  }
  if (malformed == nullptr && c.eat(", input_op_ids = ")) {
    // Producer ids of the inputs; parse has no use for them, so only the brackets are checked.
    if (c.at_end() || *c.p != '[' || c.end[-1] != ']') malformed = "input_op_ids";
    c.p = c.end;
  }
  if (malformed == nullptr && !c.at_end()) malformed = "text after the fields";

  const bool node_name = is_backward_node_name(name);
  const bool op_name = is_namespaced_op(name);
  if (malformed != nullptr) {
    // A label that merely contains ", seq" is a user range; a known op whose field list is
    // broken (cut by a length limit, say) is still that op.
    if (!node_name && !op_name) return false;
    out.args.clear();
    add_error(out, "malformed emit_nvtx field: ", malformed);
  }
  if (!absurd_field.empty()) {
    add_error(out, "number out of range in emit_nvtx field: ", absurd_field);
  }

  out.dialect = Dialect::kEmitNvtx;
  if (name.empty()) {
    // Legacy torch dropped the name of ops without a sequence number when it wrote their sizes.
    out.kind = stashed ? MarkerKind::kBackwardNode : MarkerKind::kOp;
    out.name.assign("<unnamed>");
    return true;
  }
  out.name.assign(name);
  if (stashed || node_name) {
    out.kind = MarkerKind::kBackwardNode;
  } else if (name.starts_with(kEvaluateFunctionPrefix)) {
    out.kind = MarkerKind::kUser;
  } else if (op_name || ((has_seq || has_op_id) && is_identifier(name))) {
    out.kind = MarkerKind::kOp;  // 1.0-era names have no namespace
  } else {
    out.kind = MarkerKind::kUser;  // record_function labels: "## forward ##, op_id = 3"
  }
  return true;
}

}  // namespace pyprof::parse
