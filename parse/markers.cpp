#include "parse/markers.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <system_error>

#include "common/json_writer.h"

namespace pyprof::parse {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

constexpr std::string_view kEvaluateFunctionPrefix = "autograd::engine::evaluate_function: ";
constexpr std::string_view kAutogradNamespace = "torch::autograd::";
// Our own markers nest a few levels (args → tensor → shape); anything deeper is hostile input,
// and the validating walk below recurses once per level.
constexpr int kMaxJsonDepth = 256;
constexpr int kMaxLiteralDepth = 64;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_alpha(char c) { return is_lower(c) || (c >= 'A' && c <= 'Z'); }
bool is_ident_char(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void reset(Marker& m) {
  m.kind = MarkerKind::kUser;
  m.dialect = Dialect::kUser;
  m.name.clear();
  m.overload.clear();
  m.module_type.clear();
  m.legacy_mod.clear();
  m.stack.clear();
  m.args.clear();
  m.trace.clear();
  m.op_id = 0;
  m.seq = -1;
  m.tid = -1;
  m.fwd_tid = -1;
  m.args_dropped = 0;
  m.error.clear();
}

void add_error(Marker& out, std::string_view what, std::string_view detail = {}) {
  if (!out.error.empty()) out.error += "; ";
  out.error += what;
  out.error += detail;
}

void demote_to_user(std::string_view text, Marker& out) {
  reset(out);
  out.name.assign(text);
}

// `[a-z_][A-Za-z0-9_]*` namespaces, then `[A-Za-z_][A-Za-z0-9_.]*`: "aten::addmm",
// "c10d::allreduce_", "_C::rms_norm". Namespaces must start in lower case because other
// libraries' NVTX ranges look like C++ qualified names too (nvFuser's "Fusion::resetTvUses",
// "GpuLower::Lower::validateIr") while operator namespaces are lower case by convention.
// `max_namespaces`: registered operators have exactly one; where nothing else says the text came
// from torch, "fusion_executor::allocations::inferShape" must not pass for an op.
bool is_namespaced_op(std::string_view s,
                      size_t max_namespaces = std::numeric_limits<size_t>::max()) {
  size_t namespaces = 0;
  size_t i = 0;
  while (true) {
    const size_t start = i;
    if (i >= s.size()) return false;
    const char first = s[i];
    if (!is_alpha(first) && first != '_') return false;
    ++i;
    while (i < s.size() && (is_ident_char(s[i]) || s[i] == '.')) ++i;
    if (i == s.size()) return namespaces >= 1 && namespaces <= max_namespaces;
    if (s.compare(i, 2, "::") != 0) return false;
    // Only the last segment (the op name) may hold dots or start in upper case.
    if (!is_lower(first) && first != '_') return false;
    if (s.substr(start, i - start).find('.') != std::string_view::npos) return false;
    ++namespaces;
    i += 2;
  }
}

bool is_identifier(std::string_view s) {
  if (s.empty() || is_digit(s[0])) return false;
  return std::all_of(s.begin(), s.end(), is_ident_char);
}

// ---------------------------------------------------------------------------------------------
// Reused per-thread scratch: decode_marker runs millions of times, so neither the padded copy
// simdjson needs nor its parser may be allocated per message.

class PaddedBuffer {
 public:
  simdjson::padded_string_view load(std::string_view text) {
    const size_t needed = text.size() + simdjson::SIMDJSON_PADDING;
    if (needed > capacity_) {
      const size_t capacity = std::max({needed, capacity_ * 2, size_t{4096}});
      data_ = std::make_unique<char[]>(capacity);
      capacity_ = capacity;
    }
    if (!text.empty()) std::memcpy(data_.get(), text.data(), text.size());
    // simdjson reads (but ignores) the padding; zeroing keeps those reads defined.
    std::memset(data_.get() + text.size(), 0, simdjson::SIMDJSON_PADDING);
    return simdjson::padded_string_view(data_.get(), text.size(), capacity_);
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
};

struct DecoderState {
  PaddedBuffer padded;
  od::parser parser;
  std::string converted;  // a legacy marker as JSON
  std::string convert_error;
};

DecoderState& decoder_state() {
  thread_local DecoderState state;
  return state;
}

// ---------------------------------------------------------------------------------------------
// JSON string output shared by the Python-literal converter.

constexpr char kHex[] = "0123456789abcdef";

void append_escaped_code_point(std::string& out, uint32_t cp) {
  switch (cp) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    default:
      break;
  }
  if (cp < 0x20) {
    const char escape[6] = {'\\', 'u', '0', '0', kHex[cp >> 4], kHex[cp & 0xF]};
    out.append(escape, 6);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Appends raw bytes as JSON string content. NVTX text can be any bytes; JsonWriter replaces
// invalid UTF-8 by U+FFFD, since simdjson (and every other consumer) rejects it.
void append_escaped_bytes(std::string& out, std::string_view s) {
  JsonWriter::append_escaped(out, s, std::numeric_limits<size_t>::max());
}

// ---------------------------------------------------------------------------------------------
// Python literal → JSON. Hand-written because no JSON library reads repr() output; recursion is
// bounded by kMaxLiteralDepth and every loop advances through the input, so hostile text costs
// time linear in its length.

class LiteralConverter {
 public:
  LiteralConverter(std::string_view in, std::string& out) : in_(in), out_(out) {}

  bool convert(std::string& error) {
    skip_space();
    if (value(0)) {
      skip_space();
      if (pos_ == in_.size()) return true;
      fail("unexpected text after the literal");
    }
    error = why_;
    error += " at byte ";
    error += std::to_string(where_);
    return false;
  }

 private:
  bool fail(const char* why) {
    if (why_ == nullptr) {
      why_ = why;
      where_ = pos_;
    }
    return false;
  }
  bool at_end() const { return pos_ >= in_.size(); }
  char peek() const { return in_[pos_]; }  // only when !at_end()
  bool eat(char c) {
    if (!at_end() && in_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void skip_space() {
    while (!at_end() && (is_json_space(peek()) || peek() == '\f' || peek() == '\v')) ++pos_;
  }

  // `depth`: containers around this value.
  bool value(int depth) {
    if (at_end()) return fail("unexpected end of the literal");
    const char c = peek();
    switch (c) {
      case '{':
        return dict(depth + 1);
      case '[':
        return sequence(depth + 1);
      case '(':
        return tuple(depth + 1);
      case '\'':
      case '"':
        return string();
      case 'T':
        return keyword("True", "true");
      case 'F':
        return keyword("False", "false");
      case 'N':
        return keyword("None", "null");
      default:
        if (is_digit(c) || c == '-' || c == '+' || c == '.') return number();
        return fail("not a Python literal");
    }
  }

  bool check_depth(int depth) {
    return depth <= kMaxLiteralDepth || fail("nesting deeper than 64 levels");
  }

  bool keyword(std::string_view word, std::string_view json) {
    if (in_.compare(pos_, word.size(), word) != 0) return fail("not a Python literal");
    const size_t next = pos_ + word.size();
    if (next < in_.size() && is_ident_char(in_[next])) return fail("not a Python literal");
    pos_ = next;
    out_ += json;
    return true;
  }

  bool dict(int depth) {
    if (!check_depth(depth)) return false;
    ++pos_;
    out_ += '{';
    skip_space();
    if (eat('}')) {
      out_ += '}';
      return true;
    }
    while (true) {
      const size_t key_start = pos_;
      const size_t key_out = out_.size();
      if (!value(depth)) return false;
      if (out_[key_out] != '"') {
        // JSON keys are strings; a tuple or number key keeps its literal text.
        out_.resize(key_out);
        out_ += '"';
        append_escaped_bytes(out_, in_.substr(key_start, pos_ - key_start));
        out_ += '"';
      }
      skip_space();
      if (!eat(':')) return fail("expected ':' in a dict");
      out_ += ':';
      skip_space();
      if (!value(depth)) return false;
      skip_space();
      const bool comma = eat(',');
      skip_space();
      if (eat('}')) {
        out_ += '}';
        return true;
      }
      if (!comma) return fail("expected ',' or '}' in a dict");
      out_ += ',';
    }
  }

  // The elements of a list or tuple up to `close`, the opening bracket already written.
  bool elements(int depth, char close) {
    while (true) {
      if (!value(depth)) return false;
      skip_space();
      const bool comma = eat(',');
      skip_space();
      if (eat(close)) {
        out_ += ']';
        return true;
      }
      if (!comma) {
        return fail(close == ']' ? "expected ',' or ']' in a list" : "expected ',' or ')'");
      }
      out_ += ',';
    }
  }

  bool sequence(int depth) {
    if (!check_depth(depth)) return false;
    ++pos_;
    out_ += '[';
    skip_space();
    if (eat(']')) {
      out_ += ']';
      return true;
    }
    return elements(depth, ']');
  }

  bool tuple(int depth) {
    if (!check_depth(depth)) return false;
    ++pos_;
    skip_space();
    if (eat(')')) {
      out_ += "[]";
      return true;
    }
    const size_t open = out_.size();
    out_ += '[';
    if (!value(depth)) return false;
    skip_space();
    if (eat(')')) {
      out_.erase(open, 1);  // "(x)" is x in parentheses; only "(x,)" is a tuple
      return true;
    }
    if (!eat(',')) return fail("expected ',' or ')'");
    skip_space();
    if (eat(')')) {
      out_ += ']';
      return true;
    }
    out_ += ',';
    return elements(depth, ')');
  }

  bool hex_digits(size_t count, uint32_t& cp) {
    if (in_.size() - pos_ < count) return fail("truncated escape in a string");
    cp = 0;
    for (size_t k = 0; k < count; ++k) {
      const char c = in_[pos_ + k];
      uint32_t digit;
      if (is_digit(c)) {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return fail("invalid escape in a string");
      }
      cp = (cp << 4) | digit;
    }
    pos_ += count;
    return true;
  }

  // After "\u" of a high surrogate: Python keeps lone surrogates, which UTF-8 (and so JSON
  // text) cannot hold, but a pair stands for one character.
  uint32_t combine_surrogates(uint32_t high) {
    if (high > 0xDBFF || in_.size() - pos_ < 6 || in_[pos_] != '\\' || in_[pos_ + 1] != 'u') {
      return 0xFFFD;
    }
    const size_t saved = pos_;
    pos_ += 2;
    uint32_t low;
    const char* saved_why = why_;
    if (!hex_digits(4, low) || low < 0xDC00 || low > 0xDFFF) {
      why_ = saved_why;
      pos_ = saved;
      return 0xFFFD;
    }
    return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
  }

  // One escape sequence, pos_ on the character after the backslash.
  bool escape() {
    if (at_end()) return fail("unterminated string");
    const char e = in_[pos_++];
    uint32_t cp;
    switch (e) {
      case '\\':
      case '\'':
      case '"':
        append_escaped_code_point(out_, static_cast<unsigned char>(e));
        return true;
      case 'n':
        out_ += "\\n";
        return true;
      case 't':
        out_ += "\\t";
        return true;
      case 'r':
        out_ += "\\r";
        return true;
      case 'a':
        append_escaped_code_point(out_, 0x07);
        return true;
      case 'b':
        out_ += "\\b";
        return true;
      case 'f':
        out_ += "\\f";
        return true;
      case 'v':
        append_escaped_code_point(out_, 0x0B);
        return true;
      case '\n':  // line continuation
        return true;
      case '\r':
        eat('\n');
        return true;
      case 'x':
        if (!hex_digits(2, cp)) return false;
        append_escaped_code_point(out_, cp);
        return true;
      case 'u':
      case 'U':
        if (!hex_digits(e == 'u' ? 4 : 8, cp)) return false;
        if (cp > 0x10FFFF) return fail("escape past U+10FFFF in a string");
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = e == 'u' ? combine_surrogates(cp) : 0xFFFD;
        append_escaped_code_point(out_, cp);
        return true;
      case 'N':
        return fail("named escapes are not supported");
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      cp = e - '0';
      for (int k = 0; k < 2 && !at_end() && peek() >= '0' && peek() <= '7'; ++k) {
        cp = cp * 8 + (in_[pos_++] - '0');
      }
      append_escaped_code_point(out_, cp);
      return true;
    }
    // Python keeps an unknown escape as it is, backslash included.
    out_ += "\\\\";
    --pos_;
    return true;
  }

  bool string() {
    const char quote = in_[pos_++];
    out_ += '"';
    while (true) {
      const size_t run = pos_;
      while (!at_end() && peek() != quote && peek() != '\\') ++pos_;
      append_escaped_bytes(out_, in_.substr(run, pos_ - run));
      if (at_end()) return fail("unterminated string");
      if (peek() == quote) {
        ++pos_;
        out_ += '"';
        return true;
      }
      ++pos_;
      if (!escape()) return false;
    }
  }

  static std::string_view strip_leading_zeros(std::string_view digits) {
    size_t k = 0;
    while (k < digits.size() && digits[k] == '0') ++k;
    return digits.substr(k);
  }

  // Python ints and floats, rewritten in JSON's stricter grammar: no leading zeros or "+" sign,
  // digits on both sides of the point.
  bool number() {
    bool negative = false;
    if (peek() == '-' || peek() == '+') {
      negative = peek() == '-';
      ++pos_;
    }
    const auto scan_digits = [&] {
      const size_t start = pos_;
      while (!at_end() && is_digit(peek())) ++pos_;
      return in_.substr(start, pos_ - start);
    };
    const std::string_view int_digits = scan_digits();
    bool is_float = false;
    std::string_view frac_digits;
    const bool has_point = eat('.');
    if (has_point) {
      is_float = true;
      frac_digits = scan_digits();
    }
    if (int_digits.empty() && frac_digits.empty()) return fail("invalid number");
    std::string_view exp_digits;
    char exp_sign = 0;
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      is_float = true;
      ++pos_;
      if (!at_end() && (peek() == '-' || peek() == '+')) exp_sign = in_[pos_++];
      exp_digits = scan_digits();
      if (exp_digits.empty()) return fail("invalid number");
    }
    if (!at_end() && (is_ident_char(peek()) || peek() == '.')) return fail("invalid number");

    const std::string_view int_part = strip_leading_zeros(int_digits);
    if (!is_float) {
      if (int_part.empty()) {
        out_ += '0';
        return true;
      }
      int64_t value;
      const size_t mark = out_.size();
      if (negative) out_ += '-';
      out_ += int_part;
      const auto [ptr, ec] = std::from_chars(out_.data() + mark, out_.data() + out_.size(), value);
      if (ec == std::errc()) return true;
      // Past int64: JSON parsers disagree on big integers, so keep the digits as a string.
      out_.insert(mark, 1, '"');
      out_ += '"';
      return true;
    }

    const size_t mark = out_.size();
    if (negative) out_ += '-';
    out_ += int_part.empty() ? std::string_view("0") : int_part;
    if (has_point) {
      out_ += '.';
      out_ += frac_digits.empty() ? std::string_view("0") : frac_digits;
    }
    if (!exp_digits.empty()) {
      out_ += 'e';
      if (exp_sign != 0) out_ += exp_sign;
      // Python writes at least two exponent digits ("1e-05"); more leading zeros are dropped.
      std::string_view exp_part = strip_leading_zeros(exp_digits);
      if (exp_part.size() < 2) {
        exp_part = exp_digits.substr(exp_digits.size() - std::min<size_t>(2, exp_digits.size()));
      }
      out_ += exp_part;
    }
    double value;
    const auto [ptr, ec] = std::from_chars(out_.data() + mark, out_.data() + out_.size(), value);
    if (ec == std::errc() && ptr == out_.data() + out_.size()) return true;
    if (ec != std::errc::result_out_of_range) return fail("invalid number");
    // Python reads these as inf or 0.0; JSON numbers cannot be infinite, and PyProf writes
    // non-finite floats as strings. The sign of the leading digit's decimal exponent tells which.
    int64_t exponent = 0;
    for (const char d : exp_digits) {
      exponent = std::min<int64_t>(exponent * 10 + (d - '0'), 1 << 20);
    }
    if (exp_sign == '-') exponent = -exponent;
    const std::string_view frac_significant = strip_leading_zeros(frac_digits);
    exponent += !int_part.empty()
                    ? static_cast<int64_t>(int_part.size()) - 1
                    : -static_cast<int64_t>(frac_digits.size() - frac_significant.size()) - 1;
    out_.resize(mark);
    if (exponent > 0) {
      out_ += negative ? "\"-inf\"" : "\"inf\"";
    } else {
      out_ += negative ? "-0.0" : "0.0";
    }
    return true;
  }

  std::string_view in_;
  std::string& out_;
  size_t pos_ = 0;
  const char* why_ = nullptr;
  size_t where_ = 0;
};

// ---------------------------------------------------------------------------------------------
// pyprof JSON markers (docs/formats.md §1).

bool is_recoverable_type_error(error_code err) {
  return err == simdjson::INCORRECT_TYPE || err == simdjson::NUMBER_OUT_OF_RANGE;
}

// Walks a value to its end so that simdjson checks every token in it: On-Demand only checks what
// is read, and a skipped value could hide `tru` or `[1,]`, which must not reach `args`.
error_code validate_value(od::value& value, int depth) {
  if (depth > kMaxJsonDepth) return simdjson::DEPTH_ERROR;
  od::json_type type;
  error_code err = value.type().get(type);
  if (err) return err;
  switch (type) {
    case od::json_type::object: {
      od::object object;
      if ((err = value.get_object().get(object))) return err;
      for (auto field_result : object) {
        od::field field;
        std::string_view key;
        if ((err = std::move(field_result).get(field))) return err;
        if ((err = field.unescaped_key().get(key))) return err;
        if ((err = validate_value(field.value(), depth + 1))) return err;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array array;
      if ((err = value.get_array().get(array))) return err;
      for (auto element_result : array) {
        od::value element;
        if ((err = std::move(element_result).get(element))) return err;
        if ((err = validate_value(element, depth + 1))) return err;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::string: {
      // Stage 1 already checked UTF-8, quotes and control characters; only escapes are left,
      // and unescaping strings that have none would cost a copy each. The string must still be
      // consumed: the iterator checks what follows a value only when it moves past it itself.
      const std::string_view token = value.raw_json_token();
      if (std::memchr(token.data(), '\\', token.size()) == nullptr) {
        od::raw_json_string raw;
        return value.get_raw_json_string().get(raw);
      }
      std::string_view s;
      return value.get_string().get(s);
    }
    case od::json_type::number: {
      od::number n;
      return value.get_number().get(n);
    }
    case od::json_type::boolean: {
      bool b;
      return value.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null;
      if ((err = value.is_null().get(is_null))) return err;
      return is_null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::INCORRECT_TYPE;
}

void demote_invalid_pyprof(std::string_view text, std::string_view why, Marker& out) {
  demote_to_user(text, out);
  add_error(out, "invalid JSON in pyprof marker: ", why);
}

// The pyprof-domain marker, read with simdjson On-Demand: only the keys we know are looked at,
// and `args` is kept as the marker's own bytes (no re-serialization).
void decode_pyprof(std::string_view text, Marker& out) {
  DecoderState& state = decoder_state();
  od::document doc;
  od::object object;
  error_code err = state.parser.iterate(state.padded.load(text)).get(doc);
  if (!err) err = doc.get_object().get(object);
  if (err) {
    if (err == simdjson::INCORRECT_TYPE) {
      demote_to_user(text, out);
      add_error(out, "pyprof marker is not a JSON object");
    } else {
      demote_invalid_pyprof(text, simdjson::error_message(err), out);
    }
    return;
  }

  // String views point into the parser's buffer, valid until the next document.
  std::string_view op, module, type, scope, overload, stack;
  bool have_op = false, have_module = false;
  const auto read_string = [&](od::value& value, std::string_view key, std::string_view& dst,
                               bool* present) {
    const error_code e = value.get_string().get(dst);
    if (e == simdjson::SUCCESS) {
      if (present != nullptr) *present = true;
    } else if (e == simdjson::INCORRECT_TYPE) {
      add_error(out, key, " is not a string");
    } else {
      err = e;
    }
  };
  const auto read_int = [&](od::value& value, std::string_view key, int64_t& dst) {
    int64_t v;
    const error_code e = value.get_int64().get(v);
    if (e == simdjson::SUCCESS) {
      dst = v;
    } else if (is_recoverable_type_error(e)) {
      add_error(out, key, " is not a 64-bit integer");
    } else {
      err = e;
    }
  };

  for (auto field_result : object) {
    od::field field;
    std::string_view key;
    if ((err = std::move(field_result).get(field)) || (err = field.unescaped_key().get(key))) {
      break;
    }
    od::value& value = field.value();
    if (key == "op") {
      read_string(value, "\"op\"", op, &have_op);
    } else if (key == "id") {
      read_int(value, "\"id\"", out.op_id);
    } else if (key == "seq") {
      read_int(value, "\"seq\"", out.seq);
    } else if (key == "tid") {
      read_int(value, "\"tid\"", out.tid);
    } else if (key == "scope") {
      read_string(value, "\"scope\"", scope, nullptr);
    } else if (key == "args") {
      od::json_type args_type;
      if ((err = value.type().get(args_type))) break;
      if (args_type != od::json_type::object) {
        add_error(out, "\"args\" is not an object");
        continue;
      }
      const char* start = value.raw_json_token().data();
      if ((err = validate_value(value, 1))) break;
      const char* end;
      if ((err = value.current_location().get(end))) break;
      while (end > start && is_json_space(end[-1])) --end;
      out.args.assign(start, end - start);
    } else if (key == "fwd_tid") {
      read_int(value, "\"fwd_tid\"", out.fwd_tid);
    } else if (key == "overload") {
      read_string(value, "\"overload\"", overload, nullptr);
    } else if (key == "stack") {
      read_string(value, "\"stack\"", stack, nullptr);
    } else if (key == "args_dropped") {
      read_int(value, "\"args_dropped\"", out.args_dropped);
    } else if (key == "module") {
      read_string(value, "\"module\"", module, &have_module);
    } else if (key == "type") {
      read_string(value, "\"type\"", type, nullptr);
    } else if (key == "v") {
      int64_t version = 0;  // newer versions only add keys we may ignore
      read_int(value, "\"v\"", version);
    }
    if (err) break;
  }
  if (!err) {
    // A complete object followed by more text is not one JSON value.
    const char* trailing;
    if (doc.current_location().get(trailing) == simdjson::SUCCESS) err = simdjson::TAPE_ERROR;
  }
  if (err) {
    demote_invalid_pyprof(text, simdjson::error_message(err), out);
    return;
  }
  if (!have_op && !have_module) {
    const std::string errors = std::move(out.error);
    demote_to_user(text, out);
    add_error(out, "pyprof marker without \"op\" or \"module\"");
    if (!errors.empty()) add_error(out, errors);
    return;
  }

  out.dialect = Dialect::kPyprof;
  out.overload.assign(overload);
  out.stack.assign(stack);
  if (have_op) {
    out.name.assign(op);
    if (op.starts_with(kEvaluateFunctionPrefix) || scope == "user") {
      // The engine's per-node wrapper is a FUNCTION-scope RecordFunction, yet no op of its own.
      out.kind = MarkerKind::kUser;
    } else if (scope == "backward") {
      out.kind = MarkerKind::kBackwardNode;
    } else if (scope == "function") {
      out.kind = MarkerKind::kOp;
    } else if (is_backward_node_name(op)) {  // "torchscript", "other", or no scope at all
      out.kind = MarkerKind::kBackwardNode;
    } else {
      out.kind = is_namespaced_op(op) ? MarkerKind::kOp : MarkerKind::kUser;
    }
  } else {
    out.kind = MarkerKind::kModule;
    out.name.assign(module);
    out.module_type.assign(type);
  }
}

// ---------------------------------------------------------------------------------------------
// Legacy PyProf Python dicts.

bool looks_like_legacy_pyprof(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\n\r");
  if (start == std::string_view::npos) return false;
  const std::string_view s = text.substr(start);
  return s.starts_with("{'mod'") || s.starts_with("{'traceMarker'") || s.starts_with("{\"mod\"") ||
         s.starts_with("{\"traceMarker\"");
}

// Returns false when the text is no legacy marker (the caller tries the other dialects).
bool decode_legacy(std::string_view text, Marker& out) {
  DecoderState& state = decoder_state();
  const bool pyprof_like = looks_like_legacy_pyprof(text);
  if (!python_literal_to_json(text, state.converted, state.convert_error)) {
    if (!pyprof_like) return false;
    demote_to_user(text, out);
    add_error(out, "invalid legacy PyProf marker: ", state.convert_error);
    return true;
  }

  od::document doc;
  od::object object;
  error_code err = state.parser.iterate(state.padded.load(state.converted)).get(doc);
  if (!err) err = doc.get_object().get(object);
  if (err) return false;  // a list, a number: some other program's text

  std::string_view mod, op, str_repr, args;
  bool have_mod = false, have_op = false, have_str_repr = false, have_trace = false;
  for (auto field_result : object) {
    od::field field;
    std::string_view key;
    if ((err = std::move(field_result).get(field)) || (err = field.unescaped_key().get(key))) {
      break;
    }
    od::value& value = field.value();
    if (key == "traceMarker") {
      od::array frames;
      if (value.get_array().get(frames)) {
        add_error(out, "'traceMarker' is not a list");
        continue;
      }
      have_trace = true;
      for (auto frame_result : frames) {
        std::string_view frame;
        if ((err = std::move(frame_result).get_string().get(frame))) break;
        out.trace.emplace_back(frame);
      }
    } else if (key == "mod") {
      have_mod = value.get_string().get(mod) == simdjson::SUCCESS;
    } else if (key == "op") {
      have_op = value.get_string().get(op) == simdjson::SUCCESS;
    } else if (key == "strRepr") {
      have_str_repr = value.get_string().get(str_repr) == simdjson::SUCCESS;
    } else if (key == "args") {
      od::array list;
      if (value.get_array().get(list) || list.raw_json().get(args)) {
        add_error(out, "'args' is not a list");
        args = {};
      }
    }
    if (err) break;
  }
  // The converter wrote valid JSON, so an error here is a value of an unexpected type.
  if (err) {
    add_error(out, "unexpected value in legacy PyProf marker: ", simdjson::error_message(err));
  }

  if (have_trace) {
    out.kind = MarkerKind::kTrace;
  } else if (have_mod && have_op) {
    out.kind = MarkerKind::kOp;
    out.name.assign(op);
    out.legacy_mod.assign(mod);
    out.args.assign(args);
  } else if (have_mod && have_str_repr) {
    out.kind = MarkerKind::kModule;
    out.name.assign(mod);
    out.module_type.assign(str_repr);
  } else if (pyprof_like) {
    const std::string errors = std::move(out.error);
    demote_to_user(text, out);
    add_error(out, "legacy PyProf marker without 'op', 'strRepr' or 'traceMarker'");
    if (!errors.empty()) add_error(out, errors);
    return true;
  } else {
    return false;
  }
  out.dialect = Dialect::kLegacyPyprof;
  return true;
}

// ---------------------------------------------------------------------------------------------
// PyTorch emit_nvtx strings.

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

// Returns false when the text is no emit_nvtx string; `out` may then hold partial fields.
bool decode_emit_nvtx(std::string_view text, Marker& out) {
  const size_t fields_at = find_first_field(text);
  if (fields_at == std::string_view::npos) {
    if (is_backward_node_name(text)) {
      out.kind = MarkerKind::kBackwardNode;
    } else if (is_namespaced_op(text, /*max_namespaces=*/1)) {
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

void decode(std::string_view text, bool in_pyprof_domain, Marker& out) {
  reset(out);
  if (in_pyprof_domain) {
    decode_pyprof(text, out);
    return;
  }
  const size_t start = text.find_first_not_of(" \t\n\r");
  if (start != std::string_view::npos && text[start] == '{') {
    if (decode_legacy(text, out)) return;
    reset(out);
  }
  if (decode_emit_nvtx(text, out)) return;
  demote_to_user(text, out);
}

}  // namespace

void decode_marker(std::string_view text, bool in_pyprof_domain, Marker& out) {
  try {
    decode(text, in_pyprof_domain, out);
  } catch (...) {
    // Out of memory on a huge message, most likely: keep what can be kept, never throw.
    reset(out);
    try {
      out.name.assign(text);
      out.error.assign("could not decode marker (out of memory)");
    } catch (...) {
      out.name.clear();
    }
  }
}

bool is_backward_node_name(std::string_view name) {
  if (name.starts_with(kAutogradNamespace)) return name.size() > kAutogradNamespace.size();
  size_t end = name.size();
  while (end > 0 && is_digit(name[end - 1])) --end;
  constexpr std::string_view kBackward = "Backward";
  if (end <= kBackward.size() ||
      name.substr(end - kBackward.size(), kBackward.size()) != kBackward) {
    return false;
  }
  const std::string_view prefix = name.substr(0, end - kBackward.size());
  return std::all_of(prefix.begin(), prefix.end(), is_ident_char);
}

bool python_literal_to_json(std::string_view literal, std::string& json, std::string& error) {
  json.clear();
  error.clear();
  try {
    if (LiteralConverter(literal, json).convert(error)) return true;
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  }
  json.clear();
  return false;
}

}  // namespace pyprof::parse
