#!/usr/bin/env python3
"""Times `pyprof-parse` on benchmark databases and prints a markdown table.

    python benchmarks/parse_bench.py [--sizes 10000,100000,1000000] [--runs 5]

For every size it makes (or reuses, cached under /tmp/pyprof-bench/) a database with
benchmarks/make_parse_db.py, runs `pyprof/bin/pyprof-parse DB -o OUT` (`--parser PATH`: any
executable taking `DB -o OUT`) once untimed to warm the page cache (`--warmup`), then `--runs`
times, and reports the median / min / max wall time and the peak RSS of the child process
(ru_maxrss from wait4() in GNU time or a small fork/exec helper: a direct child's ru_maxrss
would include this process' own peak, which Linux carries across exec()).

Legacy comparison: `--legacy-pyprof DIR` also times NVIDIA PyProf's parse (DIR = a source tree
holding pyprof/parse/, kept outside this repository) as its docs run it:
`cd DIR/pyprof && PYTHONPATH=SHIM python3 -m parse DB > OUT`, on `--legacy-sizes` (default 10000)
databases written with --legacy-compatible (module markers as plain text; see make_parse_db.py).
PyProf needs `tqdm` (give its folder with `--legacy-path` if the interpreter lacks it) and
`cxxfilt` (a ctypes stand-in is written to the cache folder when it is not importable).
pyprof-parse is timed on the same legacy-compatible file too, so both rows read one file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_PARSER = os.path.join(ROOT, "pyprof", "bin", "pyprof-parse")
DEFAULT_CACHE = "/tmp/pyprof-bench"

CXXFILT_SHIM = '''\
"""cxxfilt stand-in for legacy PyProf: identity unless the name is Itanium-mangled."""
import ctypes, ctypes.util
_lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
_lib.__cxa_demangle.restype = ctypes.c_void_p
_free = ctypes.CDLL(None).free
_free.argtypes = [ctypes.c_void_p]


def demangle(name, external_only=True):
    if not name.startswith("_Z"):
        return name
    status = ctypes.c_int()
    out = _lib.__cxa_demangle(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not out:
        raise ValueError(name)
    try:
        return ctypes.string_at(out).decode()
    finally:
        _free(out)
'''


# Measures peak RSS from a small intermediate process. Linux folds the high-water RSS of the
# address space a process had before exec() into its ru_maxrss, and subprocess starts children
# with vfork() (sharing this process' address space), so wait4() on a direct child reports at
# least this (large) process' own peak. GNU time, or this fork/exec helper, starts the parser
# from a small process instead: its reading is the parser's (floor: ~1 MB for time, ~5 MB here).
RSS_HELPER = r"""
import os, sys, time
t0 = time.perf_counter_ns()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter_ns() - t0
with open(sys.argv[1], "w") as f:
    f.write(f"wall_ns={wall} {usage.ru_maxrss}")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


class BenchError(Exception):
    pass


_GNU_TIME: list[bool] = []


def has_gnu_time() -> bool:
    if not _GNU_TIME:
        ok = False
        if os.access("/usr/bin/time", os.X_OK):
            probe = subprocess.run(["/usr/bin/time", "--version"], capture_output=True, text=True)
            ok = "GNU" in probe.stdout + probe.stderr
        _GNU_TIME.append(ok)
    return _GNU_TIME[0]


def rss_prefix(rss_file: str) -> tuple[str, list[str]]:
    """(how, argv prefix) that runs a command and writes its peak RSS in KiB (and, for the
    helper, its wall time) to rss_file."""
    if has_gnu_time():
        return "GNU time", ["/usr/bin/time", "-f", "%M", "-o", rss_file]
    return "a fork/exec helper", [sys.executable, "-S", "-c", RSS_HELPER, rss_file]


def read_measurement(rss_file: str) -> tuple[int, float | None]:
    """(peak RSS KiB, wall seconds measured by the helper or None)."""
    with open(rss_file) as f:
        words = f.read().split()
    wall = next((int(w[8:]) / 1e9 for w in words if w.startswith("wall_ns=")), None)
    numbers = [w for w in words if w.isdigit()]
    if not numbers:
        raise BenchError(f"no RSS reading in {rss_file}")
    return int(numbers[-1]), wall


# -- databases ------------------------------------------------------------------------------
def generator_hash() -> str:
    h = hashlib.sha256()
    for path in (os.path.join(HERE, "make_parse_db.py"), os.path.join(ROOT, "tests",
                                                                       "nsys_synth.py")):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def database(cache: str, kernels: int, legacy: bool, regenerate: bool,
             interned: bool = False) -> dict:
    """The cached benchmark database of `kernels` kernels (made when missing or stale)."""
    os.makedirs(cache, exist_ok=True)
    name = f"parse_{kernels}{'_legacy' if legacy else ''}{'_interned' if interned else ''}"
    path = os.path.join(cache, name + ".sqlite")
    meta_path = os.path.join(cache, name + ".json")
    want = generator_hash()
    if not regenerate and os.path.exists(path) and os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("generator") == want and meta.get("bytes") == os.path.getsize(path):
            return meta
    sys.path.insert(0, HERE)
    import make_parse_db  # noqa: E402  (imported lazily: only when a file must be made)

    print(f"making {path} ({kernels} kernels{', legacy-compatible' if legacy else ''}"
          f"{', interned op markers' if interned else ''})...", file=sys.stderr, flush=True)
    meta = make_parse_db.generate(path, kernels, legacy=legacy, interned=interned)
    meta["generator"] = want
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return meta


# -- running ----------------------------------------------------------------------------------
def run_child(argv: list[str], *, stdout_path: str | None, cwd: str | None = None,
              env: dict | None = None, log_path: str) -> tuple[float, int]:
    """Runs argv to completion; returns (wall seconds, peak RSS bytes of that process)."""
    rss_file = log_path + ".rss"
    if os.path.exists(rss_file):
        os.remove(rss_file)
    _, prefix = rss_prefix(rss_file)
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        code = subprocess.call(prefix + argv, stdout=out, stderr=log, cwd=cwd, env=env)
        wall = time.perf_counter() - t0
    if stdout_path:
        out.close()
    if code != 0:
        with open(log_path, "rb") as f:
            tail = f.read()[-3000:].decode(errors="replace")
        raise BenchError(f"{shlex.join(argv)} exited with {code}:\n{tail}")
    rss_kib, helper_wall = read_measurement(rss_file)
    return (wall if helper_wall is None else helper_wall), rss_kib * 1024


def bench(label: str, db: dict, argv: list[str], out_path: str, *, runs: int, warmup: int,
          stdout_to_out: bool, cwd: str | None = None, env: dict | None = None,
          log_path: str) -> dict:
    walls, rss = [], []
    for i in range(warmup + runs):
        if os.path.exists(out_path):
            os.remove(out_path)
        wall, peak = run_child(argv, stdout_path=out_path if stdout_to_out else None, cwd=cwd,
                               env=env, log_path=log_path)
        if i >= warmup:
            walls.append(wall)
            rss.append(peak)
        run = i + 1 - warmup if i >= warmup else "warm-up"
        print(f"  {label} {db['kernels']} kernels: run {run} {wall:.2f} s, "
              f"{peak / 2**20:.0f} MB", file=sys.stderr, flush=True)
    if not os.path.exists(out_path):
        raise BenchError(f"{label} wrote no {out_path}")
    med = statistics.median(walls)
    return {"tool": label, "db": os.path.basename(db["path"]), "kernels": db["kernels"],
            "nvtx_ranges": db["nvtx_ranges"], "db_mb": db["bytes"] / 2**20,
            "median_s": med, "min_s": min(walls), "max_s": max(walls),
            "peak_rss_mb": max(rss) / 2**20, "kernels_per_s": db["kernels"] / med,
            "output_mb": os.path.getsize(out_path) / 2**20, "runs": runs,
            "command": command_line(argv, out_path if stdout_to_out else None, cwd, env)}


def command_line(argv: list[str], stdout_path: str | None, cwd: str | None,
                 env: dict | None) -> str:
    """The shell command that does what run_child did."""
    parts = []
    if cwd:
        parts.append(f"cd {shlex.quote(cwd)} &&")
    if env and env.get("PYTHONPATH"):
        parts.append(f"PYTHONPATH={shlex.quote(env['PYTHONPATH'])}")
    parts.append(shlex.join(argv))
    if stdout_path:
        parts.append(f"> {shlex.quote(stdout_path)}")
    return " ".join(parts)


def legacy_env(args, cache: str) -> dict:
    """Environment for legacy PyProf: PYTHONPATH with a cxxfilt stand-in and --legacy-path."""
    shim = os.path.join(cache, "legacy-shim")
    os.makedirs(shim, exist_ok=True)
    paths = list(args.legacy_path or [])
    probe = subprocess.run([args.legacy_python, "-c", "import cxxfilt"],
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
                           capture_output=True)
    if probe.returncode != 0:
        with open(os.path.join(shim, "cxxfilt.py"), "w") as f:
            f.write(CXXFILT_SHIM)
        paths.append(shim)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    probe = subprocess.run([args.legacy_python, "-c", "import tqdm"], env=env,
                           capture_output=True)
    if probe.returncode != 0:
        raise BenchError(
            f"legacy PyProf needs tqdm, which {args.legacy_python} cannot import: give its "
            "folder with --legacy-path (e.g. `pip download --no-deps tqdm -d W` and unzip the "
            "wheel into a folder) or install it")
    return env


# -- report -----------------------------------------------------------------------------------
def machine() -> dict:
    info = {"nproc": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
            "cpu": platform.processor() or platform.machine(), "ram_gib": None,
            "kernel": platform.release(), "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    info["ram_gib"] = round(int(line.split()[1]) / 2**20, 1)
                    break
    except OSError:
        pass
    return info


def table(results: list[dict]) -> str:
    head = ("| tool | kernels | NVTX ranges | DB MB | median wall s | min-max s | peak RSS MB "
            "| kernels/s | output MB |")
    lines = [head, "|" + "---|" * 9]
    for r in results:
        lines.append(
            f"| {r['tool']} | {r['kernels']:,} | {r['nvtx_ranges']:,} | {r['db_mb']:.1f} | "
            f"{r['median_s']:.3f} | {r['min_s']:.3f}-{r['max_s']:.3f} | {r['peak_rss_mb']:.0f} | "
            f"{r['kernels_per_s']:,.0f} | {r['output_mb']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000",
                    help="kernel counts, comma-separated (default 10000,100000,1000000)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per size (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1)")
    ap.add_argument("--parser", default=DEFAULT_PARSER,
                    help="executable taking `DB -o OUT` (default: pyprof/bin/pyprof-parse)")
    ap.add_argument("--no-parser", action="store_true",
                    help="time only legacy PyProf (with --legacy-pyprof)")
    ap.add_argument("--cache", default=DEFAULT_CACHE, help=f"database cache ({DEFAULT_CACHE})")
    ap.add_argument("--regenerate", action="store_true", help="remake the databases")
    ap.add_argument("--legacy-pyprof", metavar="DIR",
                    help="NVIDIA PyProf source tree (holding pyprof/parse/) to time as well")
    ap.add_argument("--legacy-sizes", default="10000",
                    help="sizes to time legacy PyProf on (default 10000)")
    ap.add_argument("--legacy-python", default=sys.executable,
                    help="interpreter for legacy PyProf (default: this one)")
    ap.add_argument("--legacy-path", action="append", metavar="DIR",
                    help="extra PYTHONPATH entry for legacy PyProf (e.g. where tqdm is)")
    ap.add_argument("--interned", action="store_true",
                    help="also time each size on a database whose op markers are in the "
                         "interned form pyprof records by default (make_parse_db.py --interned)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = ap.parse_args(argv)

    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        legacy_sizes = ([int(s) for s in args.legacy_sizes.split(",") if s.strip()]
                        if args.legacy_pyprof else [])
    except ValueError:
        ap.error("sizes are integers separated by commas")
    if not args.no_parser and not (os.path.isfile(args.parser) and os.access(args.parser, os.X_OK)):
        print(f"pyprof-parse not built: {args.parser} is missing or not executable "
              "(build the C++ parts with scripts/setup.sh, or give --parser PATH)",
              file=sys.stderr)
        return 2
    if args.no_parser and not args.legacy_pyprof:
        ap.error("--no-parser needs --legacy-pyprof")
    legacy_dir = None
    if args.legacy_pyprof:
        legacy_dir = os.path.join(os.path.abspath(args.legacy_pyprof), "pyprof")
        if not os.path.isfile(os.path.join(legacy_dir, "parse", "parse.py")):
            print(f"--legacy-pyprof: no pyprof/parse/parse.py under {args.legacy_pyprof}",
                  file=sys.stderr)
            return 2

    cache = os.path.abspath(args.cache)
    os.makedirs(cache, exist_ok=True)
    log = os.path.join(cache, "child.log")
    results = []
    try:
        if not args.no_parser:
            parser = os.path.abspath(args.parser)
            label = ("pyprof-parse" if parser == os.path.abspath(DEFAULT_PARSER)
                     else os.path.basename(parser))
            for n in sizes:
                for interned in (False, True) if args.interned else (False,):
                    db = database(cache, n, False, args.regenerate, interned)
                    out = os.path.join(cache, f"out_{n}.dict")
                    results.append(bench(label + (" (interned markers)" if interned else ""),
                                         db, [parser, db["path"], "-o", out], out,
                                         runs=args.runs, warmup=args.warmup,
                                         stdout_to_out=False, log_path=log))
        if legacy_dir:
            env = legacy_env(args, cache)
            for n in legacy_sizes:
                db = database(cache, n, True, args.regenerate)
                if not args.no_parser:
                    out = os.path.join(cache, f"out_{n}_legacy_db.dict")
                    results.append(bench(f"{label} (legacy-compatible DB)", db,
                                         [parser, db["path"], "-o", out], out, runs=args.runs,
                                         warmup=args.warmup, stdout_to_out=False, log_path=log))
                out = os.path.join(cache, f"out_{n}_legacy.dict")
                results.append(bench("NVIDIA PyProf parse", db,
                                     [args.legacy_python, "-m", "parse", db["path"]], out,
                                     runs=args.runs, warmup=args.warmup, stdout_to_out=True,
                                     cwd=legacy_dir, env=env, log_path=log))
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    m = machine()
    print(f"Machine: {m['nproc']} CPUs ({m['usable_cpus']} usable), {m['cpu']}, "
          f"{m['ram_gib']} GiB RAM; Linux {m['kernel']}, Python {m['python']}, "
          f"SQLite {m['sqlite']}.")
    how, _ = rss_prefix(os.path.join(cache, "probe"))
    print(f"Databases: benchmarks/make_parse_db.py (nsys 2024.6 layout), cached in {cache}. "
          f"{args.runs} timed runs after {args.warmup} warm-up run(s); wall time of the run, "
          f"peak RSS of the parser process (measured with {how}).\n")
    print(table(results))
    print("\nCommands:")
    for r in results:
        print(f"- {r['tool']}, {r['kernels']:,} kernels: `{r['command']}`")
    print(f"\nBenchmark: `{shlex.join([sys.executable] + sys.argv)}`")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": m, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
