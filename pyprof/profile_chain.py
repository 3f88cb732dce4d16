"""`pyprof profile --report [-o NAME] -- CMD ...`: the whole chain in one command (docs/report.md).

    NAME.sqlite   the program's profile       (the launcher, csrc/launch: pyprof-profile)
    NAME.dict     its attributed records      (pyprof parse)
                  the summary on the terminal (pyprof prof --report summary)
    NAME.html     the report page             (pyprof report)

The launcher stays a launcher: `--report` is this front's option, taken out of the launcher's
options (which pyprof-profile --list-options names) before it runs, and each later stage runs
the same tool the separate command does. Without `--report`, `pyprof profile` is the launcher
itself (exec'ed).

Every stage that fails says so and what it left; later stages do not run. The program's exit
status is kept: the command exits with it whenever it is not 0 (a program that failed, or was
interrupted, is still reported on, from what it recorded), else with the failed stage's status.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys

from pyprof import _signals, _tools

LAUNCHER = "pyprof-profile"
REPORT_FLAG = "--report"

REPORT_HELP = """pyprof's Python front adds:
  --report                after the program: NAME.dict (pyprof parse), the
                          summary on the terminal (pyprof prof --report
                          summary) and NAME.html (pyprof report); exit status:
                          the program's, else that of a stage that failed
                          (docs/report.md)
"""


class StageError(Exception):
    """A stage of the chain failed; the message says which and what was left."""


def profile_command(args: list[str]) -> int:
    """`pyprof profile ARGS`: the launcher exec'ed, or with --report the whole chain."""
    try:
        split = _tools.split_arguments(LAUNCHER, args, stop_at_input=True)
    except _tools.OptionsUnavailable as exc:
        print(f"pyprof profile: error: {exc}", file=sys.stderr)
        return 1
    if split.has("--help") or split.has("-h"):
        status = _tools.run_tool(LAUNCHER, split.without(REPORT_FLAG), "profile")
        print(REPORT_HELP, end="")
        return status
    if not split.has(REPORT_FLAG):
        _note_misplaced_report(split)
        return _tools.exec_tool(LAUNCHER, args)
    if split.command_at is None:
        return _tools.exec_tool(LAUNCHER, split.without(REPORT_FLAG))  # it says: no command
    return _chain(split)


def _note_misplaced_report(split: _tools.Arguments) -> None:
    """`pyprof profile python train.py --report`: the program gets --report; say so, as the
    launcher says of its own options found after the command."""
    if split.command_at is None or split.has("--"):
        return
    if REPORT_FLAG in split.args[split.command_at + 1:]:
        print(f"pyprof profile: note: {REPORT_FLAG} after the command goes to the program, not "
              "to pyprof profile (its options go before the command: pyprof profile --report "
              "[OPTIONS] -- CMD ...)", file=sys.stderr)


def output_stem(split: _tools.Arguments) -> str:
    """The name the run's files share: -o NAME (its .sqlite dropped, as the launcher drops it),
    else the launcher's default; NAME.rankR when RANK is set, as the launcher names the root
    process's database then (csrc/launch/output_names.cpp, root_database_name; the test
    test_report_under_rank checks the two agree)."""
    name = split.values.get("--output")
    if name is None:
        name = _tools.tool_options(LAUNCHER).defaults.get("--output", "")
    name = name.removesuffix(".sqlite")
    rank = os.environ.get("RANK", "")
    return f"{name}.rank{rank}" if rank else name


def _file_state(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def _chain(split: _tools.Arguments) -> int:
    if why := _tools.first_missing(LAUNCHER, "pyprof-parse", "pyprof-prof"):
        print(f"pyprof: error: {why}", file=sys.stderr)
        return 1
    stem = output_stem(split)
    database, dict_path, page = f"{stem}.sqlite", f"{stem}.dict", f"{stem}.html"
    # Checked before the program runs, which may take hours: what the later stages need.
    if importlib.util.find_spec("plotly") is None:
        print("pyprof profile: error: --report writes an HTML page, which needs plotly: pip "
              "install 'pyprof[report]' (docs/install.md); or profile without --report",
              file=sys.stderr)
        return 1
    earlier = [p for p in (dict_path, page) if os.path.lexists(p)]
    if earlier and not split.has("--force"):
        one = len(earlier) == 1
        print(f"pyprof profile: error: {' and '.join(earlier)} exist{'s' if one else ''} (an "
              f"earlier run's?): --force replaces {'it' if one else 'them'}, or name another "
              "output with -o NAME", file=sys.stderr)
        return 1
    before = _file_state(database)
    program_status = _run_launcher(split.without(REPORT_FLAG))
    if program_status is None:
        return 1
    status, ending_signal = program_status
    if ending_signal is not None:
        # SIGTERM or SIGHUP (a scheduler's): passed on to the program; the chain ends with it.
        print(f"pyprof profile: signal {ending_signal} arrived: no report", file=sys.stderr)
        return status or 128 + ending_signal
    after = _file_state(database)
    if after is None or after == before or after[3] == 0:
        what = "was not written" if after is None or after[3] == 0 else "was not written again"
        print(f"pyprof profile: error: {database} {what} by this run (the launcher said why, "
              "above): no report", file=sys.stderr)
        return status or 1
    if status != 0:
        print(f"pyprof profile: note: the program exited with status {status}; the report "
              f"covers what it recorded", file=sys.stderr)
    try:
        _stage("parse", [_tools.tool_path("pyprof-parse"), database, "-o", dict_path],
               f"{database} was written; no {dict_path}, no report")
        if not _has_records(dict_path):
            # A program that never called pyprof.init() (or a launcher whose child processes
            # wrote their own databases): the launcher wrote an empty database and said why.
            raise StageError(f"{database} holds no records (the launcher said why, above): "
                             f"{dict_path} was written; no report")
        _tools.flush_standard_streams()
        _stage("prof", [_tools.tool_path("pyprof-prof"), "--report", "summary", dict_path],
               f"{database} and {dict_path} were written; no report page")
        _write_page(dict_path, page, f"{database} and {dict_path} were written; no {page}")
    except StageError as exc:
        print(f"pyprof profile: error: {exc}", file=sys.stderr)
        return status or 1
    print(f"pyprof profile: wrote {database} (the profile), {dict_path} (its records: pyprof "
          f"prof, diff, export) and {page} (the report: open it in a browser)", file=sys.stderr)
    return status


def _stage(name: str, command: list[str], left: str) -> None:
    """One tool of the chain, its output and messages where this command's go."""
    _tools.flush_standard_streams()
    res = _signals.run(command, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        how = (f"was killed by signal {-res.returncode}" if res.returncode < 0 else
               f"failed (exit status {res.returncode}, above)")
        raise StageError(f"pyprof {name} {how}: {left}")


def _has_records(dict_path: str) -> bool:
    """Whether the net.dict holds a line after its header (docs/formats.md §3); reads up to
    the first one."""
    with open(dict_path, "rb") as f:
        return any(n > 0 and line.strip() for n, line in enumerate(f))


def _write_page(dict_path: str, page: str, left: str) -> None:
    from pyprof import report

    try:
        data = report.make_report(dict_path, page)
    except report.ReportError as exc:
        raise StageError(f"pyprof report failed ({exc}): {left}") from None
    for note in data["notes"]:
        print(f"pyprof report: note: {note}", file=sys.stderr)


def _run_launcher(args: list[str]) -> tuple[int, int | None] | None:
    """Runs the launcher (and so the program) as a child; returns (its exit status, the ending
    signal that arrived meanwhile or None), or None when it could not start. While it runs this
    process waits as the launcher does: Ctrl-C reaches the program from the terminal (the
    foreground process group) and is not an end of the chain here; SIGTERM and SIGHUP are passed
    on to the launcher, which passes them on to the program, and end the chain after it."""
    child: subprocess.Popen | None = None
    arrived: list[int] = []

    def pass_on(signum, frame):
        arrived.append(signum)
        if child is not None:
            child.send_signal(signum)

    def ignore(signum, frame):
        pass  # a handler, not SIG_IGN: exec resets it, so the program still gets Ctrl-C

    handlers = {signal.SIGINT: ignore, signal.SIGTERM: pass_on, signal.SIGHUP: pass_on}
    previous = {}
    for signum, handler in handlers.items():
        previous[signum] = signal.getsignal(signum)
        if previous[signum] != signal.SIG_IGN:  # one the parent left ignored stays ignored
            signal.signal(signum, handler)
    try:
        _tools.flush_standard_streams()
        try:
            child = subprocess.Popen([_tools.tool_path(LAUNCHER), *args])
        except OSError as exc:
            print(f"pyprof profile: error: cannot run {LAUNCHER}: {exc.strerror or exc}",
                  file=sys.stderr)
            return None
        for signum in arrived:  # one that came while it was starting
            child.send_signal(signum)
        returncode = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    ending = next((s for s in arrived if s != signal.SIGINT), None)
    return _tools.exit_status(returncode, "profile", LAUNCHER), ending
