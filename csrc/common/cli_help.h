// `--help` of the C++ tools wrapped to the terminal: CLI11 (2.1) prints each option's text on
// one line however long (one `pyprof prof --help` line was 478 characters). Every tool sets
//   app.formatter(std::make_shared<pyprof::WrappingFormatter>());
// Width: the terminal's when standard output is one, else $COLUMNS, else 80 (what a pipe, a
// pager or a test reads). Header-only, like CLI11.
#pragma once

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <string_view>

namespace pyprof {

// The width of the terminal standard output is, when `to_terminal` and it is one (40 columns
// or more); else $COLUMNS (40 to 9999); else `fallback`. prof's and diff's text reports fit it
// too (fallback 120).
inline size_t terminal_columns(bool to_terminal, size_t fallback) {
  constexpr size_t kNarrowest = 40;
  winsize ws{};
  if (to_terminal && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
      ws.ws_col >= kNarrowest) {
    return ws.ws_col;
  }
  if (const char* columns = std::getenv("COLUMNS")) {
    const long n = std::strtol(columns, nullptr, 10);
    if (n >= static_cast<long>(kNarrowest) && n < 10000) return static_cast<size_t>(n);
  }
  return fallback;
}

inline size_t help_width() { return terminal_columns(true, 80); }

// `text` broken at spaces into lines of at most `width` columns; its first line continues a line
// already `column` wide, the others start with `indent` spaces. A '\n' in `text` starts a new
// line (indented); a word longer than a line stays whole. No trailing newline.
inline std::string wrap_words(std::string_view text, size_t width, size_t indent, size_t column) {
  std::string out;
  size_t at = column;
  bool line_has_word = column > indent;
  size_t i = 0;
  while (i <= text.size()) {
    if (i == text.size()) break;
    if (text[i] == '\n') {
      out += '\n';
      out.append(indent, ' ');
      at = indent;
      line_has_word = false;
      ++i;
      continue;
    }
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    const std::string_view word = text.substr(i, end - i);
    if (line_has_word && at + 1 + word.size() > width) {
      out += '\n';
      out.append(indent, ' ');
      at = indent;
      line_has_word = false;
    }
    if (line_has_word) {
      out += ' ';
      ++at;
    }
    out += word;
    at += word.size();
    line_has_word = true;
    i = end;
  }
  return out;
}

class WrappingFormatter : public CLI::Formatter {
 public:
  WrappingFormatter() : width_(help_width()) {
    // Option names in a column a third of the width (30 on 80 columns), their text beside it.
    column_width(std::max<size_t>(20, std::min<size_t>(30, width_ / 3)));
  }

  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    const size_t column = get_column_width();
    std::string name = "  " + make_option_name(opt, is_positional) + make_option_opts(opt);
    const std::string desc = make_option_desc(opt);
    std::string out = name;
    if (!desc.empty()) {
      if (name.size() + 1 > column) {
        out += '\n';
        out.append(column, ' ');
      } else {
        out.append(column - name.size(), ' ');
      }
      out += wrap_words(desc, width_, column, column);
    }
    return out + "\n";
  }

  std::string make_description(const CLI::App* app) const override {
    return wrapped(CLI::Formatter::make_description(app));
  }

  std::string make_footer(const CLI::App* app) const override {
    return wrapped(CLI::Formatter::make_footer(app));
  }

 private:
  // A paragraph's text (CLI11 ends it with a newline) wrapped to the width, newline kept.
  std::string wrapped(std::string text) const {
    size_t newlines = 0;
    while (!text.empty() && text.back() == '\n') {
      text.pop_back();
      ++newlines;
    }
    if (text.empty()) return std::string(newlines, '\n');
    return wrap_words(text, width_, 0, 0) + std::string(newlines, '\n');
  }

  size_t width_;
};

}  // namespace pyprof
