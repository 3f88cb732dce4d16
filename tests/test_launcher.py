"""Tests of the `pyprof profile` launcher (csrc/launch, executable pyprof/bin/pyprof-profile).

Most tests point PYPROF_COLLECTOR at a stub collector compiled here, so they do not depend on the
real NVTX collector; the ones that need the real one skip until pyprof/lib/libpyprof_collect.so
is built.
"""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

import testlib
from testlib import PY, ROOT

# Under the checkout's real path, as the launcher finds its collector (<bin>/../lib).
LAUNCHER = Path(testlib.ROOT).resolve() / os.path.relpath(testlib.LAUNCHER, testlib.ROOT)
REAL_COLLECTOR = Path(testlib.ROOT).resolve() / os.path.relpath(testlib.COLLECTOR, testlib.ROOT)

pytestmark = pytest.mark.skipif(
    not LAUNCHER.exists(),
    reason=f"{LAUNCHER} is not built (cmake --build <dir> --target pyprof-profile)")

TIMEOUT = 60

STUB_SOURCE = r"""
#include <stdio.h>
int InitializeInjectionNvtx2(void* get_export_table) { (void)get_export_table; return 0; }
int pyprof_collect_write_empty(const char* path, const char* note) {
  FILE* f = fopen(path, "w");
  if (!f) return 1;
  fprintf(f, "stub-empty: %s\n", note);
  fclose(f);
  return 0;
}
"""

NO_INIT_SOURCE = "int unrelated_function(void) { return 1; }\n"


def _compile_so(directory: Path, name: str, source: str) -> Path:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build a stub collector")
    src = directory / f"{name}.c"
    src.write_text(source)
    out = directory / f"{name}.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


@pytest.fixture(scope="session")
def stub_collector(tmp_path_factory) -> Path:
    return _compile_so(tmp_path_factory.mktemp("stub"), "stub_collect", STUB_SOURCE)


def _clean_env(collector) -> dict:
    """testlib's environment without any PYPROF_* variable inherited from pytest's."""
    env = {k: v for k, v in testlib.pyprof_env().items() if not k.startswith("PYPROF_")}
    if collector is not None:
        env["PYPROF_COLLECTOR"] = str(collector)
    return env


def profile(args, collector, env=None, cwd=ROOT, **kwargs):
    """Runs `python -m pyprof profile ARGS` to completion."""
    full_env = _clean_env(collector)
    full_env.update(env or {})
    return subprocess.run([PY, "-m", "pyprof", "profile", *map(str, args)], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=TIMEOUT,
                          **kwargs)


def start_profile(args, collector, **kwargs):
    return subprocess.Popen([PY, "-m", "pyprof", "profile", *map(str, args)], cwd=ROOT,
                            env=_clean_env(collector), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=testlib.terminal_signals, **kwargs)


def single_error(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one error line, got: {stderr!r}"
    assert lines[0].startswith("pyprof: error: "), lines[0]
    return lines[0]


def wait_for(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ---------------------------------------------------------------------------- exit status

def test_exit_code_preserved(tmp_path, stub_collector):
    r = profile(["-o", tmp_path / "r", "--", PY, "-c", "import sys; sys.exit(7)"],
                stub_collector)
    assert r.returncode == 7, r.stderr
    assert (tmp_path / "r.sqlite").exists()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGUSR1])
def test_killed_by_signal(tmp_path, stub_collector, sig):
    code = f"import os; os.kill(os.getpid(), {int(sig)})"
    r = profile(["-o", tmp_path / "r", "--", PY, "-c", code], stub_collector)
    assert r.returncode == 128 + sig, r.stderr
    # The root database is still written (empty), with a warning saying why it is empty.
    assert f"killed by signal {int(sig)}" in r.stderr
    assert (tmp_path / "r.sqlite").read_text().startswith("stub-empty:")


def test_help():
    r = profile(["--help"], None)
    assert r.returncode == 0
    assert "--output" in r.stdout and "--delay" in r.stdout


# ---------------------------------------------------------------------------- output names

@pytest.mark.parametrize("stale", ["r.sqlite", "r.rank0.sqlite", "r.pid123.sqlite",
                                   "r.rank3.pid77.sqlite"])
def test_refuses_overwrite(tmp_path, stub_collector, stale):
    old = tmp_path / stale
    old.write_text("old run")
    r = profile(["-o", tmp_path / "r", "--", PY, "-c", "raise SystemExit(3)"], stub_collector)
    assert r.returncode == 1
    line = single_error(r.stderr)
    assert stale in line and "--force" in line
    assert old.read_text() == "old run"
    assert sorted(p.name for p in tmp_path.iterdir()) == [stale]


def test_unrelated_files_do_not_block(tmp_path, stub_collector):
    for name in ["r.notes.sqlite", "r2.sqlite", "r.rankX.sqlite", "r.sqlite.bak"]:
        (tmp_path / name).write_text("keep")
    r = profile(["-o", tmp_path / "r", "--", PY, "-c", "pass"], stub_collector)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.notes.sqlite").read_text() == "keep"


def test_force_replaces(tmp_path, stub_collector):
    (tmp_path / "r.sqlite").write_text("old run")
    (tmp_path / "r.pid123.sqlite").write_text("old run")
    (tmp_path / "r.rank1.pid5.sqlite").write_text("old run")
    (tmp_path / "r.sqlite-journal").write_text("old journal")
    (tmp_path / "r.notes.sqlite").write_text("keep")
    r = profile(["-o", tmp_path / "r", "--force", "--", PY, "-c", "pass"], stub_collector)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.sqlite").read_text().startswith("stub-empty:")
    assert not (tmp_path / "r.pid123.sqlite").exists()
    assert not (tmp_path / "r.rank1.pid5.sqlite").exists()
    assert not (tmp_path / "r.sqlite-journal").exists()
    assert (tmp_path / "r.notes.sqlite").read_text() == "keep"


# A program that says it started (creates argv[1]), then waits until argv[2] exists.
WAIT_FOR_GO = ("import os, sys, time, pathlib\n"
               "pathlib.Path(sys.argv[1]).touch()\n"
               "while not os.path.exists(sys.argv[2]): time.sleep(0.02)\n")

OUTPUT_IN_USE = 75  # the launcher's exit status when another run holds -o NAME


def test_second_run_with_the_same_name_refuses_while_the_first_runs(tmp_path, stub_collector):
    started, go = tmp_path / "started", tmp_path / "go"
    first = start_profile(["-o", tmp_path / "r", "--", PY, "-c", WAIT_FOR_GO, started, go],
                          stub_collector)
    try:
        wait_for(started)
        for extra in ([], ["--force"]):  # --force deletes an earlier run's files, not these
            ran = tmp_path / "second-ran"
            r = profile(["-o", tmp_path / "r", *extra, "--", PY, "-c",
                         f"open({str(ran)!r}, 'w')"], stub_collector)
            assert r.returncode == OUTPUT_IN_USE, (extra, r.returncode, r.stderr)
            line = single_error(r.stderr)
            assert f"-o {tmp_path / 'r'} " in line and "another pyprof profile" in line, line
            assert f"(pid {first.pid})" in line, line
            assert not ran.exists(), "the second run started its program"
    finally:
        go.touch()
        out, err = first.communicate(timeout=TIMEOUT)
    assert first.returncode == 0, err
    # The first run wrote and lists its own database only.
    assert (tmp_path / "r.sqlite").read_text().startswith("stub-empty:")
    listed = [line for line in err.splitlines() if line.startswith(f"pyprof: {tmp_path}")]
    assert listed == [f"pyprof: {tmp_path / 'r.sqlite'} ({(tmp_path / 'r.sqlite').stat().st_size}"
                      " bytes)"], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go", "r.sqlite", "started"]


def test_runs_started_together_with_the_same_name_one_runs(tmp_path, stub_collector):
    """Started at once, the runs race for the name: exactly one runs its program, the others
    refuse before starting theirs."""
    count = 4
    go = tmp_path / "go"
    runs = [start_profile(["-o", tmp_path / "r", "--", PY, "-c", WAIT_FOR_GO,
                           tmp_path / f"started{i}", go], stub_collector) for i in range(count)]
    try:
        deadline = time.monotonic() + TIMEOUT
        while sum(run.poll() is not None for run in runs) < count - 1:
            assert time.monotonic() < deadline, (
                "every run with the same -o NAME is still running: none refused",
                sorted(p.name for p in tmp_path.iterdir()))
            time.sleep(0.05)
    finally:
        go.touch()
        results = [(run.wait(timeout=TIMEOUT), run.communicate()[1]) for run in runs]
    codes = sorted(code for code, _ in results)
    assert codes == [0] + [OUTPUT_IN_USE] * (count - 1), results
    assert len(list(tmp_path.glob("started*"))) == 1
    for code, err in results:
        if code == OUTPUT_IN_USE:
            assert "another pyprof profile" in single_error(err), err
    assert sorted(p.name for p in tmp_path.glob("r*")) == ["r.sqlite"]


def test_one_launcher_per_rank_shares_the_name(tmp_path, stub_collector):
    """One launcher per rank with the same -o NAME and RANK set (e.g. `srun ... pyprof profile`
    with RANK exported): each rank's files, claim and listing are its own, so all ranks run,
    while a second launcher of the same rank is refused."""
    go = tmp_path / "go"
    ranks = ["0", "1", "0"]
    runs = []
    for i, rank in enumerate(ranks):
        env = {**_clean_env(stub_collector), "RANK": rank}
        runs.append(subprocess.Popen(
            [PY, "-m", "pyprof", "profile", "-o", str(tmp_path / "r"), "--", PY, "-c",
             WAIT_FOR_GO, str(tmp_path / f"started{i}"), str(go)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        deadline = time.monotonic() + TIMEOUT
        while sum(run.poll() is not None for run in runs) < 1:
            assert time.monotonic() < deadline, "two launchers of rank 0 both run"
            time.sleep(0.05)
    finally:
        go.touch()
        results = [(run.wait(timeout=TIMEOUT), run.communicate()[1]) for run in runs]
    codes = [code for code, _ in results]
    assert sorted(codes) == [0, 0, OUTPUT_IN_USE], results
    refused = codes.index(OUTPUT_IN_USE)
    assert ranks[refused] == "0", results
    assert "r.rank0*.sqlite" in single_error(results[refused][1]), results
    assert sorted(p.name for p in tmp_path.glob("r*")) == ["r.rank0.sqlite", "r.rank1.sqlite"]
    for rank, (code, err) in zip(ranks, results):
        if code == 0:
            own = tmp_path / f"r.rank{rank}.sqlite"
            listed = [line for line in err.splitlines() if ".sqlite (" in line]
            assert listed == [f"pyprof: {own} ({own.stat().st_size} bytes)"], err


def test_stale_lock_of_a_killed_launcher_does_not_block(tmp_path, stub_collector):
    """A launcher killed with SIGKILL leaves its (unlocked) claim file behind; the next run takes
    it over and removes it."""
    started, go = tmp_path / "started", tmp_path / "go"
    first = start_profile(["-o", tmp_path / "r", "--", PY, "-c", WAIT_FOR_GO, started, go],
                          stub_collector)
    wait_for(started)
    first.kill()
    go.touch()  # ends the orphaned program, which holds the launcher's stdout and stderr
    first.communicate(timeout=TIMEOUT)
    lock = tmp_path / ".r.pyprof-lock"
    assert lock.exists(), sorted(p.name for p in tmp_path.iterdir())
    r = profile(["-o", tmp_path / "r", "--", PY, "-c", "pass"], stub_collector)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.sqlite").read_text().startswith("stub-empty:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go", "r.sqlite", "started"]


def test_sqlite_suffix_stripped(tmp_path, stub_collector):
    code = "import os; print(os.environ['PYPROF_OUTPUT'])"
    r = profile(["-o", tmp_path / "r.sqlite", PY, "-c", code], stub_collector)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "r")
    assert (tmp_path / "r.sqlite").exists()
    assert not (tmp_path / "r.sqlite.sqlite").exists()


def test_default_output_name_in_cwd(tmp_path, stub_collector):
    r = profile([PY, "-c", "pass"], stub_collector, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "pyprof_report.sqlite").exists()


def test_relative_output_is_made_absolute(tmp_path, stub_collector):
    (tmp_path / "sub").mkdir()
    code = "import os; print(os.environ['PYPROF_OUTPUT'])"
    r = profile(["-o", "sub/run", PY, "-c", code], stub_collector, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "sub" / "run")


@pytest.mark.parametrize("output", ["/proc/x/net", "/nonexistent/net"])
def test_unwritable_or_missing_directory(output, stub_collector):
    r = profile(["-o", output, PY, "-c", "pass"], stub_collector)
    assert r.returncode == 1
    line = single_error(r.stderr)
    assert os.path.dirname(output) in line
    assert "No such file or directory" in line


def test_read_only_directory(tmp_path, stub_collector):
    # Root ignores permission bits, so use a file system that is read-only for everyone.
    target = Path("/proc/self")
    r = profile(["-o", target / "r", PY, "-c", "pass"], stub_collector)
    assert r.returncode == 1
    assert "/proc/self" in single_error(r.stderr)


# ---------------------------------------------------------------------------- the command

def test_no_command(stub_collector):
    for args in [[], ["-o", "x"], ["-o", "x", "--"]]:
        r = profile(args, stub_collector)
        assert r.returncode == 2, args
        assert r.stderr.splitlines()[0].startswith("pyprof: error: ")
        assert "no command" in r.stderr


def test_unknown_option(stub_collector):
    r = profile(["--bogus", PY, "-c", "pass"], stub_collector)
    assert r.returncode == 2
    assert "--bogus" in single_error(r.stderr)


@pytest.mark.parametrize("command", ["no-such-command-pyprof", "./no/such/path"])
def test_command_not_found(tmp_path, stub_collector, command):
    r = profile(["-o", tmp_path / "r", command, "arg"], stub_collector)
    assert r.returncode == 127
    assert single_error(r.stderr) == f"pyprof: error: command not found: {command}"
    assert list(tmp_path.iterdir()) == []


def test_not_executable(tmp_path, stub_collector):
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    r = profile(["-o", tmp_path / "r", script], stub_collector)
    assert r.returncode == 126
    assert str(script) in single_error(r.stderr)
    r = profile(["-o", tmp_path / "r", tmp_path], stub_collector)  # a directory
    assert r.returncode == 126
    single_error(r.stderr)


def test_command_found_on_path(tmp_path, stub_collector):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "my-pyprof-tool"
    tool.write_text("#!/bin/sh\nexit 42\n")
    tool.chmod(0o755)
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = profile(["-o", tmp_path / "r", "my-pyprof-tool"], stub_collector, env=env)
    assert r.returncode == 42, r.stderr


def test_arguments_passed_verbatim(tmp_path, stub_collector):
    code = "import json, sys; print(json.dumps(sys.argv[1:]))"
    args = ["-o", "--force", "--", "a b", "--delay", "x"]
    r = profile(["-o", tmp_path / "r", PY, "-c", code, *args], stub_collector)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == args
    r = profile(["-o", tmp_path / "r2", "--", PY, "-c", code, "--", "y"], stub_collector)
    assert json.loads(r.stdout) == ["--", "y"]


# ---------------------------------------------------------------------------- options

@pytest.mark.parametrize("args", [["--delay", "-1"], ["--delay", "abc"], ["--delay", "nan"],
                                  ["--delay", "inf"], ["--duration", "-0.5"],
                                  ["--duration", ""], ["--delay"]])
def test_bad_delay_or_duration(tmp_path, stub_collector, args):
    r = profile(["-o", tmp_path / "r", *args, "--", PY, "-c", "pass"], stub_collector)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[0].startswith("pyprof: error: ")
    assert list(tmp_path.iterdir()) == []


def test_delay_and_duration_env(tmp_path, stub_collector):
    code = ("import os; print(os.environ.get('PYPROF_DELAY_NS'), "
            "os.environ.get('PYPROF_DURATION_NS'))")
    r = profile(["-o", tmp_path / "a", "--delay", "1.5", "--duration", "0.25", PY, "-c", code],
                stub_collector)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1500000000", "250000000"]
    # Without the options, values inherited from the environment are not passed on.
    r = profile(["-o", tmp_path / "b", PY, "-c", code], stub_collector,
                env={"PYPROF_DELAY_NS": "5", "PYPROF_DURATION_NS": "6"})
    assert r.stdout.split() == ["None", "None"]


# ---------------------------------------------------------------------------- environment

ENV_DUMP = textwrap.dedent("""
    import json, os
    env = {k: v for k, v in os.environ.items()
           if k.startswith("PYPROF_") or k == "NVTX_INJECTION64_PATH"}
    env["pid"] = os.getpid()
    print(json.dumps(env))
""")


def test_env_passed_to_child(tmp_path, stub_collector):
    cmd = [PY, "-c", ENV_DUMP]
    mono_before, utc_before = time.monotonic_ns(), time.time_ns()
    r = profile(["-o", tmp_path / "run", "--", *cmd], stub_collector)
    mono_after, utc_after = time.monotonic_ns(), time.time_ns()
    assert r.returncode == 0, r.stderr
    env = json.loads(r.stdout)
    assert env["NVTX_INJECTION64_PATH"] == str(stub_collector)
    assert env["PYPROF_OUTPUT"] == str(tmp_path / "run")
    assert int(env["PYPROF_ROOT_PID"]) == env["pid"]
    assert mono_before <= int(env["PYPROF_SESSION_START_MONO_NS"]) <= mono_after
    assert utc_before <= int(env["PYPROF_SESSION_START_UTC_NS"]) <= utc_after
    assert env["PYPROF_LAUNCH_CMDLINE"] == " ".join(cmd)
    assert "PYPROF_DELAY_NS" not in env and "PYPROF_DURATION_NS" not in env


def test_default_collector_location(tmp_path):
    # Without PYPROF_COLLECTOR the launcher looks next to itself: <bin>/../lib.
    r = profile(["-o", tmp_path / "run", PY, "-c", ENV_DUMP], None)
    if not REAL_COLLECTOR.exists():
        assert r.returncode == 1
        assert str(REAL_COLLECTOR) in single_error(r.stderr)
    else:
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.splitlines()[-1])["NVTX_INJECTION64_PATH"] == str(
            REAL_COLLECTOR)


def test_nvtx_injection_already_set(tmp_path, stub_collector):
    r = profile(["-o", tmp_path / "r", PY, "-c", "pass"], stub_collector,
                env={"NVTX_INJECTION64_PATH": "/opt/nvidia/nsys/libToolsInjection64.so"})
    assert r.returncode == 1
    line = single_error(r.stderr)
    assert "NVTX_INJECTION64_PATH" in line and "libToolsInjection64.so" in line
    assert list(tmp_path.iterdir()) == []
    # Already pointing at our collector (a nested run): fine.
    r = profile(["-o", tmp_path / "r", PY, "-c", "pass"], stub_collector,
                env={"NVTX_INJECTION64_PATH": str(stub_collector)})
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------------------- collector

def test_collector_missing(tmp_path):
    r = profile(["-o", tmp_path / "r", PY, "-c", "pass"], "/nonexistent.so")
    assert r.returncode == 1
    assert "/nonexistent.so" in single_error(r.stderr)


def test_collector_not_elf(tmp_path):
    bogus = tmp_path / "bogus.so"
    bogus.write_text("this is not a shared library\n")
    r = profile(["-o", tmp_path / "r", PY, "-c", "pass"], bogus)
    assert r.returncode == 1
    assert str(bogus) in single_error(r.stderr)


def test_collector_without_init_symbol(tmp_path):
    lib = _compile_so(tmp_path, "not_a_collector", NO_INIT_SOURCE)
    r = profile(["-o", tmp_path / "r", PY, "-c", "pass"], lib)
    assert r.returncode == 1
    line = single_error(r.stderr)
    assert str(lib) in line and "InitializeInjectionNvtx2" in line


# ---------------------------------------------------------------------------- after the run

def test_empty_database_fallback_with_stub(tmp_path, stub_collector):
    r = profile(["-o", tmp_path / "r", PY, "-c", "pass"], stub_collector)
    assert r.returncode == 0, r.stderr
    db = tmp_path / "r.sqlite"
    assert db.read_text() == "stub-empty: the program made no NVTX calls\n"
    lines = r.stderr.splitlines()
    assert lines == [
        "pyprof: warning: the program made no NVTX calls (did it call pyprof.init()?); "
        f"wrote an empty {tmp_path / 'r'}.sqlite",
        f"pyprof: {db} ({db.stat().st_size} bytes)",
    ]


def test_reports_rank_and_pid_files(tmp_path, stub_collector):
    # The child writes the files itself, as the collector would.
    code = textwrap.dedent("""
        import os
        out = os.environ["PYPROF_OUTPUT"]
        for suffix in [".pid99.sqlite", ".sqlite", ".rank1.sqlite"]:
            with open(out + suffix, "w") as f:
                f.write("x" * len(suffix))
    """)
    r = profile(["-o", tmp_path / "r", PY, "-c", code], stub_collector)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    assert (tmp_path / "r.sqlite").read_text() == "x" * len(".sqlite")  # not replaced
    lines = r.stderr.splitlines()
    assert lines[:3] == [
        f"pyprof: {tmp_path / 'r.sqlite'} (7 bytes)",
        f"pyprof: {tmp_path / 'r.pid99.sqlite'} ({len('.pid99.sqlite')} bytes)",
        f"pyprof: {tmp_path / 'r.rank1.sqlite'} ({len('.rank1.sqlite')} bytes)",
    ]
    # A child's file (a DataLoader worker's) is said to be a profile of its own.
    assert len(lines) == 4 and lines[3].startswith(
        "pyprof: note: the .pid<P> file is the program's child process (DataLoader workers")


@pytest.mark.skipif(not REAL_COLLECTOR.exists(),
                    reason=f"the collector {REAL_COLLECTOR} is not built yet")
def test_empty_database_fallback_real_collector(tmp_path):
    r = profile(["-o", tmp_path / "r", PY, "-c", "pass"], None)
    assert r.returncode == 0, r.stderr
    assert "made no NVTX calls" in r.stderr
    con = sqlite3.connect(tmp_path / "r.sqlite")
    try:
        assert con.execute("SELECT COUNT(*) FROM NVTX_EVENTS").fetchone() == (0,)
    finally:
        con.close()



@pytest.mark.skipif(not REAL_COLLECTOR.exists(),
                    reason=f"the collector {REAL_COLLECTOR} is not built yet")
def test_zero_byte_root_database_is_replaced(tmp_path):
    """A program killed between the collector creating its file and the writer adding the
    schema leaves 0 bytes; the launcher replaces that with a valid, empty database."""
    db = tmp_path / "r.sqlite"
    r = profile(["-o", tmp_path / "r", PY, "-c", f"open({str(db)!r}, 'w').close()"], None)
    assert r.returncode == 0, r.stderr
    assert "made no NVTX calls" in r.stderr
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT COUNT(*) FROM NVTX_EVENTS").fetchone() == (0,)
    finally:
        con.close()

# ---------------------------------------------------------------------------- signals

SLEEPER = textwrap.dedent("""
    import os, sys, time
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(float(sys.argv[2]))
    sys.exit(5)
""")


def test_sigterm_forwarded(tmp_path, stub_collector):
    marker = tmp_path / "marker"
    proc = start_profile(["-o", tmp_path / "r", PY, "-c", SLEEPER, marker, "60"],
                         stub_collector)
    try:
        wait_for(marker)
        child = int(marker.read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 128 + signal.SIGTERM
        assert not pid_alive(child)
    finally:
        proc.kill()
        proc.communicate()


def test_sigint_to_launcher_alone_is_ignored(tmp_path, stub_collector):
    marker = tmp_path / "marker"
    proc = start_profile(["-o", tmp_path / "r", PY, "-c", SLEEPER, marker, "1.5"],
                         stub_collector)
    try:
        wait_for(marker)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 5  # the child finished normally
    finally:
        proc.kill()
        proc.communicate()


def test_ctrl_c_to_process_group(tmp_path, stub_collector):
    marker = tmp_path / "marker"
    proc = start_profile(["-o", tmp_path / "r", PY, "-c", SLEEPER, marker, "60"],
                         stub_collector, start_new_session=True)
    try:
        wait_for(marker)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does in a terminal
        # Python dies of the re-raised SIGINT after an uncaught KeyboardInterrupt.
        assert proc.wait(timeout=10) == 128 + signal.SIGINT
        assert (tmp_path / "r.sqlite").exists()
    finally:
        proc.kill()
        proc.communicate()


# ---------------------------------------------------------------------------- CUDA tracing

CUDA_ENV_DUMP = ("import json, os; print(json.dumps({k: os.environ.get(k) for k in "
                 "('CUDA_INJECTION64_PATH', 'PYPROF_CAPTURE_RANGE', 'PYPROF_CUDA_TRACE')}))")


def test_cuda_injection_env(tmp_path, stub_collector):
    # The CUDA driver loads the same library at cuInit (InitializeInjection starts CUPTI).
    r = profile(["-o", tmp_path / "a", PY, "-c", CUDA_ENV_DUMP], stub_collector)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"CUDA_INJECTION64_PATH": str(stub_collector),
                                    "PYPROF_CAPTURE_RANGE": None, "PYPROF_CUDA_TRACE": None}
    r = profile(["-o", tmp_path / "b", "--capture-range", "cudaProfilerApi", "--no-cuda-trace",
                 PY, "-c", CUDA_ENV_DUMP], stub_collector,
                env={"PYPROF_CAPTURE_RANGE": "stale", "CUDA_INJECTION64_PATH": ""})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"CUDA_INJECTION64_PATH": "",
                                    "PYPROF_CAPTURE_RANGE": "cudaProfilerApi",
                                    "PYPROF_CUDA_TRACE": "0"}


def test_bad_capture_range(tmp_path, stub_collector):
    r = profile(["-o", tmp_path / "r", "--capture-range", "nvtx", PY, "-c", "pass"],
                stub_collector)
    assert r.returncode == 2
    assert "--capture-range" in single_error(r.stderr)


def test_cuda_injection_of_another_tool_is_kept(tmp_path, stub_collector):
    other = "/opt/nvidia/nsight-compute/libInjection64.so"
    r = profile(["-o", tmp_path / "r", PY, "-c", CUDA_ENV_DUMP], stub_collector,
                env={"CUDA_INJECTION64_PATH": other})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["CUDA_INJECTION64_PATH"] == other
    said = [line for line in r.stderr.splitlines() if "CUDA_INJECTION64_PATH" in line]
    assert len(said) == 1 and other in said[0] and "NVTX ranges only" in said[0]


@pytest.mark.skipif(not REAL_COLLECTOR.exists(),
                    reason=f"the collector {REAL_COLLECTOR} is not built yet")
@pytest.mark.parametrize("args,expected", [
    ([], "off: the program never initialised CUDA"),
    (["--no-cuda-trace"], "off: disabled"),
])
def test_cuda_trace_status_recorded(tmp_path, args, expected):
    # A CPU-only program: the database says why it holds no kernels, and has no GPU tables.
    code = "import pyprof; pyprof.init(); import torch; torch.ones(3) + 1"
    r = profile(["-o", tmp_path / "r", *args, PY, "-c", code], None)
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(tmp_path / "r.sqlite")
    try:
        (status,) = con.execute("SELECT value FROM META_DATA_CAPTURE "
                                "WHERE name = 'PYPROF_CUDA_TRACE'").fetchone()
        assert status.startswith(expected), status
        assert con.execute("SELECT COUNT(*) FROM sqlite_master "
                           "WHERE name LIKE 'CUPTI_ACTIVITY_KIND_%'").fetchone() == (0,)
        assert con.execute("SELECT COUNT(*) FROM NVTX_EVENTS").fetchone()[0] > 0
    finally:
        con.close()


@pytest.mark.skipif(not REAL_COLLECTOR.exists(),
                    reason=f"the collector {REAL_COLLECTOR} is not built yet")
def test_capture_range_never_started(tmp_path):
    # Without a cudaProfilerStart() nothing is recorded, and the user is told why.
    code = "import pyprof; pyprof.init(); import torch; torch.ones(3) + 1"
    r = profile(["-o", tmp_path / "r", "--capture-range", "cudaProfilerApi", PY, "-c", code],
                None)
    assert r.returncode == 0, r.stderr
    assert "never called cudaProfilerStart()" in r.stderr
    con = sqlite3.connect(tmp_path / "r.sqlite")
    try:
        assert con.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)"
                           ).fetchone() == (0,)
        stats = dict(con.execute("SELECT name, value FROM PYPROF_COLLECTOR_STATS"))
        assert stats["events_outside_window"] > 0
    finally:
        con.close()
