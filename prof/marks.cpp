#include "prof/marks.h"

#include <string>
#include <vector>

namespace pyprof::prof {

ReportTable marks_report(const ReadResult& data) {
  ReportTable t;
  t.title = data.marks.empty() ? "marks (none: the program called no pyprof.mark)" : "marks";
  column(t, "Mark", Unit::kText, Keep::kAlways);
  column(t, "Domain", Unit::kText, Keep::kMore);
  column(t, "Start(ns)", Unit::kTime, Keep::kAlways);
  column(t, "Thread", Unit::kId, Keep::kMain);
  column(t, "Step", Unit::kId, Keep::kMain);
  for (const Mark& m : data.marks) {
    std::string domain(data.strings.get(m.domain));
    t.rows.push_back({std::string(data.strings.get(m.name)), domain.empty() ? "-" : domain,
                      std::to_string(m.start), m.tid >= 0 ? std::to_string(m.tid) : "-",
                      m.step >= 0 ? std::to_string(m.step) : "-"});
  }
  return t;
}

}  // namespace pyprof::prof
