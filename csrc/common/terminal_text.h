// Text from a trace on its way to a terminal. Markers, kernel names and metadata are whatever
// bytes the profiled program or another tool wrote: invalid UTF-8 garbles the summary, and
// control characters (ESC, BEL, the C1 CSI) are commands to the terminal. Everything parse and
// prof print to standard error that came from a trace (parse's database, prof's net.dict) goes
// through terminal_safe(); their standard output (records, tables) is data and left as it is.
#pragma once

#include <string>
#include <string_view>

namespace pyprof {

// `text` with valid UTF-8 kept as it is, each byte of invalid UTF-8 and each C0 control
// character (newline and tab included: messages are one line) and DEL written as \xNN, and C1
// control characters (U+0080..U+009F) as \uNNNN.
std::string terminal_safe(std::string_view text);

}  // namespace pyprof
