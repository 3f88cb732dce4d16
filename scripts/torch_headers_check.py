#!/usr/bin/env python3
"""Compiles pyprof._C's sources against the headers of other torch releases.

The extension is built against whatever torch the user has, so the supported range is a fact to
check, not to assume. This script fetches a torch wheel per version (the macOS arm64 wheel:
~80 MB, the smallest that carries the full `torch/include` tree), keeps only its headers and
CMake files in a cache, then compiles every csrc/annotate source with the exact command CMake
used for the installed torch (build/compile_commands.json), the torch include directories
swapped for that version's and the C++ standard CMake would choose with that version (the higher
of its TorchConfig.cmake's and ours; `-fsyntax-only`: nothing is linked, so any platform's headers do).

    python scripts/torch_headers_check.py 2.11.0 2.8.0      # exit 0 when every version compiles
    python scripts/torch_headers_check.py --oldest 2.4.0     # lowest release that compiles

It needs a configured build (scripts/setup.sh) and the network for versions not yet cached
(PYPROF_TORCH_HEADERS_CACHE, default ~/.cache/pyprof/torch-headers).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CACHE = os.environ.get("PYPROF_TORCH_HEADERS_CACHE",
                               os.path.expanduser("~/.cache/pyprof/torch-headers"))
# The macOS arm64 wheel is one tenth the size of a Linux one and has the same headers. A release
# is published for a handful of Python versions: try the likely ones, newest first.
WHEEL_PLATFORM = "macosx_11_0_arm64"
WHEEL_PYTHONS = ("3.12", "3.11", "3.10", "3.9", "3.8")


class CheckError(Exception):
    pass


def fetch_headers(version: str, cache: str) -> str:
    """Returns a folder holding torch/include and torch/share/cmake of `version`."""
    dest = os.path.join(cache, version)
    if os.path.exists(os.path.join(dest, ".complete")):
        return dest
    with tempfile.TemporaryDirectory(prefix="pyprof-torch-wheel-") as tmp:
        errors = []
        for python in WHEEL_PYTHONS:
            res = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                 "--only-binary=:all:", "--platform", WHEEL_PLATFORM, "--python-version", python,
                 "-d", tmp, f"torch=={version}"],
                capture_output=True, text=True)
            if res.returncode == 0:
                break
            errors.append(res.stderr.strip().splitlines()[-1:] or ["(no message)"])
        else:
            raise CheckError(f"torch {version}: no {WHEEL_PLATFORM} wheel could be downloaded "
                             f"(last pip error: {errors[-1][0]})")
        wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
        if not wheels:
            raise CheckError(f"torch {version}: pip reported success but saved no wheel")
        shutil.rmtree(dest, ignore_errors=True)
        with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as wheel:
            members = [m for m in wheel.namelist()
                       if m.startswith(("torch/include/", "torch/share/cmake/"))]
            if not members:
                raise CheckError(f"torch {version}: {wheels[0]} has no torch/include folder")
            wheel.extractall(dest, members)
    open(os.path.join(dest, ".complete"), "w").close()
    return dest


def torch_cxx_standard(headers: str) -> int:
    """The C++ standard that version's TorchConfig.cmake puts on the torch target."""
    config = os.path.join(headers, "torch/share/cmake/Torch/TorchConfig.cmake")
    try:
        text = open(config, encoding="utf-8").read()
    except OSError as exc:
        raise CheckError(f"cannot read {config}: {exc}") from exc
    match = re.search(r"CXX_STANDARD\s+(\d+)", text)
    if not match:
        raise CheckError(f"{config} names no CXX_STANDARD")
    return int(match.group(1))


def annotate_commands(build_dir: str) -> list[dict]:
    """CMake's compile commands for the extension's own sources (tests excluded)."""
    path = os.path.join(build_dir, "compile_commands.json")
    try:
        commands = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckError(f"cannot read {path} ({exc}): configure the build first "
                         "(bash scripts/setup.sh)") from exc
    annotate_dir = os.path.join(ROOT, "csrc", "annotate") + os.sep
    chosen = [c for c in commands
              if c["file"].startswith(annotate_dir) and not c["file"].endswith("_test.cpp")]
    if not chosen:
        raise CheckError(f"{path} has no csrc/annotate sources: was torch found at configure?")
    return chosen


def retarget(command: str, headers: str, standard: int) -> list[str]:
    """The compile command with the installed torch's include folders and standard swapped."""
    args = shlex.split(command)
    out: list[str] = []
    swapped = 0
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-o", "-c"):
            i += 2
            continue
        if arg in ("-isystem", "-I") and i + 1 < len(args) and "/torch/include" in args[i + 1]:
            suffix = args[i + 1].split("/torch/include", 1)[1]
            out += [arg, os.path.join(headers, "torch/include") + suffix]
            swapped += 1
            i += 2
            continue
        if arg.startswith("-std="):
            # CMake compiles the extension as the higher of torch's standard and our own
            # (cmake/PyprofTorch.cmake); the command in hand carries our own.
            ours = int(re.sub(r"\D", "", arg.split("=", 1)[1]) or 0)
            arg = f"-std=c++{max(standard, ours)}"
        out.append(arg)
        i += 1
    if not swapped:
        raise CheckError("the compile command names no torch include folder to swap")
    return out + ["-fsyntax-only"]


def check_version(version: str, cache: str, commands: list[dict], jobs: int) -> list[str]:
    """Compiles every source; returns one failure message per source that does not compile."""
    headers = fetch_headers(version, cache)
    standard = torch_cxx_standard(headers)

    def compile_one(entry: dict) -> str | None:
        args = retarget(entry["command"], headers, standard) + ["-c", entry["file"]]
        res = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True)
        if res.returncode == 0:
            return None
        first_errors = [l for l in res.stderr.splitlines() if "error" in l][:5]
        return f"{os.path.relpath(entry['file'], ROOT)}:\n    " + "\n    ".join(first_errors)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return [r for r in pool.map(compile_one, commands) if r]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", help="torch releases, e.g. 2.11.0")
    parser.add_argument("--oldest", metavar="VERSION", nargs="+",
                        help="check these releases, oldest first, and report the first that "
                             "compiles together with every later one")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--cache", default=DEFAULT_CACHE)
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    opts = parser.parse_args(argv)
    versions = opts.versions + (opts.oldest or [])
    if not versions:
        parser.error("name at least one torch version")
    try:
        commands = annotate_commands(opts.build_dir)
    except CheckError as exc:
        print(f"torch_headers_check: error: {exc}", file=sys.stderr)
        return 2
    print(f"compiling {len(commands)} csrc/annotate sources (-fsyntax-only) per torch version")
    results: dict[str, bool] = {}
    for version in versions:
        try:
            failures = check_version(version, opts.cache, commands, opts.jobs)
        except CheckError as exc:
            print(f"torch {version:<8} ERROR  {exc}")
            results[version] = False
            continue
        results[version] = not failures
        print(f"torch {version:<8} {'ok' if not failures else 'FAILS'}")
        for failure in failures:
            print(f"  {failure}")
    if opts.oldest:
        ok_from = None
        for version in reversed(opts.oldest):
            if not results[version]:
                break
            ok_from = version
        print(f"oldest release that compiles (with every later one checked): {ok_from or 'none'}")
    return 0 if all(results[v] for v in opts.versions) else 1


if __name__ == "__main__":
    sys.exit(main())
