"""What the pytest files share: paths, the environment a profiled program needs, and runners
for pyprof's tools that fail loudly (a tool killed by a signal is never taken as an exit code).

Reading databases independently of pyprof's C++ code lives in pyprof_db.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")  # traces copied into the repo (tests/data/README.md)
SHARED_TRACES = os.path.join(os.path.dirname(ROOT), "shared", "traces")  # beside the checkout
SCRIPTS = os.path.join(ROOT, "tests", "scripts")
BIN = os.path.join(ROOT, "pyprof", "bin")
PARSE = os.path.join(BIN, "pyprof-parse")
PROF = os.path.join(BIN, "pyprof-prof")
LAUNCHER = os.path.join(BIN, "pyprof-profile")
COLLECTOR = os.path.join(ROOT, "pyprof", "lib", "libpyprof_collect.so")
PY = sys.executable


def cuda_torch_or_skip(needs: str):
    """torch, when it sees a CUDA device; otherwise the calling test module is skipped, saying
    that `needs` (CI never has a GPU: docs/gpu-validation.md)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"no CUDA device (torch.cuda.is_available() is False): {needs} "
                    "(docs/gpu-validation.md)", allow_module_level=True)
    return torch


def script(name: str) -> str:
    """Path of one of the programs under tests/scripts."""
    return os.path.join(SCRIPTS, name)


def all_but_one_slow(values, fast) -> list:
    """Parameters for pytest: every one of values, all marked slow except `fast`, the one that
    `-m "not slow"` keeps running."""
    assert fast in values, (fast, values)
    return [v if v == fast else pytest.param(v, marks=pytest.mark.slow) for v in values]


def terminal_signals() -> None:
    """preexec_fn for a profiled program: SIGINT and SIGHUP at their default disposition, as
    under a terminal. A test run started in the background (`cmd &` without job control ignores
    SIGINT, nohup SIGHUP) hands SIG_IGN down to every child, a program started so keeps ignoring
    them (Python installs no KeyboardInterrupt handler, and pyprof's collector respects it), and
    the tests of Ctrl-C and hangup would wait on a program that never gets them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def pyprof_env(extra: dict | None = None) -> dict:
    """os.environ with this checkout first on PYTHONPATH and no NVTX tool inherited from the
    environment pytest itself runs in."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    env.pop("NVTX_INJECTION64_PATH", None)
    if extra:
        env.update(extra)
    return env


def run_tool(path: str, *args, stdin: str | None = None, timeout: float = 120,
             cwd: str | None = None) -> subprocess.CompletedProcess:
    """Runs one of pyprof's executables; text output; never mistakes a signal for an exit."""
    res = subprocess.run([path, *map(str, args)], input=stdin, capture_output=True, text=True,
                         timeout=timeout, cwd=cwd)
    assert res.returncode >= 0, f"{os.path.basename(path)} killed by signal {-res.returncode}: " \
                                f"{res.stderr[-2000:]}"
    return res


def expand_args(lines: list[dict]) -> list[dict]:
    """The compact net.dict's lines (docs/formats.md §3, version 2) in the full form: each
    `args_ref` / `bwd_args_ref` replaced, in place, by the `args` / `bwd_args` its
    `"kind":"args"` line defines, and those lines dropped. Full-form lines pass unchanged."""
    defined: dict[int, object] = {}
    out = []
    for line in lines:
        if line.get("kind") == "args":
            defined[line["id"]] = line["args"]
            continue
        if "args_ref" in line or "bwd_args_ref" in line:
            line = {(k[:-4] if k in ("args_ref", "bwd_args_ref") else k):
                    (defined[v] if k in ("args_ref", "bwd_args_ref") else v)
                    for k, v in line.items()}
        out.append(line)
    return out


def read_records(text: str, with_syncs: bool = False) -> tuple[dict, list[dict]]:
    """parse's JSON Lines: (header, records). The records are the GPU (or op) records, with
    their arguments written out (expand_args); the `sync` lines after a GPU profile's records
    (docs/formats.md §3: synchronizing API calls, no GPU activity) only with `with_syncs`; the
    `comm` lines (a communication backend's spans), `compiled_kernel` lines (what torch.compile's
    kernels compute) and `memory` lines (allocations and frees) never."""
    lines = expand_args([json.loads(line) for line in text.splitlines() if line.strip()])
    records = [r for r in lines[1:]
               if r.get("kind") not in ("comm", "compiled_kernel", "mark", "memory")
               and (with_syncs or r.get("kind") != "sync")]
    return lines[0], records


def read_dict(path, with_syncs: bool = False) -> tuple[dict, list[dict]]:
    """A net.dict file: (header, records), as read_records."""
    with open(path) as f:
        return read_records(f.read(), with_syncs)


def parse(path, *extra, timeout: float = 120, with_syncs: bool = False
          ) -> tuple[dict, list[dict], str]:
    """pyprof-parse PATH to stdout, which must succeed: (header, records, stderr); the records
    as read_records."""
    res = run_tool(PARSE, path, *extra, timeout=timeout)
    assert res.returncode == 0, res.stderr
    header, records = read_records(res.stdout, with_syncs)
    return header, records, res.stderr


def parse_to(path, out, *extra, timeout: float = 300) -> None:
    """pyprof-parse PATH -o OUT -q, which must succeed."""
    res = run_tool(PARSE, path, "-q", "-o", out, *extra, timeout=timeout)
    assert res.returncode == 0, res.stderr


def prof(*args, stdin: str | None = None, check: bool = True,
         timeout: float = 120) -> subprocess.CompletedProcess:
    """pyprof-prof ARGS; by default it must succeed."""
    res = run_tool(PROF, *args, stdin=stdin, timeout=timeout)
    if check:
        assert res.returncode == 0, res.stderr
    return res


def report_json(text: str) -> tuple[list[dict], list[dict]]:
    """prof's or diff's report JSON (docs/prof.md §3, "JSON"): (tables, rows). Each table is its
    line: {"report", "table", "title", "columns": [{"name", "unit"}]}; each row its cells with the
    ids of its report and table ("report", "table") and, in a table of per-row units, "unit". A
    table's line comes before its rows; this reader checks it."""
    tables, rows, seen = [], [], set()
    for line in text.splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        ids = (item["report"], item["table"])
        if "columns" in item and "title" in item:
            tables.append(item)
            seen.add(ids)
        else:
            assert ids in seen, f"a row of {ids} before its table's line"
            rows.append(item)
    return tables, rows


def report_rows(text: str) -> list[dict]:
    """The rows of prof's or diff's report JSON (report_json)."""
    return report_json(text)[1]
