#include "common/kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace pyprof {

namespace {

// A crafted name can make the demangler's time and output grow far beyond its input; real
// mangled kernel names stay below a few KiB.
constexpr size_t kMaxMangledBytes = 64 * 1024;

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$';
}

// Operator symbols, longest first so that "operator->" is not read as "operator-".
constexpr std::string_view kOperatorSymbols[] = {
    "<<=", ">>=", "->*", "<=>", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++",
    "--",  "+=",  "-=",  "*=",  "/=", "%=", "&=", "|=", "^=", "->", ",",  "<",  ">",
    "+",   "-",   "*",   "/",   "%",  "&",  "|",  "^",  "~",  "!",  "="};

// Length of the operator function name starting at `i` ("operator()", "operator <<"), or 0.
// Its symbols must not count as brackets: "operator<" opens nothing.
size_t operator_name_length(std::string_view s, size_t i) {
  constexpr std::string_view kOperator = "operator";
  if (s.compare(i, kOperator.size(), kOperator) != 0) return 0;
  if (i > 0 && is_ident_char(s[i - 1])) return 0;
  size_t j = i + kOperator.size();
  if (j < s.size() && is_ident_char(s[j])) return 0;  // an identifier such as "operator_kernel"
  size_t k = j;
  while (k < s.size() && s[k] == ' ') ++k;  // the NVIDIA demangler writes "operator ()"
  if (s.compare(k, 2, "()") == 0 || s.compare(k, 2, "[]") == 0) return k + 2 - i;
  for (std::string_view symbol : kOperatorSymbols) {
    if (s.compare(k, symbol.size(), symbol) == 0) return k + symbol.size() - i;
  }
  return j - i;  // "operator new", "operator bool": the rest reads as ordinary words
}

void erase_all(std::string& s, std::string_view what) {
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos)) {
    s.erase(pos, what.size());
  }
}

}  // namespace

std::string demangle(std::string_view mangled) {
  if (mangled.size() < 2 || mangled.substr(0, 2) != "_Z" || mangled.size() > kMaxMangledBytes ||
      mangled.find('\0') != std::string_view::npos) {
    return std::string(mangled);
  }
  std::string input(mangled);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !out) return input;
  return std::string(out.get());
}

// One scan at bracket depth 0. "::" and a space start a new name component (a space separates
// the return type); the first '<' after a component's identifier starts its template
// arguments; a '(' after an identifier is the parameter list, and ends the name unless the
// closing ')' is followed by "::" (a function-local entity: "f(int)::{lambda()#1}"). A bracket
// group at the very start of a component is part of it: "(anonymous namespace)", "<unnamed>",
// "{lambda()#1}". Brackets nest by kind, so a '>' inside "(...)" or "->" closes nothing.
std::string_view short_kernel_name(std::string_view s) {
  constexpr size_t npos = std::string_view::npos;
  std::string open;       // unclosed brackets, innermost last
  size_t counts[3] = {};  // of '(', '[', '{' in `open`
  auto slot = [](char c) { return c == '(' ? 0 : c == '[' ? 1 : 2; };
  auto open_count = [&](char c) { return counts[slot(c)]; };
  auto push = [&](char c) {
    open.push_back(c);
    if (c != '<') ++counts[slot(c)];
  };
  auto pop = [&]() {
    if (open.back() != '<') --counts[slot(open.back())];
    open.pop_back();
  };
  size_t comp = 0;          // start of the current component
  size_t ident_end = npos;  // where its template arguments start
  size_t params = npos;     // its parameter list's '('
  auto name_until = [&](size_t end) {
    std::string_view name = s.substr(comp, (ident_end != npos ? ident_end : end) - comp);
    return name.empty() ? s : name;
  };
  for (size_t i = 0; i < s.size();) {
    if (size_t n = operator_name_length(s, i)) {
      i += n;
      continue;
    }
    char c = s[i];
    if (open.empty() && c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      i += 2;
      comp = i;
      ident_end = npos;
      continue;
    }
    if (open.empty() && c == ' ') {
      comp = ++i;
      ident_end = npos;
      continue;
    }
    switch (c) {
      case '<':
      case '(':
      case '[':
      case '{':
        if (open.empty() && i > comp) {
          if (c == '(') {
            params = i;
          } else if (ident_end == npos) {
            ident_end = i;
          }
        }
        push(c);
        break;
      case '>':
        if (!open.empty() && open.back() == '<' && !(i > 0 && s[i - 1] == '-')) pop();
        break;
      case ')':
      case ']':
      case '}': {
        char opener = c == ')' ? '(' : c == ']' ? '[' : '{';
        // Pop up to the matching opener (dropping a '<' left open by a comparison). The count
        // keeps hostile input ("<<<<...))))") linear: a pop only starts when it will succeed.
        if (open_count(opener) == 0) break;
        while (open.back() != opener) pop();
        pop();
        break;
      }
      default:
        break;
    }
    ++i;
    if (params != npos && open.empty()) {
      if (s.compare(i, 2, "::") != 0) return name_until(params);
      params = npos;
    }
  }
  return name_until(params != npos ? params : s.size());
}

std::string legacy_short_kernel_name(std::string_view demangled) {
  std::string s(demangled.substr(0, demangled.find('<')));
  for (std::string_view drop : {"void ", "at::", "cuda::", "native::", "(anonymous namespace)::"}) {
    erase_all(s, drop);
  }
  return s.substr(0, s.find('('));
}

}  // namespace pyprof
