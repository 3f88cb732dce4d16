"""`pyprof report INPUT -o net.html`: one self-contained HTML page of a profile.

The numbers come from prof (C++): this module runs `pyprof-prof --report ... --formats json`
once, groups its rows by report, and lays them out: headline figures, a roofline, time
breakdowns (op family, module tree, phase) and sortable, filterable tables. Plotly draws the
charts; its bundled plotly.js is inlined, so the page opens offline (docs/report.md). INPUT is a
net.dict or anything `pyprof parse` reads (parse runs first, into a temporary file).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from pyprof import _files, _reports, _signals, _tools
from pyprof._report_page import MAX_TABLE_ROWS, build_page_data, render_html
from pyprof._reports import Table
from pyprof._tools import missing_tool, tool_path

# The longest net.dict line prof reads (prof/records.h kMaxDictLineBytes): the header is read
# here too, never further than that.
MAX_DICT_LINE_BYTES = 64 << 20
# The most characters of one text (a name, a cell, a warning) the page holds: parse cuts names
# at 4 KiB, so only a hand-made or damaged net.dict reaches it, where one 52 MB name, copied
# into several tables, the figures and the page's data, once took 25x its input in memory.
MAX_CELL_CHARS = 10_000


class ReportError(Exception):
    """A report that cannot be made; the message says why (shown as `pyprof report: error:`).
    `status`: the exit status (1; 2 for a usage error)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------------------------------------
# Running parse and prof


def _run(args: list[str], what: str) -> subprocess.CompletedProcess:
    if why := missing_tool(args[0]):
        raise ReportError(why)
    res = _signals.run(args, capture_output=True, text=True, errors="replace")
    if res.returncode != 0:
        raise ReportError(f"{what} failed: {_tool_error(res)}")
    return res


def _tool_error(res: subprocess.CompletedProcess) -> str:
    """What a failed tool said, on one line: its error lines without their `pyprof X: error:`
    prefix (the report's own says `pyprof report: error:` once), else its last line."""
    lines = [ln.strip() for ln in res.stderr.splitlines() if ln.strip()]
    errors = [re.sub(r"^pyprof[ -]\w+: error: ", "", ln) for ln in lines if " error: " in ln]
    if res.returncode < 0:
        errors.append(f"killed by signal {-res.returncode}")
    return "; ".join(errors[-3:] or lines[-1:]) or f"exit status {res.returncode}"


def ensure_dict(path: str, workdir: str) -> tuple[str, list[str]]:
    """net.dict for `path`: itself, or parse's output for a trace. Also parse's warnings."""
    _check_input(path)
    if os.path.isdir(path):
        raise ReportError(f"{path} is a folder: give one trace or net.dict")
    if _tools.is_net_dict(path):
        return path, []
    out = os.path.join(workdir, "input.dict")
    res = _run([tool_path("pyprof-parse"), path, "-o", out], f"pyprof parse {path}")
    warnings = [bounded(ln.strip()) for ln in res.stderr.splitlines() if "warning" in ln]
    return out, warnings


def _check_input(path: str) -> None:
    """ReportError unless `path` is a folder (a job's ranks) or a regular file: the input is
    read several times (the header, parse, prof's runs), which a FIFO or a device cannot be."""
    try:
        if os.path.isdir(path):
            return
        _files.check_regular_input(path, "report reads its input several times (save it to a "
                                         "file first)")
    except _files.FileError as e:
        if not os.path.lexists(path):
            raise ReportError(f"{path}: no such file") from None
        raise ReportError(str(e)) from None


def read_header(dict_path: str) -> dict:
    try:
        return _tools.read_dict_header(dict_path, MAX_DICT_LINE_BYTES)  # bounded: one endless line
    except _tools.NotADict as e:
        raise ReportError(str(e)) from None


def report_tables(json_path: str) -> dict[str, Table]:
    """A report JSON file of prof or diff as its tables by "report/table" id (pyprof._reports),
    every text cell bounded."""
    try:
        tables = _reports.read_file(json_path)
    except _reports.ReportFormatError as e:
        raise ReportError(f"{json_path}: {e}") from None
    for t in tables:
        t.title = bounded(t.title)
        t.rows = [{key: bounded(value) for key, value in row.items()} for row in t.rows]
    return _reports.by_key(tables)


def bounded(value):
    """A text cut to MAX_CELL_CHARS characters, saying how much is left out; other values as
    they are."""
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        return f"{value[:MAX_CELL_CHARS]}…(+{len(value) - MAX_CELL_CHARS} characters)"
    return value


def page_reports() -> list[str]:
    """The reports the page is made of: every report of one profile (prof's registry)."""
    try:
        return _reports.profile_reports()
    except RuntimeError as e:
        raise ReportError(str(e)) from None


def run_prof_reports(dict_path: str, workdir: str, peaks: str | None, no_tf32: bool,
                     flop_table: str | None = None) -> tuple[dict[str, Table], list[str]]:
    """prof's tables of every report of one profile by "report/table" id; and its warnings."""
    out = os.path.join(workdir, "reports.json")
    args = [tool_path("pyprof-prof"), "--report", ",".join(page_reports()), "--formats", "json",
            "--depth", "0", "--top", str(MAX_TABLE_ROWS), "-o", out, dict_path]
    if flop_table:
        args[1:1] = ["--flop-table", flop_table]
    if peaks:
        args[1:1] = ["--peaks", peaks]
    if no_tf32:
        args.insert(1, "--no-tf32")
    res = _run(args, "pyprof prof")
    warnings = [bounded(ln.strip()) for ln in res.stderr.splitlines() if ln.strip()]
    return report_tables(out), warnings


def run_diff(base_dict: str, new_dict: str, workdir: str, no_tf32: bool,
             flop_table: str | None = None) -> tuple[dict[str, Table], list[str]]:
    """pyprof diff BASE NEW's tables (docs/diff.md) by "diff/table" id; and its notes. Its gate
    is not asked for: the page shows the verdicts, CI runs `pyprof diff --fail-above`."""
    out = os.path.join(workdir, "diff.json")
    args = [tool_path("pyprof-diff"), base_dict, new_dict, "--formats", "json", "-o", out]
    if flop_table:
        args += ["--flop-table", flop_table]
    if no_tf32:
        args.append("--no-tf32")
    res = _run(args, "pyprof diff")
    notes = [bounded(ln.strip()) for ln in res.stderr.splitlines() if "warning" in ln]
    return report_tables(out), notes


def rank_inputs(input_path: str, ranks: list[str] | None) -> tuple[str, list[str] | None]:
    """(the profile the page is about, the ranks' net.dicts or folders). A folder given as INPUT
    is a job's ranks: the page is about its lowest rank, and its Ranks section about them all."""
    if not os.path.isdir(input_path):
        return input_path, ranks
    from pyprof import rank_dataset

    try:
        by_rank = rank_dataset.ranks_of(rank_dataset.expand_inputs([input_path]))
    except rank_dataset.DatasetError as e:
        raise ReportError(str(e)) from None
    return next(iter(by_rank.values())), [input_path, *(ranks or [])]


def run_ranks_report(ranks: list[str], workdir: str, no_tf32: bool
                     ) -> tuple[dict[str, Table], list[str]]:
    """prof's ranks report over the ranks' net.dicts (docs/prof.md §6) by "ranks/table" id."""
    for path in ranks:
        if not os.path.exists(path):
            raise ReportError(f"--ranks {path}: no such file")
        _check_input(path)
    out = os.path.join(workdir, "ranks.json")
    args = [tool_path("pyprof-prof"), "--report", "ranks", "--formats", "json", "-o", out,
            *ranks]
    if no_tf32:
        args.insert(1, "--no-tf32")
    res = _run(args, "pyprof prof --report ranks")
    notes = [bounded(f"ranks: {ln.strip()}") for ln in res.stderr.splitlines() if "warning" in ln]
    return report_tables(out), notes


def step_count(dict_path: str) -> int:
    """How many training steps the profile's user ranges name (torch.profiler's ProfilerStep#N,
    `step N` / `iteration N` ranges as examples/train.py and many scripts write). 0: none."""
    res = _run([tool_path("pyprof-prof"), "--csv", "-c", "layer", dict_path], "pyprof prof")
    pattern = re.compile(r"^(profilerstep#\d+|step[ _#]?\d+|iter(ation)?[ _#]?\d+)$",
                         re.IGNORECASE)
    steps = set()
    for line in res.stdout.splitlines()[1:]:
        for label in line.strip('"').split(":"):
            if pattern.match(label.strip()):
                steps.add(label.strip())
    return len(steps)


def make_report(input_path: str, output: str, peaks: str | None = None, title: str | None = None,
                no_tf32: bool = False, diff_base: str | None = None,
                ranks: list[str] | None = None, flop_registry: list[str] | None = None
                ) -> dict:
    """Writes the page for `input_path` to `output`; returns the data embedded in it. With
    `diff_base`, the Diff section compares the profile with that baseline; with `ranks` (a job's
    net.dicts or folders of them), the Ranks section compares the ranks. A folder as
    `input_path` is a job's ranks: the page is about its lowest rank. `flop_registry`: modules
    whose formulas registered with PyTorch cost the ops pyprof has no model of (docs/ops.md
    "Formulas registered with PyTorch"), for the profile and the baseline."""
    if peaks and not os.path.isfile(peaks):
        raise ReportError(f"--peaks {peaks}: no such file")
    _check_input(input_path)
    if diff_base:
        _check_input(diff_base)
    try:
        _files.check_not_an_input(output, [input_path, diff_base, peaks, *(ranks or [])])
    except _files.FileError as e:
        raise ReportError(str(e)) from None
    input_path, ranks = rank_inputs(input_path, ranks)
    rank_tables = None
    with tempfile.TemporaryDirectory(prefix="pyprof-report-") as work:
        dict_path, parse_warnings = ensure_dict(input_path, work)
        header = read_header(dict_path)
        base_dict = base_warnings = None
        if diff_base:
            base_work = os.path.join(work, "base")
            os.mkdir(base_work)
            base_dict, base_warnings = ensure_dict(diff_base, base_work)
            read_header(base_dict)
        flop_table = None
        if flop_registry:
            from pyprof import flop_registry as registry

            flop_table = os.path.join(work, "registry.flops")
            dicts = [dict_path] + ([base_dict] if base_dict else [])
            if (status := registry.build_table("report", flop_registry, dicts, [],
                                               flop_table)) != 0:
                raise ReportError("--flop-registry: the table could not be made (above)",
                                  status)
        tables, prof_warnings = run_prof_reports(dict_path, work, peaks, no_tf32, flop_table)
        # The step card falls back on counting step ranges (another prof run over the whole
        # dict) only when prof's iteration report has no steady state to give it.
        steady = tables.get("iteration/steady_state")
        steps = 0 if steady and steady.rows else step_count(dict_path)
        diff = None
        if diff_base:
            diff, diff_notes = run_diff(base_dict, dict_path, work, no_tf32, flop_table)
            parse_warnings += [f"baseline: {w}" for w in base_warnings + diff_notes]
        if ranks:
            rank_tables, rank_notes = run_ranks_report(ranks, work, no_tf32)
            parse_warnings += rank_notes
    data = build_page_data(header, tables, steps, parse_warnings + prof_warnings, diff,
                           diff_base, rank_tables)
    if ranks and isinstance(header.get("rank"), int):
        data["notes"].insert(0, f"The sections other than Ranks show rank {header['rank']} "
                                f"({input_path}).")
    page = render_html(data, title or f"pyprof report: {os.path.basename(input_path)}")
    try:
        _files.write_atomic(output, page)
    except OSError as e:
        raise ReportError(f"writing {output} failed: {e.strerror}") from None
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="pyprof report",
        description="One self-contained HTML page of a profile (works offline): headline figures, "
                    "a roofline, time by op family, module and phase, sortable tables of "
                    "ops, instances, kernels and Tensor Core use, iterations, advice with the "
                    "time at stake and, with --diff BASE, a comparison with a baseline. "
                    "docs/report.md",
        epilog="Exit status: 0 the page was written, 1 it could not be (the input, parse or "
               "prof failed: the message says why; no page is left), 2 usage.")
    p.add_argument("input", help="net.dict, or anything `pyprof parse` reads (parsed first); a "
                                 "folder of a job's per-rank net.dicts: the page shows its lowest "
                                 "rank and a Ranks section over them all")
    p.add_argument("-o", "--output", help="the HTML file (default: INPUT's name + .html)")
    p.add_argument("--peaks", metavar="FILE",
                   help="device peaks to add or override (docs/peaks.md); `pyprof peak -o FILE` "
                        "writes measured ones, drawn beside the datasheet roofs")
    p.add_argument("--title", help="the page's title")
    p.add_argument("--no-tf32", action="store_true",
                   help="fp32 GEMMs and convolutions are not Tensor Core eligible")
    p.add_argument("--diff", metavar="BASE",
                   help="a baseline profile (net.dict, database or trace) of the same workload: "
                        "the Diff section compares INPUT with it, as `pyprof diff BASE INPUT` "
                        "(docs/diff.md)")
    p.add_argument("--ranks", nargs="+", metavar="DICT",
                   help="the job's per-rank net.dicts (or folders of them: `pyprof parse -o DIR "
                        "net.rank*.sqlite`): the Ranks section compares them (per-rank compute, "
                        "exposed communication, idle; stragglers; collectives' bandwidth; "
                        "docs/prof.md §6)")
    p.add_argument("--flop-registry", action="append", metavar="MODULE",
                   help="import MODULE (repeatable) and cost the ops pyprof has no model of by "
                        "the FLOP formulas registered with torch.utils.flop_counter, as `pyprof "
                        "prof --flop-registry` (docs/ops.md \"Formulas registered with "
                        "PyTorch\")")
    args = p.parse_args(argv)
    output = args.output or re.sub(r"(\.json)?(\.gz)?$|\.(dict|sqlite|sql)$", "",
                                   args.input.rstrip("/")) + ".html"
    try:
        data = make_report(args.input, output, args.peaks, args.title, args.no_tf32, args.diff,
                           args.ranks, args.flop_registry)
    except ReportError as e:
        print(f"pyprof report: error: {e}", file=sys.stderr)
        return e.status
    for n in data["notes"]:
        print(f"pyprof report: note: {n}", file=sys.stderr)
    print(f"pyprof report: wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(_tools.run_front("report", lambda: main(sys.argv[1:])))  # signals end it cleanly
