"""Capture lifecycle of `pyprof profile` + pyprof.init(): how the program ends (normally, by
sys.exit, an exception, SIGINT, SIGTERM), fork and DataLoader workers, RANK, init()/stop(),
hostile inputs, threads, the buffer limit, the capture window and the database metadata.

Every check reads the databases with plain sqlite3 (tests/pyprof_db.py), as a third-party
reader of an Nsight Systems export would. The helper programs are tests/scripts/lifecycle_*.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import pyprof_db
from pyprof_db import MARK, PUSH_POP, START_END, modules, ops, read_ranges, stats
from testlib import PARSE, PY, ROOT, all_but_one_slow, read_records, script, terminal_signals
from testlib import pyprof_env as session_env  # what pyprof_db.profile gives the launcher

pytestmark = pytest.mark.needs_build

TIMEOUT = 90


def profile(tmp_path, name, *args, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("timeout", TIMEOUT)
    return pyprof_db.profile(tmp_path, script(name), *args, **kwargs)


def first_json_line(stdout: str) -> dict:
    for line in stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON line in the program's stdout:\n{stdout}")


def describe(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


# --- database checks ------------------------------------------------------------------------

def connect(path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def connect_killed(path, scratch) -> sqlite3.Connection:
    """A connection to the database of a process killed with SIGKILL. The kill can land while
    the writer commits, leaving a hot rollback journal that a read-only connection cannot roll
    back ("attempt to write a readonly database"): read a copy of both, rolled back there, as
    pyprof parse does."""
    journal = Path(f"{path}-journal")
    if not (journal.exists() and journal.stat().st_size > 0):
        return connect(path)
    scratch = Path(scratch)
    scratch.mkdir(exist_ok=True)
    copy = scratch / Path(path).name
    shutil.copyfile(path, copy)
    shutil.copyfile(journal, f"{copy}-journal")
    return sqlite3.connect(copy)


def assert_valid_db(path) -> None:
    """The file exists, is a finished SQLite database (no hot journal) with NVTX_EVENTS."""
    path = Path(path)
    assert path.exists(), f"{path} missing; directory has {sorted(os.listdir(path.parent))}"
    for sidecar in ("-journal", "-wal"):
        assert not Path(str(path) + sidecar).exists(), f"{path}{sidecar} left behind"
    con = connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"NVTX_EVENTS", "StringIds", "PYPROF_COLLECTOR_STATS"} <= tables, tables
        # Every registered-string reference resolves.
        dangling = con.execute(
            "SELECT COUNT(*) FROM NVTX_EVENTS WHERE textId IS NOT NULL "
            "AND textId NOT IN (SELECT id FROM StringIds)").fetchone()[0]
        assert dangling == 0, f"{dangling} NVTX_EVENTS rows have a textId not in StringIds"
    finally:
        con.close()


def tensor_shapes(marker: dict) -> list:
    """Shapes of every tensor argument of an op marker (tensor lists included)."""
    shapes = []

    def visit(value):
        if isinstance(value, dict) and "shape" in value and "dtype" in value:
            shapes.append(value["shape"])
        elif isinstance(value, list):
            for item in value:
                visit(item)

    for value in (marker.get("args") or {}).values():
        visit(value)
    return shapes


def find_ops(ranges, op: str, shape: list | None = None) -> list:
    return [r for r in ops(ranges)
            if r.marker["op"] == op and (shape is None or shape in tensor_shapes(r.marker))]


def user_ranges(ranges, text: str, domain: str = "") -> list:
    return [r for r in ranges if r.marker is None and r.domain == domain and r.text == text
            and r.event_type in (PUSH_POP, START_END)]


def event_pids(path) -> set:
    con = connect(path)
    try:
        return {(g >> 24) & 0xFFFFFF for (g,) in con.execute(
            "SELECT DISTINCT globalTid FROM NVTX_EVENTS WHERE globalTid IS NOT NULL")}
    finally:
        con.close()


def assert_train_step_recorded(ranges) -> None:
    """The ops and modules of one MLP train step (forward, backward, SGD) are all there."""
    names = Counter(r.marker["op"] for r in ops(ranges))
    for op in ("aten::linear", "aten::addmm", "aten::gelu", "aten::cross_entropy_loss"):
        assert names[op] >= 1, f"{op} missing; ops recorded: {dict(names)}"
    assert any(name.endswith("Backward0") for name in names), dict(names)
    module_names = {r.marker["module"] for r in modules(ranges)}
    assert {"MLP", "MLP.body", "MLP.body.0", "MLP.head"} <= module_names, module_names
    for r in ops(ranges) + modules(ranges):
        assert r.end is not None and 0 <= r.start <= r.end, r


def assert_no_drops(path) -> dict:
    s = stats(path)
    assert s.get("events_dropped") == 0, s
    assert s.get("events_recorded", 0) > 0, s
    return s


# --- 1. how the program ends -----------------------------------------------------------------

@pytest.fixture(scope="module")
def normal_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("normal")
    result = profile(tmp, "lifecycle_end.py", "normal")
    return tmp, result


END_MODES = {  # mode -> (expected exit status, text expected on stderr)
    "exit3": (3, None),
    "exception": (1, "RuntimeError: lifecycle: deliberate failure"),
    "sigint": (128 + signal.SIGINT, "KeyboardInterrupt"),
}


def check_end(tmp, result, code, stderr_text):
    assert result.returncode == code, describe(result)
    if stderr_text:
        assert stderr_text in result.stderr, describe(result)
    info = first_json_line(result.stdout)
    assert info["enabled"] is True
    db = tmp / "net.sqlite"
    assert_valid_db(db)
    ranges = read_ranges(str(db))
    assert_train_step_recorded(ranges)
    # The last op before the end is there too.
    assert len(find_ops(ranges, "aten::cumsum", [5, 41])) == 1
    assert_no_drops(db)
    assert event_pids(db) == {info["pid"]}


def test_normal_exit_keeps_every_op(normal_run):
    tmp, result = normal_run
    check_end(tmp, result, 0, None)
    assert stats(str(tmp / "net.sqlite")).get("unclosed_ranges", 0) == 0
    # A finished database is not called unfinished.
    res = subprocess.run([PARSE, str(tmp / "net.sqlite")], capture_output=True, text=True,
                         timeout=TIMEOUT)
    assert res.returncode == 0 and "not finished" not in res.stderr, res.stderr
    assert "unfinished_capture" not in json.loads(res.stdout.splitlines()[0])


# Each mode is a profiled run of ~3 s: `-m "not slow"` keeps the exception.
@pytest.mark.parametrize("mode", all_but_one_slow(sorted(END_MODES), "exception"))
def test_abnormal_end_keeps_ops_recorded_before_it(tmp_path, mode):
    code, stderr_text = END_MODES[mode]
    result = profile(tmp_path, "lifecycle_end.py", mode)
    if mode == "exception":
        assert "Traceback (most recent call last)" in result.stderr, describe(result)
    check_end(tmp_path, result, code, stderr_text)


# --- 2. SIGTERM / Ctrl-C while the program is running -----------------------------------------

def spawn_loop(tmp_path, extra_env=None) -> subprocess.Popen:
    """Starts lifecycle_loop.py under `pyprof profile -o tmp_path/net`, the launcher leading a
    process group of its own (as `setsid pyprof profile ...` does)."""
    cmd = [PY, "-m", "pyprof", "profile", "-o", str(tmp_path / "net"), "--",
           PY, script("lifecycle_loop.py"), str(tmp_path / "loop.pid")]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=session_env(extra_env), cwd=ROOT, start_new_session=True,
                            preexec_fn=terminal_signals)


def wait_ready(proc, tmp_path) -> int:
    """Waits for the looping program's "ready" and returns its pid."""
    line = proc.stdout.readline()  # blocks until "ready" (or EOF if the program died)
    if line.strip() != "ready":
        proc.kill()
        out, err = proc.communicate(timeout=TIMEOUT)
        raise AssertionError(f"no 'ready' (got {line!r}); rc={proc.returncode}\n{out}\n{err}")
    return int((tmp_path / "loop.pid").read_text())


def start_loop(tmp_path, extra_env=None):
    proc = spawn_loop(tmp_path, extra_env)
    return proc, wait_ready(proc, tmp_path)


def finish(proc) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"the profiled program did not end after the signal:\n{err}")
    return proc.returncode, out, err


def check_killed_db(db, program_pid):
    assert_valid_db(db)
    ranges = read_ranges(str(db))
    assert_train_step_recorded([r for r in ranges if r.end is not None])
    assert len(find_ops(ranges, "aten::cumsum", [5, 41])) == 1
    s = stats(str(db))
    assert s.get("events_dropped") == 0, s
    # Ranges open at the signal are written with end NULL (trace-formats.md §7) and counted.
    unclosed = [r for r in ranges if r.event_type in (PUSH_POP, START_END) and r.end is None]
    assert any(r.text == "lifecycle-forever" and r.domain == "" for r in unclosed), (
        "the user range open at the signal is missing", unclosed[:5])
    assert s.get("unclosed_ranges") == len(unclosed), (s, len(unclosed))
    assert event_pids(db) == {program_pid}


@pytest.mark.parametrize("target", all_but_one_slow(["program", "launcher"], "launcher"))
def test_sigterm_finalizes_the_database(tmp_path, target):
    proc, program_pid = start_loop(tmp_path)
    os.kill(program_pid if target == "program" else proc.pid, signal.SIGTERM)
    rc, out, err = finish(proc)
    assert rc == 128 + signal.SIGTERM, f"rc={rc}\n{err}"
    check_killed_db(tmp_path / "net.sqlite", program_pid)


def finalized_by(db) -> str | None:
    con = connect(db)
    try:
        row = con.execute(
            "SELECT value FROM META_DATA_CAPTURE WHERE name = 'FINALIZED_BY'").fetchone()
        return row[0] if row else None
    finally:
        con.close()


def kill_leftovers(runs) -> None:
    """Ends every launcher of `runs` still running (a failed check must not leave loops
    spinning for the rest of the test session)."""
    for _, proc, _ in runs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()


def start_loops(tmp_path, count):
    """`count` looping programs under their own launchers, each in tmp_path/run<i>; returns
    (run dir, launcher, program pid) once all are ready."""
    dirs = [tmp_path / f"run{i}" for i in range(count)]
    procs = []
    for d in dirs:
        d.mkdir()
        procs.append(spawn_loop(d))
    return [(d, proc, wait_ready(proc, d)) for d, proc in zip(dirs, procs)]


# `scancel`, closing a terminal and `kill -- -PGID` signal the whole process group: the program
# gets the signal and, a moment later, the launcher's forwarded copy. The second one must not
# end the program while the collector finishes the file. Several trials: the copy used to land
# mid-write in most of them, not all.
@pytest.mark.parametrize("sig", all_but_one_slow([signal.SIGTERM, signal.SIGHUP], signal.SIGTERM))
def test_termination_signal_to_the_process_group_finishes_the_database(tmp_path, sig):
    runs = start_loops(tmp_path, 3)
    try:
        for _, proc, _ in runs:
            os.killpg(proc.pid, sig)
        for run_dir, proc, program_pid in runs:
            rc, out, err = finish(proc)
            assert rc == 128 + sig, f"rc={rc}\n{err}"
            db = run_dir / "net.sqlite"
            check_killed_db(db, program_pid)
            assert finalized_by(db) == sig.name, err
    finally:
        kill_leftovers(runs)


# Two signals back to back (a user or a job system repeating itself): the second, and an
# interrupt after a termination signal, wait until the file is finished; the program then ends
# by the signal that started finishing it. Sent back to back, the two may reach two threads at
# once, so either can be that one (and the interrupt can reach Python first, which ends the
# program by SIGINT after the file is finished).
SIGNAL_PAIRS = [(signal.SIGTERM, signal.SIGTERM), (signal.SIGHUP, signal.SIGTERM),
                (signal.SIGTERM, signal.SIGINT)]


def test_second_signal_waits_until_the_database_is_finished(tmp_path):
    runs = start_loops(tmp_path, len(SIGNAL_PAIRS))
    try:
        for (first, second), (_, _, program_pid) in zip(SIGNAL_PAIRS, runs):
            os.kill(program_pid, first)
            os.kill(program_pid, second)
        for pair, (run_dir, proc, program_pid) in zip(SIGNAL_PAIRS, runs):
            rc, out, err = finish(proc)
            shown = "+".join(s.name for s in pair)
            assert rc in {128 + s for s in pair}, f"{shown}: rc={rc}\n{err}"
            db = run_dir / "net.sqlite"
            if signal.SIGINT in pair:
                # An interrupt that reaches Python first unwinds the `with` blocks, closing the
                # ranges check_killed_db expects open; everything else is the same.
                assert_valid_db(db)
                closed = [r for r in read_ranges(str(db)) if r.end is not None]
                assert_train_step_recorded(closed)
                assert_no_drops(db)
                assert event_pids(db) == {program_pid}
            else:
                check_killed_db(db, program_pid)
            by = finalized_by(db)
            assert by in {s.name for s in pair if s != signal.SIGINT}, (shown, by, err)
            if rc != 128 + signal.SIGINT:
                assert rc == 128 + signal.Signals[by], (shown, by, rc, err)
    finally:
        kill_leftovers(runs)


def test_parse_says_a_killed_capture_is_unfinished(tmp_path):
    """SIGKILL leaves no finalisation record: the events still in each thread's buffer (up to
    4,096) and in the writer's queue are lost. parse keeps what is there, exits 0, and says so
    in its summary and in the net.dict header."""
    proc, program_pid = start_loop(tmp_path)
    db = tmp_path / "net.sqlite"
    deadline = time.monotonic() + TIMEOUT
    committed = 0
    # The writer commits every 0.5 s. Ranges, not marks: the settings mark can be committed
    # alone, before the first thread's buffer of ranges, and then no range has a thread yet.
    while committed == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            with connect(db) as con:
                committed = con.execute(
                    "SELECT COUNT(*) FROM NVTX_EVENTS WHERE end IS NOT NULL").fetchone()[0]
        except sqlite3.Error:
            pass
    os.kill(program_pid, signal.SIGKILL)
    rc, _, err = finish(proc)
    assert rc == 128 + signal.SIGKILL, f"rc={rc}\n{err}"
    with connect_killed(db, tmp_path / "copy") as con:
        assert con.execute("SELECT COUNT(*) FROM META_DATA_CAPTURE "
                           "WHERE name = 'FINALIZED_BY'").fetchone() == (0,)
        threads = {gtid & 0xFFFFFF for (gtid,) in con.execute(
            "SELECT DISTINCT globalTid FROM NVTX_EVENTS WHERE globalTid IS NOT NULL")}
    res = subprocess.run([PARSE, str(db)], capture_output=True, text=True, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
    header = json.loads(res.stdout.splitlines()[0])
    assert header["unfinished_capture"] == {"threads": len(threads),
                                            "events_per_thread_at_risk": 4096}
    assert (f"capture was not finished (the profiled program was killed, or its disk filled "
            f"up?): up to 4,096 events per thread ({len(threads)} threads seen)") in res.stderr
    # What was committed is all there: the first step's ops.
    names = {r["name"] for r in read_records(res.stdout)[1]}
    assert "aten::cumsum" in names, sorted(names)[:20]


def test_ctrl_c_to_the_process_group(tmp_path):
    """Ctrl-C reaches the launcher and the program; the program ends by KeyboardInterrupt."""
    proc, program_pid = start_loop(tmp_path)
    os.killpg(proc.pid, signal.SIGINT)
    rc, out, err = finish(proc)
    assert rc == 128 + signal.SIGINT, f"rc={rc}\n{err}"
    assert "KeyboardInterrupt" in err
    db = tmp_path / "net.sqlite"
    assert_valid_db(db)
    ranges = read_ranges(str(db))
    # torch runs always_call forward hooks only for Exception, not KeyboardInterrupt, so the
    # module ranges (and op ranges) the interrupt unwound through stay open: they are kept,
    # with end NULL, and counted as unclosed.
    unclosed = [r for r in ranges if r.end is None and r.event_type == PUSH_POP]
    assert_train_step_recorded([r for r in ranges if r.end is not None])
    assert stats(str(db)).get("unclosed_ranges") == len(unclosed), unclosed
    assert len(find_ops(ranges, "aten::cumsum", [5, 41])) == 1
    assert stats(str(db)).get("events_dropped") == 0
    # The `with` blocks closed their ranges while the exception unwound.
    assert user_ranges(ranges, "lifecycle-forever")[0].end is not None


# --- 3. fork and DataLoader workers -----------------------------------------------------------

@pytest.fixture(scope="module")
def fork_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fork")
    result = profile(tmp, "lifecycle_fork.py")
    assert result.returncode == 0, describe(result)
    info = first_json_line(result.stdout)
    assert info["status"] == 0, info
    return tmp, info, result


def test_fork_writes_one_database_per_process(fork_run):
    tmp, info, result = fork_run
    parent_db = tmp / "net.sqlite"
    child_db = tmp / f"net.pid{info['child']}.sqlite"
    assert_valid_db(parent_db)
    assert_valid_db(child_db)
    assert sorted(p.name for p in tmp.glob("net*.sqlite")) == sorted(
        [parent_db.name, child_db.name])
    assert event_pids(parent_db) == {info["parent"]}
    assert event_pids(child_db) == {info["child"]}
    assert_no_drops(parent_db)
    assert_no_drops(child_db)


def test_fork_child_has_its_own_ops_only(fork_run):
    tmp, info, _ = fork_run
    child = read_ranges(str(tmp / f"net.pid{info['child']}.sqlite"))
    cumsum = find_ops(child, "aten::cumsum", [7, 43])
    assert len(cumsum) == 1 and cumsum[0].pid == info["child"]
    assert find_ops(child, "aten::cumprod", [11, 43]) == []  # the parent's post-fork op
    assert user_ranges(child, "parent-only", "lifecycle-dom") == []
    # Registered module strings and the pre-fork domain resolve in the child's database.
    child_modules = {r.marker["module"] for r in modules(child)}
    assert {"MLP", "MLP.body.0", "MLP.head"} <= child_modules, child_modules
    assert len(user_ranges(child, "child-only", "lifecycle-dom")) == 1


def test_fork_child_does_not_repeat_the_parents_earlier_ops(fork_run):
    """Ranges the parent completed before fork() belong to the parent's file only."""
    tmp, info, _ = fork_run
    child = read_ranges(str(tmp / f"net.pid{info['child']}.sqlite"))
    assert find_ops(child, "aten::tril", [6, 43]) == []
    assert user_ranges(child, "pre", "lifecycle-dom") == []
    assert len(modules(child)) == len(modules(read_ranges(str(tmp / "net.sqlite")))) // 2


def test_fork_parent_has_no_child_ops(fork_run):
    tmp, info, _ = fork_run
    parent = read_ranges(str(tmp / "net.sqlite"))
    assert find_ops(parent, "aten::cumsum", [7, 43]) == []
    assert user_ranges(parent, "child-only", "lifecycle-dom") == []
    assert len(find_ops(parent, "aten::tril", [6, 43])) == 1
    assert len(find_ops(parent, "aten::cumprod", [11, 43])) == 1
    assert len(user_ranges(parent, "pre", "lifecycle-dom")) == 1
    assert len(user_ranges(parent, "parent-only", "lifecycle-dom")) == 1
    # Two forwards in the parent (before and after the fork): each module range twice.
    heads = [r for r in modules(parent) if r.marker["module"] == "MLP.head"]
    assert len(heads) == 2
    assert all(r.pid == info["parent"] for r in ops(parent))


def test_dataloader_workers_write_their_own_databases(tmp_path):
    result = profile(tmp_path, "lifecycle_dataloader.py")
    assert result.returncode == 0, describe(result)
    info = first_json_line(result.stdout)
    workers = info["workers"]
    assert len(workers) == 2 and info["parent"] not in workers, info
    files = sorted(p.name for p in tmp_path.glob("net*.sqlite"))
    assert files == sorted(["net.sqlite"] + [f"net.pid{w}.sqlite" for w in workers]), files

    parent_db = tmp_path / "net.sqlite"
    assert_valid_db(parent_db)
    parent = read_ranges(str(parent_db))
    assert len(find_ops(parent, "aten::tril", [6, 43])) == 1
    assert len(find_ops(parent, "aten::cumprod", [11, 43])) == 1
    assert find_ops(parent, "aten::mm") == []
    assert event_pids(parent_db) == {info["parent"]}
    assert_no_drops(parent_db)

    for worker in workers:
        db = tmp_path / f"net.pid{worker}.sqlite"
        # Workers end through os._exit: only pyprof's wrapper finalizes their database.
        assert_valid_db(db)
        ranges = read_ranges(str(db))
        mm = find_ops(ranges, "aten::mm", [4, 4])
        # 8 items over 2 workers in batches of 2 -> 2 batches, 4 items per worker.
        assert len(mm) == 4, [r.marker for r in mm]
        assert all(r.pid == worker for r in mm)
        assert event_pids(db) == {worker}
        assert find_ops(ranges, "aten::cumprod", [11, 43]) == []
        assert stats(str(db)).get("events_dropped") == 0


# --- 4. RANK ------------------------------------------------------------------------------------

def test_rank_names_the_database(tmp_path):
    result = profile(tmp_path, "lifecycle_end.py", "normal", env={"RANK": "3"})
    assert result.returncode == 0, describe(result)
    db = tmp_path / "net.rank3.sqlite"
    assert_valid_db(db)
    ranges = read_ranges(str(db))
    assert_train_step_recorded(ranges)
    assert event_pids(db) == {first_json_line(result.stdout)["pid"]}
    # Whatever else exists, no other file holds the program's ops.
    for other in tmp_path.glob("net*.sqlite"):
        if other != db:
            assert ops(read_ranges(str(other))) == [], other.name


@pytest.mark.slow  # a second RANK run of ~3 s; test_rank_names_the_database is the fast one
def test_rank_run_is_not_reported_as_making_no_nvtx_calls(tmp_path):
    """The launcher must not take the missing NAME.sqlite of a RANK run for a program that never
    called NVTX (a false warning, plus an empty NAME.sqlite beside NAME.rank3.sqlite)."""
    result = profile(tmp_path, "lifecycle_end.py", "normal", env={"RANK": "3"})
    assert result.returncode == 0, describe(result)
    assert "made no NVTX calls" not in result.stderr, result.stderr


# --- 5. init() / stop() -------------------------------------------------------------------------

def test_init_twice_stop_and_init_again(tmp_path):
    result = profile(tmp_path, "lifecycle_init.py", "tool")
    assert result.returncode == 0, describe(result)
    info = first_json_line(result.stdout)
    assert info["init1"] is True and info["init2"] is True and info["init3"] is True, info
    assert (info["enabled1"], info["enabled2"], info["enabled3"]) == (True, False, True), info
    assert info["call_wrapped"] and info["call_restored"] and info["global_hooks"] == 0, info
    stats = info["stats"]
    # Interned markers (the default): every op went by handle, each distinct marker registered
    # once, so far fewer registrations than ops (the loop repeats itself); no text was sent.
    assert stats["ops_annotated"] > 0 and stats["interned"] == stats["ops_annotated"], info
    assert 0 < stats["markers_registered"] < stats["interned"], info
    assert stats["not_interned"] == 0 and stats["message_bytes"] == 0, info
    # init() printed nothing when a tool is attached.
    assert "no NVTX tool" not in result.stderr

    db = tmp_path / "net.sqlite"
    assert_valid_db(db)
    ranges = read_ranges(str(db))
    # init twice installs one set of hooks: each op and module range appears once per call.
    assert len(find_ops(ranges, "aten::cumsum", [3, 47])) == 1
    # After stop(): nothing.
    assert find_ops(ranges, "aten::cumprod", [5, 47]) == []
    # After init() again: recorded again, once.
    assert len(find_ops(ranges, "aten::flip", [4, 47])) == 1
    per_module = Counter(r.marker["module"] for r in modules(ranges))
    # A module that raised (ValueError, then KeyboardInterrupt) closed its range both times,
    # around the op it ran.
    booms = [r for r in modules(ranges) if r.marker["module"] == "Boom"]
    assert len(booms) == 2 and all(r.end is not None and r.end >= r.start for r in booms), booms
    neg = find_ops(ranges, "aten::neg", [2, 47])
    assert len(neg) == 2 and all(b.start <= n.start and n.end <= b.end
                                 for b, n in zip(booms, neg)), (booms, neg)
    del per_module["Boom"]
    assert per_module["MLP"] == 2 and per_module["MLP.head"] == 2, per_module
    assert set(per_module.values()) == {2}, per_module
    linear = find_ops(ranges, "aten::linear")
    assert len(linear) == 2 * 4, len(linear)  # 4 Linear layers, 2 recorded forwards
    # Every op is recorded once: no two op markers share an id.
    ids = Counter(r.marker["id"] for r in ops(ranges))
    assert max(ids.values()) == 1


def test_init_without_a_tool_is_a_silent_noop(tmp_path):
    env = session_env()
    result = subprocess.run([PY, script("lifecycle_init.py"), "notool"], capture_output=True,
                            text=True, timeout=TIMEOUT, env=env, cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    info = first_json_line(result.stdout)
    assert info["init1"] is False and info["init2"] is False and info["enabled"] is False
    assert info["stats"]["ops_annotated"] == 0 and info["stats"]["message_bytes"] == 0, info
    assert info["stats"]["interned"] == 0 and info["stats"]["markers_registered"] == 0, info
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "pyprof profile" in lines[0]
    assert list(tmp_path.iterdir()) == []  # and no database appeared


# --- 6. hostile inputs -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    result = profile(tmp, "lifecycle_hostile.py")
    assert result.returncode == 0, describe(result)
    db = tmp / "net.sqlite"
    assert_valid_db(db)
    return db, first_json_line(result.stdout), read_ranges(str(db))


def _strict_json(text):
    def reject(constant):
        raise ValueError(f"non-standard JSON constant {constant}")
    return json.loads(text, parse_constant=reject)


def test_every_marker_is_strict_json(hostile_run):
    _, _, ranges = hostile_run
    markers = [r for r in ranges if r.domain == "pyprof"]
    assert markers
    for r in markers:
        _strict_json(r.text)


@pytest.mark.parametrize("op", ["aten::reshape", "aten::view"])
def test_long_int_list_is_cut_with_a_count(hostile_run, op):
    _, _, ranges = hostile_run
    found = [r for r in find_ops(ranges, op, [1])
             if any(isinstance(v, list) and len(v) > 10 for v in r.marker["args"].values())]
    assert found, f"no {op} marker with the 300-element size list"
    size = next(v for v in found[0].marker["args"].values() if isinstance(v, list))
    tail = size[-1]
    assert isinstance(tail, str) and re.fullmatch(r"\.\.\.\+\d+", tail), size[-3:]
    kept = size[:-1]
    assert kept and all(v == 1 for v in kept)
    assert len(kept) + int(tail[4:]) == 300


def test_odd_names_round_trip(hostile_run):
    _, info, ranges = hostile_run
    name = info["name"]
    # pyprof.range: the text column holds the message verbatim (default and named domain).
    assert len(user_ranges(ranges, name, "")) == 1
    assert len(user_ranges(ranges, name, "lifecycle-dom")) == 1
    marks = [r for r in ranges if r.event_type == MARK and r.text == name]
    assert len(marks) == 1 and marks[0].end is None
    # record_function: the scope's op marker names it exactly.
    scopes = [r for r in ops(ranges) if r.marker["op"] == name]
    assert len(scopes) == 1, [r.marker["op"] for r in ops(ranges)][:20]
    assert scopes[0].marker.get("scope") == "user", scopes[0].marker
    # ... and it encloses the sum it timed.
    assert any(scopes[0].encloses(r) for r in find_ops(ranges, "aten::sum", [2]))


def test_huge_messages_are_truncated_and_counted(hostile_run):
    db, info, ranges = hostile_run
    ascii_ranges = [r for r in ranges if r.text and r.text.startswith("BIG:")]
    utf8_ranges = [r for r in ranges if r.text and r.text.startswith("BIG2:")]
    assert len(ascii_ranges) == 1 and len(utf8_ranges) == 1
    for r, full in ((ascii_ranges[0], info["big_ascii"]), (utf8_ranges[0], info["big_utf8"])):
        assert r.end is not None
        stored = r.text.encode("utf-8")
        assert 0 < len(stored) < len(full.encode("utf-8"))
        assert len(stored) <= 64 * 1024
        # A prefix of the message, cut at a character boundary (the text decoded as UTF-8).
        assert full.startswith(r.text)
    assert stats(str(db)).get("messages_truncated", 0) >= 2
    # The range after the big ones is intact.
    assert len(user_ranges(ranges, "after-big")) == 1


@pytest.mark.parametrize("size,value", [(2, "inf"), (3, "-inf"), (4, "nan")])
def test_non_finite_float_args_are_strings(hostile_run, size, value):
    _, _, ranges = hostile_run
    full = [r for r in find_ops(ranges, "aten::full")
            if r.marker["args"].get("size") == [size]]
    assert len(full) == 1, [r.marker for r in find_ops(ranges, "aten::full")]
    assert full[0].marker["args"]["fill_value"] == value, full[0].marker


# --- 7. threads -------------------------------------------------------------------------------

def assert_properly_nested(thread_ranges) -> None:
    stack = []
    for r in sorted(thread_ranges, key=lambda r: (r.start, -r.end)):
        while stack and stack[-1].end <= r.start:
            stack.pop()
        if stack:
            assert r.end <= stack[-1].end, f"{r} overlaps {stack[-1]} without nesting"
        stack.append(r)


def test_threads_are_recorded_separately(tmp_path):
    result = profile(tmp_path, "lifecycle_threads.py")
    assert result.returncode == 0, describe(result)
    info = first_json_line(result.stdout)
    n = info["iterations"]
    db = tmp_path / "net.sqlite"
    assert_valid_db(db)
    assert_no_drops(db)
    ranges = read_ranges(str(db))

    tids = {}
    for i, native in info["threads"].items():
        i = int(i)
        cumsum = find_ops(ranges, "aten::cumsum", [i + 2, 53])
        assert len(cumsum) == n, (i, len(cumsum))
        gtids = {r.global_tid for r in cumsum}
        assert len(gtids) == 1, gtids
        gtid = gtids.pop()
        assert gtid & 0xFFFFFF == native and (gtid >> 24) & 0xFFFFFF == info["pid"]
        assert len(user_ranges(ranges, f"thread-{i}")) == n
        assert all(r.global_tid == gtid for r in user_ranges(ranges, f"thread-{i}"))
        tids[i] = gtid
    assert len(set(tids.values())) == 3

    by_thread = defaultdict(list)
    for r in ranges:
        if r.event_type == PUSH_POP:
            assert r.end is not None and r.start <= r.end, r
            by_thread[r.global_tid].append(r)
    for gtid in tids.values():
        # Everything a worker recorded sits inside its own "thread-i" ranges.
        assert_properly_nested(by_thread[gtid])
        outer = [r for r in by_thread[gtid] if r.marker is None]
        inner = [r for r in by_thread[gtid] if r.marker is not None]
        assert all(any(o.encloses(r) for o in outer) for r in inner)
    for gtid, rs in by_thread.items():
        assert_properly_nested(rs)

    con = connect(db)
    try:
        names = dict(con.execute(
            "SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId"))
    finally:
        con.close()
    for i, gtid in tids.items():
        assert gtid in names, f"no ThreadNames row for worker {i}: {names}"
        assert names[gtid] == f"lc-worker-{i}", names


# --- 8. buffer limit --------------------------------------------------------------------------

def test_buffer_limit_drops_and_counts(tmp_path):
    result = profile(tmp_path, "lifecycle_end.py", "normal", env={"PYPROF_BUFFER_MB": "0"})
    assert result.returncode == 0, describe(result)
    db = tmp_path / "net.sqlite"
    assert_valid_db(db)
    s = stats(str(db))
    assert s["events_dropped"] > 0, s
    assert s["events_recorded"] == s["events_written"] + s["events_dropped"], s
    con = connect(db)
    try:
        written = con.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (?, ?, ?)",
                              (PUSH_POP, START_END, MARK)).fetchone()[0]
    finally:
        con.close()
    assert written == s["events_written"], (written, s)
    read_ranges(str(db))  # whatever was kept is readable
    drop_lines = [line for line in result.stderr.splitlines() if "drop" in line.lower()]
    assert drop_lines, result.stderr
    assert any(str(s["events_dropped"]) in line for line in drop_lines), (drop_lines, s)


# --- 9. --delay / --duration -------------------------------------------------------------------

@pytest.mark.slow  # waits out --delay and --duration: ~6 s
def test_capture_window(tmp_path):
    # The first range comes after torch and _C are loaded (the first NVTX call also loads the
    # collector): measure how long that takes here and start the window well after it.
    begin = time.monotonic()
    subprocess.run([PY, "-c", "import pyprof; pyprof.range('x').__enter__()"],
                   env=session_env(), check=True, capture_output=True, timeout=TIMEOUT)
    load_s = time.monotonic() - begin
    delay = round(1.0 + 1.2 * load_s, 1)
    duration = 1.0
    late_at, after_at = delay + 0.3, delay + duration + 0.3
    result = profile(tmp_path, "lifecycle_window.py", str(late_at), str(after_at),
                     extra_profile_args=("--delay", str(delay), "--duration", str(duration)))
    assert result.returncode == 0, describe(result)
    times = first_json_line(result.stdout)
    if times["lc-early"][1] > delay - 0.2:
        pytest.skip(f"the first range ended at {times['lc-early'][1]:.2f} s, too close to "
                    f"--delay {delay}")
    if times["lc-late"][1] > delay + duration - 0.2:
        pytest.skip(f"the second range ended at {times['lc-late'][1]:.2f} s (machine too slow)")
    assert times["lc-after"][0] >= delay + duration, times
    db = tmp_path / "net.sqlite"
    assert_valid_db(db)
    ranges = read_ranges(str(db))
    assert user_ranges(ranges, "lc-early") == [], times
    late = user_ranges(ranges, "lc-late")
    assert len(late) == 1, times
    # Rows keep session-relative times: the kept range lies where the program saw it.
    lo, hi = times["lc-late"]
    assert lo * 1e9 - 1e6 <= late[0].start <= late[0].end <= hi * 1e9 + 1e6, (late, times)
    assert user_ranges(ranges, "lc-after") == [], times
    s = stats(str(db))
    assert s.get("events_outside_window") == 2, s
    assert s.get("events_dropped") == 0, s


# --- 10. metadata ----------------------------------------------------------------------------

def test_metadata(normal_run):
    tmp, result = normal_run
    assert result.returncode == 0, describe(result)
    pid = first_json_line(result.stdout)["pid"]
    db = tmp / "net.sqlite"
    assert_valid_db(db)
    con = connect(db)
    try:
        export = dict(con.execute("SELECT name, value FROM META_DATA_EXPORT"))
        assert "pyprof" in export.get("EXPORT_PRODUCT_NAME", "").lower(), export
        assert "nsys" not in export["EXPORT_PRODUCT_NAME"].lower()
        assert "nsight" not in export["EXPORT_PRODUCT_NAME"].lower()
        assert con.execute("SELECT COUNT(*) FROM META_DATA_CAPTURE").fetchone()[0] >= 0
        starts = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchall()
        assert len(starts) == 1, starts
        assert abs(starts[0][0] - time.time_ns()) < 86400 * 10**9, starts
        enum = dict(con.execute("SELECT id, name FROM ENUM_NSYS_EVENT_TYPE"))
        assert enum[59] == "NvtxPushPopRange" and enum[34] == "NvtxMark", enum
        processes = con.execute("SELECT globalPid, pid FROM PROCESSES").fetchall()
        assert any(p == pid for _, p in processes), processes
        for global_pid, p in processes:
            if p == pid:
                assert global_pid == (1 << 48) | (pid << 24), (global_pid, pid)
    finally:
        con.close()
    ranges = read_ranges(str(db))
    op_ranges = ops(ranges)
    assert op_ranges
    for r in op_ranges:
        assert r.end is not None and 0 <= r.start <= r.end, r
        assert r.global_tid >> 48 == 1 and r.pid == pid, hex(r.global_tid)


def test_launcher_marks_a_database_its_process_did_not_finish(tmp_path):
    """A process killed before its collector finished (here a forked child, SIGKILL) leaves a
    database without its final record: the launcher's list marks it UNFINISHED and says what
    that means; the parent's finished database is listed as usual."""
    result = profile(tmp_path, "lifecycle_killed_child.py", str(tmp_path))
    assert result.returncode == 0, describe(result)
    info = first_json_line(result.stdout)
    assert info["killed"], info
    child_db = tmp_path / f"net.pid{info['child']}.sqlite"
    listed = {line.split(" (")[0].removeprefix("pyprof: "): line
              for line in result.stderr.splitlines() if ".sqlite (" in line}
    assert listed[str(tmp_path / "net.sqlite")].endswith("bytes)"), describe(result)
    assert listed[str(child_db)].endswith("bytes) UNFINISHED"), describe(result)
    assert "pyprof: warning: 1 database is UNFINISHED: its process ended before its collector " \
        "finished the file (killed?), so each of its threads' last events (up to 4,096) are " \
        "missing" in result.stderr, describe(result)
    with connect_killed(child_db, tmp_path / "copy") as con:  # committed events, no final record
        assert con.execute("SELECT count(*) FROM NVTX_EVENTS").fetchone()[0] > 0
        assert con.execute("SELECT count(*) FROM META_DATA_CAPTURE "
                           "WHERE name = 'FINALIZED_BY'").fetchone()[0] == 0
