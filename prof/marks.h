// The program's instantaneous markers (pyprof.mark("..."), nvtxMark; net.dict `"kind":"mark"`
// lines, docs/formats.md §3): report `marks`, one row per mark in time order.
#pragma once

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

// Every mark, selected iterations or not (a mark says when something happened; it has no time
// to leave out): its text, NVTX domain, time, thread and the step it fell in.
ReportTable marks_report(const ReadResult& data);

}  // namespace pyprof::prof
