#include "common/dtypes.h"

#include "common/json_writer.h"

namespace pyprof {

std::string dtype_table_json_lines() {
  std::string out;
  for (const DtypeInfo& d : kDtypes) {
    {
      JsonWriter w(out);
      w.begin_object();
      w.key("name");
      w.string(d.name);
      w.key("size");
      w.integer(d.size);
      w.key("scalar_type");
      w.integer(d.scalar_type);
      w.key("aten");
      w.string(d.aten);
      w.key("inductor");
      w.string(d.inductor);
      w.key("short");
      w.string(d.short_name);
      w.key("tensor_cores");
      w.boolean(d.tensor_cores);
      for (auto [key, table] :
           {std::pair{"cpp_types", std::span<const DtypeSpelling>(kCppTypeNames)},
            std::pair{"legacy", std::span<const DtypeSpelling>(kLegacyDtypeNames)}}) {
        w.key(key);
        w.begin_array();
        for (const DtypeSpelling& s : table) {
          if (s.name == d.name) w.string(s.spelling);
        }
        w.end_array();
      }
      w.end_object();
    }
    out += '\n';
  }
  return out;
}

}  // namespace pyprof
