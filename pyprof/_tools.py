"""What pyprof's Python fronts share: where the C++ tools are and how they run, what each tool's
options are (read from the tool itself), the one test of "is this a net.dict?", how an input is
classified, and parsing an input that is not a net.dict into a temporary one.

Every front (pyprof/cli.py, parquet.py, rank_dataset.py, frames.py, report.py) imports this
module; it imports only _files and _signals, so the fronts' imports form no circle
(tests/test_fronts.py checks the graph).
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
import subprocess
import sys

from pyprof import _files, _signals

PKG_DIR = os.path.dirname(os.path.abspath(__file__))


# ---- the C++ tools ------------------------------------------------------------------------

def tool_path(name: str) -> str:
    """Path of one of the package's C++ executables (installed under pyprof/bin)."""
    return os.path.join(PKG_DIR, "bin", name)


def collector_path() -> str:
    """Path of the NVTX injection library that `pyprof profile` loads into the program."""
    return os.path.join(PKG_DIR, "lib", "libpyprof_collect.so")


def missing_tool(path: str) -> str | None:
    """Why the C++ executable at `path` cannot run (None when it can): one message for every
    front that runs the tools."""
    if os.access(path, os.X_OK):
        return None
    return (f"{path} is missing: the C++ part of pyprof is not built "
            "(run `pip install --no-build-isolation .`)")


def first_missing(*names: str) -> str | None:
    """missing_tool()'s message for the first of the tools `names` that cannot run, or None."""
    for name in names:
        if why := missing_tool(tool_path(name)):
            return why
    return None


def flush_standard_streams() -> None:
    """Flushes standard output and error before a child writes to them; a closed one
    (`pyprof prof net.dict >&-`: Python makes it None) is left to the child to report."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def exec_tool(name: str, args: list[str]) -> int:
    """Replaces this process with the tool `name` (its messages say `pyprof COMMAND`); returns 1
    after saying why when it is not built."""
    path = tool_path(name)
    if why := missing_tool(path):
        print(f"pyprof: error: {why}", file=sys.stderr)
        return 1
    flush_standard_streams()
    os.execv(path, [f"pyprof {name.removeprefix('pyprof-')}"] + args)
    return 1  # not reached


def exit_status(returncode: int, command: str, tool: str) -> int:
    """A child's status as this command's: a tool ended by signal N is said and gives 128 + N,
    as a shell would."""
    if returncode < 0:
        print(f"pyprof {command}: error: {tool} was killed by signal {-returncode}",
              file=sys.stderr)
        return 128 - returncode
    return returncode


def run_tool(name: str, args: list[str], command: str) -> int:
    """Runs the tool `name` as a child (its output and messages go where this process's go),
    told of an ending signal (pyprof/_signals.py); returns its status as exit_status() does."""
    path = tool_path(name)
    if why := missing_tool(path):
        print(f"pyprof: error: {why}", file=sys.stderr)
        return 1
    flush_standard_streams()
    return exit_status(_signals.run([path, *args]).returncode, command, name)


class ProfError(RuntimeError):
    """A pyprof tool (pyprof-prof, pyprof-parse) failed; the message is the tool's own."""

    def __init__(self, message: str, returncode: int, command: list[str]):
        super().__init__(message)
        self.returncode = returncode
        self.command = command


def run_checked(tool: str, args: list[str]) -> str:
    """Runs one of pyprof's executables; returns its standard error, or raises ProfError with
    it when the tool fails."""
    path = tool_path(tool)
    if why := missing_tool(path):
        raise ProfError(why, 1, [path, *args])
    command = [path, *args]
    res = _signals.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    err = res.stderr.decode("utf-8", "replace")
    if res.returncode != 0:
        if res.returncode < 0:
            message = f"{tool} was killed by signal {-res.returncode}"
            if err.strip():
                message += ": " + err.strip()
        else:
            message = err.strip() or f"{tool} failed with exit status {res.returncode}"
        raise ProfError(message, res.returncode, command)
    return err


# ---- each tool's options, from the tool ---------------------------------------------------

class ToolOptions:
    """A C++ tool's options as its hidden `--list-options` prints them
    (csrc/common/cli_options.h): which take a value, and each one's default."""

    def __init__(self, listed: dict):
        self.tool: str = listed["tool"]
        self.value_options: set[str] = set()  # names that take a value: -o, --output, ...
        self.flags: set[str] = set()
        self.canonical: dict[str, str] = {}   # every name -> its long name (or its only one)
        self.defaults: dict[str, str] = {}    # long name -> default text
        for option in listed["options"]:
            if option["positional"]:
                continue
            names = option["names"]
            longest = max(names, key=len)
            for name in names:
                self.canonical[name] = longest
                (self.value_options if option["takes_value"] else self.flags).add(name)
            self.defaults[longest] = option.get("default", "")

    def takes_value(self, name: str) -> bool:
        return name in self.value_options


class OptionsUnavailable(Exception):
    """A tool did not list its options (not built, or an older build without --list-options)."""


@functools.cache
def tool_options(tool: str) -> ToolOptions:
    """The options of the C++ tool `tool` (pyprof-prof, ...), read once per process."""
    path = tool_path(tool)
    if why := missing_tool(path):
        raise OptionsUnavailable(why)
    res = _signals.run([path, "--list-options"], capture_output=True, stdin=subprocess.DEVNULL)
    try:
        if res.returncode != 0:
            raise ValueError(res.stderr.decode("utf-8", "replace").strip())
        return ToolOptions(json.loads(res.stdout))
    except (ValueError, KeyError, TypeError) as exc:
        raise OptionsUnavailable(f"{path} --list-options did not list its options ({exc}): "
                                 "rebuild pyprof (pip install --no-build-isolation .)") from None


class Arguments:
    """A command line split as the tool's CLI11 parser splits it: `inputs` are the positions of
    the words that are neither an option nor an option's value; `values` maps an option's long
    name to its (last) value; `spans` are (start, end, long name) of each option and its value.
    An option the tool does not know is taken for a flag (the tool names it). `stop_at_input`:
    the first input ends the options (a launcher's command): `command_at` is its position."""

    def __init__(self, options: ToolOptions, args: list[str], extra_values: dict | None = None,
                 stop_at_input: bool = False):
        self.args = list(args)
        self.inputs: list[int] = []
        self.values: dict[str, str] = {}
        self.spans: list[tuple[int, int, str]] = []
        self.command_at: int | None = None
        self.missing_value: str | None = None  # the first option given without its value
        extra_values = extra_values or {}  # a front's own value options: name -> long name
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                self.inputs += range(i + 1, len(args))
                self.command_at = i + 1 if i + 1 < len(args) else None
                self.spans.append((i, i + 1, "--"))
                break
            name, value, used = self._match(options, extra_values, arg,
                                            args[i + 1] if i + 1 < len(args) else None)
            if name is not None:
                if value is not None:
                    self.values[name] = value
                elif self.missing_value is None:
                    self.missing_value = arg
                self.spans.append((i, i + used, name))
            elif arg.startswith("-") and arg != "-":
                self.spans.append((i, i + 1, options.canonical.get(arg, arg)))
            else:
                if stop_at_input:
                    self.command_at = i
                    self.inputs += range(i, len(args))
                    break
                self.inputs.append(i)
            i += used

    @staticmethod
    def _match(options: ToolOptions, extra: dict, arg: str, following: str | None):
        """(long name, value, words used) for an option that takes a value, else (None, None,
        1). `-o FILE`, `-oFILE`, `--output FILE` and `--output=FILE`, as CLI11 reads them."""
        def long_name(name):
            return extra.get(name) or options.canonical[name]

        if arg in extra or options.takes_value(arg):
            return long_name(arg), following, 2 if following is not None else 1
        if arg.startswith("--") and "=" in arg:
            name, _, value = arg.partition("=")
            if name in extra or options.takes_value(name):
                return long_name(name), value, 1
        elif arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
            name = arg[:2]
            if name in extra or options.takes_value(name):
                return long_name(name), arg[2:], 1
        return None, None, 1

    def input_paths(self) -> list[str]:
        return [self.args[i] for i in self.inputs]

    def without(self, *names: str, replace: dict[int, str] | None = None) -> list[str]:
        """The arguments less the options `names` (long names) and their values; the word at
        each position in `replace` replaced (an input by its parsed net.dict)."""
        dropped = {j for start, end, name in self.spans if name in names
                   for j in range(start, end)}
        replace = replace or {}
        return [replace.get(j, a) for j, a in enumerate(self.args) if j not in dropped]

    def has(self, name: str) -> bool:
        return any(span_name == name for _, _, span_name in self.spans)


def split_arguments(tool: str, args: list[str], extra_values: dict | None = None,
                    stop_at_input: bool = False) -> Arguments:
    """`args` of the tool `tool` split by its own option list (tool_options())."""
    return Arguments(tool_options(tool), args, extra_values, stop_at_input)


# ---- net.dicts and other inputs -------------------------------------------------------------

# The first line of every net.dict is its header object, whose first key is this
# (docs/formats.md §3; parse/record_writer.cpp writes it).
DICT_HEADER_KEY = "pyprof_dict"
_HEADER_START = re.compile(rb'\s*\{\s*"' + DICT_HEADER_KEY.encode() + rb'"\s*:')
_BOM = b"\xef\xbb\xbf"


def starts_like_dict(head: bytes) -> bool:
    """Whether a file's first bytes begin a net.dict header (a UTF-8 byte order mark and blank
    space before it allowed)."""
    return _HEADER_START.match(head.removeprefix(_BOM)) is not None


class NotADict(Exception):
    """A file whose first line is not a net.dict header; the message says why."""


def read_dict_header(path: str, max_bytes: int) -> dict:
    """A net.dict's header line as a dict. OSError when the file cannot be read; NotADict
    when its first line (read up to `max_bytes`) is not a header."""
    with open(path, "rb") as f:
        line = f.readline(max_bytes + 1)
    if len(line) > max_bytes:
        size = f"{max_bytes >> 20} MiB" if max_bytes >= 1 << 20 else f"{max_bytes} bytes"
        raise NotADict(f"{path}: the first line is longer than {size}: not a net.dict header")
    header = None
    if starts_like_dict(line):
        try:
            header = json.loads(line.removeprefix(_BOM))
        except (UnicodeDecodeError, ValueError):
            pass
    if not isinstance(header, dict) or DICT_HEADER_KEY not in header:
        raise NotADict(f"{path}: the first line is not a net.dict header (what `pyprof "
                       "parse` writes)")
    return header


# What an input is, for a front that parses what is not a net.dict:
MISSING = "missing"    # nothing at the path (the tool reading it says so)
FOLDER = "folder"      # a folder: the tools expand it (a job's per-rank net.dicts)
STREAM = "stream"      # a FIFO, a device or standard input: read once, by the net.dict's tool,
                       # never opened here (that would wait for a writer, or consume it)
DICT = "dict"          # a regular file that starts with a net.dict header
OTHER = "other"        # any other file: a database or trace for pyprof parse


def input_kind(path: str) -> str:
    """What `path` is (MISSING, FOLDER, STREAM, DICT or OTHER): the one decision of every front
    that takes "a net.dict or anything parse reads"."""
    if path == "-":
        return STREAM
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return MISSING
    if stat.S_ISDIR(mode):
        return FOLDER
    if not stat.S_ISREG(mode):
        return STREAM
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return OTHER  # pyprof parse names the problem
    return DICT if starts_like_dict(head) else OTHER


def is_net_dict(path: str) -> bool:
    """True when `path` is a regular file that starts like parse's output (docs/formats.md
    §3)."""
    return input_kind(path) == DICT


def parse_into(source: str, dict_path: str, command: str, ranges: bool = False) -> int:
    """Parses `source` (a database or trace) into the net.dict `dict_path` for the front
    `command` (`pyprof prof`, `export`, `diff`): parse's warnings are passed on, each naming
    `source`; on failure its messages are, and the front's own line; returns parse's status (0:
    parsed; 2 usage, else 1)."""
    if why := missing_tool(tool_path("pyprof-parse")):
        print(f"pyprof: error: {why}", file=sys.stderr)
        return 1
    args = [tool_path("pyprof-parse"), source, "-o", dict_path] + (["--ranges"] if ranges else [])
    res = _signals.run(args, capture_output=True, stdin=subprocess.DEVNULL)
    err = res.stderr.decode("utf-8", "replace")
    flush_standard_streams()
    if res.returncode != 0:
        sys.stderr.write(err)
        why = (f"killed by signal {-res.returncode}" if res.returncode < 0 else
               "pyprof parse could not read it (above)")
        print(f"pyprof {command}: error: {source}: {why}", file=sys.stderr)
        return 2 if res.returncode == 2 else 1
    for line in parse_warnings(err):
        print(f"pyprof {command}: warning: {source}: {line}", file=sys.stderr)
    return 0


_WARNING = re.compile(r"^\s*(?:pyprof[ -]\w+: )?warning: ")


def parse_warnings(stderr: str) -> list[str]:
    """parse's warnings among its messages (its summary's `  warning: ...` lines, each with the
    examples indented below it, and its own `pyprof parse: warning:` lines): each warning's
    text, its examples on lines of their own."""
    warnings: list[str] = []
    in_warning = False
    for line in stderr.splitlines():
        if _WARNING.match(line):
            warnings.append(_WARNING.sub("", line).strip())
            in_warning = True
        elif in_warning and line.startswith("    "):
            warnings[-1] += f"\n    {line.strip()}"
        else:
            in_warning = False
    return warnings


def check_output_not_input(output: str | None, inputs: list[str | None]) -> None:
    """_files.FileError when `output` is one of `inputs`: a front that hands its tool temporary
    net.dicts protects the user's inputs itself."""
    if output:
        _files.check_not_an_input(output, inputs)


# ---- a front's run --------------------------------------------------------------------------

def run_front(command: str, body) -> int:
    """Runs `body()` (a Python-run command: `pyprof COMMAND`) so that it ends on a signal
    without a traceback or a file left behind (pyprof/_signals.py), says a refused file
    (_files.FileError) or a tool that cannot list its options (OptionsUnavailable) in one line,
    and ends quietly when standard output's reader went away; returns its exit status. The
    commands exec'ed to a C++ tool get their handlers reset by exec."""
    _signals.end_on_signals()
    try:
        return body()
    except KeyboardInterrupt:
        print(f"pyprof {command}: interrupted", file=sys.stderr)
        return 128 + 2
    except _signals.Ended as ended:
        _signals.end_by(ended.signum)
        return 128 + ended.signum  # not reached
    except (_files.FileError, OptionsUnavailable) as exc:
        print(f"pyprof {command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # Standard output's reader went away (`pyprof report ... | head -0`): end quietly, with
        # the status the C++ tools give (128 + SIGPIPE), and nothing left to flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
