#include "models/flop_table.h"

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "models/has_model.h"

namespace pyprof::models {

namespace {

// The format's version (docs/formats.md §5): the header line is {"pyprof_flop_table":1}.
constexpr int64_t kFlopTableVersion = 1;
constexpr std::string_view kDefaultSource = "torch.utils.flop_counter";

std::string json_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += '?';
      continue;
    }
    out += c;
  }
  return out;
}

bool number_of(simdjson::dom::element e, double& value) {
  int64_t i = 0;
  uint64_t u = 0;
  if (e.get_int64().get(i) == simdjson::SUCCESS) {
    value = static_cast<double>(i);
  } else if (e.get_uint64().get(u) == simdjson::SUCCESS) {
    value = static_cast<double>(u);
  } else if (e.get_double().get(value) != simdjson::SUCCESS) {
    return false;
  }
  return std::isfinite(value);
}

std::unique_ptr<FlopTable>& installed() {
  static std::unique_ptr<FlopTable> table;
  return table;
}

}  // namespace

bool FlopTable::add_text(std::string_view text, const std::string& file, std::string& error) {
  simdjson::dom::parser parser;
  std::unordered_map<std::string, FlopTableEntry> added;
  bool header = false;
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    auto fail = [&](const std::string& problem) {
      error = file + ":" + std::to_string(line_no) + ": " + problem;
      return false;
    };
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    simdjson::dom::object object;
    if (parser.parse(line.data(), line.size()).get_object().get(object) != simdjson::SUCCESS) {
      return fail("not a JSON object (a FLOP table has one object per line, docs/formats.md §5)");
    }
    if (!header) {
      int64_t version = 0;
      if (object["pyprof_flop_table"].get_int64().get(version) != simdjson::SUCCESS) {
        return fail(
            "no {\"pyprof_flop_table\":1} header: not a FLOP table (pyprof prof --flop-registry "
            "writes them, docs/formats.md §5)");
      }
      if (version != kFlopTableVersion) {
        return fail("FLOP table version " + std::to_string(version) +
                    ": this pyprof reads version " + std::to_string(kFlopTableVersion));
      }
      header = true;
      continue;
    }
    std::string_view op, args, source = kDefaultSource;
    FlopTableEntry entry;
    bool has_op = false, has_args = false, has_flops = false;
    for (auto field : object) {
      const std::string_view key = field.key;
      if (key == "op") {
        has_op = field.value.get_string().get(op) == simdjson::SUCCESS && !op.empty();
        if (!has_op) return fail("`op` is no op name (a non-empty string)");
      } else if (key == "args") {
        has_args = field.value.get_string().get(args) == simdjson::SUCCESS;
        if (!has_args) return fail("`args` is no string (the record's args JSON as text)");
      } else if (key == "flops") {
        has_flops = number_of(field.value, entry.flops) && entry.flops >= 0;
        if (!has_flops) return fail("`flops` is no count (a finite number, 0 or more)");
      } else if (key == "out_bytes") {
        if (!number_of(field.value, entry.out_bytes) || entry.out_bytes < 0) {
          return fail("`out_bytes` is no count (a finite number, 0 or more)");
        }
      } else if (key == "source") {
        if (field.value.get_string().get(source) != simdjson::SUCCESS || source.empty()) {
          return fail("`source` is no name (a non-empty string)");
        }
      } else {
        return fail("unknown key '" + json_text(key) +
                    "' (keys: op, args, flops, out_bytes, source)");
      }
    }
    if (!has_op || !has_args || !has_flops) {
      return fail(std::string("an entry needs `op`, `args` and `flops`; it lacks ") +
                  (!has_op     ? "`op`"
                   : !has_args ? "`args`"
                               : "`flops`"));
    }
    entry.params = "registry=" + std::string(source);
    entry.where = file + ":" + std::to_string(line_no);
    std::string key(op);
    key += '\n';
    key += args;
    for (auto* map : {&entries_, &added}) {
      auto it = map->find(key);
      if (it != map->end() && it->second.flops != entry.flops) {
        return fail("op " + json_text(op) + ": the same call given other FLOPs at " +
                    it->second.where);
      }
    }
    added.try_emplace(std::move(key), std::move(entry));
  }
  if (!header) {
    error = file + ": empty: no {\"pyprof_flop_table\":1} header (docs/formats.md §5)";
    return false;
  }
  for (auto& [key, entry] : added) entries_.try_emplace(key, std::move(entry));
  return true;
}

bool FlopTable::add_file(const std::string& path, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    error = "cannot read FLOP table " + path + ": no such file";
    return false;
  }
  if (std::filesystem::is_directory(path, ec)) {
    error = "cannot read FLOP table " + path + ": a folder";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in || in.bad()) {
    error = "cannot read FLOP table " + path + ": " + std::strerror(errno);
    return false;
  }
  return add_text(text.str(), path, error);
}

std::vector<std::string> FlopTable::drop_modelled_ops() {
  std::set<std::string> ops;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const std::string_view op = std::string_view(it->first).substr(0, it->first.find('\n'));
    if (has_op_model(op)) {
      ops.emplace(op);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return {ops.begin(), ops.end()};
}

const FlopTableEntry* FlopTable::find(std::string_view op, std::string_view args) const {
  if (entries_.empty()) return nullptr;
  // One key buffer per thread: prof costs on one thread, tests may on several.
  thread_local std::string key;
  key.assign(op);
  key += '\n';
  key += args;
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

bool flop_table_cost(const FlopTableEntry& entry, const OpArgs& args, OpCost& cost) {
  cost.flops = entry.flops;
  cost.bytes = entry.out_bytes;
  for (const Tensor* t : args.tensors()) {
    cost.bytes += tensor_bytes(*t);
    if (cost.dtype.empty()) cost.dtype = canonical_dtype(t->dtype);
  }
  cost.params = entry.params;
  cost.tc_eligible = false;
  return true;
}

bool load_flop_tables(const std::vector<std::string>& files, std::vector<std::string>& notes,
                      std::string& error) {
  if (files.empty()) return true;
  FlopTable table;
  for (const std::string& path : files) {
    if (!table.add_file(path, error)) return false;
  }
  const std::vector<std::string> modelled = table.drop_modelled_ops();
  if (!modelled.empty()) {
    std::string list;
    for (const std::string& op : modelled) list += (list.empty() ? "" : ", ") + op;
    notes.push_back("--flop-table: entries of ops pyprof models ignored (pyprof's model wins): " +
                    list);
  }
  install_flop_table(std::move(table));
  return true;
}

void install_flop_table(FlopTable table) {
  installed() = table.size() == 0 ? nullptr : std::make_unique<FlopTable>(std::move(table));
}

const FlopTable* installed_flop_table() { return installed().get(); }

}  // namespace pyprof::models
