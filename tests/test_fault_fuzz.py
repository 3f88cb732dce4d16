"""The file-system and process faults a careless user, a cluster scheduler or a fuzzer hands the
commands (issue 31): each command that takes -o against special outputs (a device, a FIFO, its
own input), special inputs (a loop of symbolic links, an endless line, a FIFO, a broken rank
link, an empty folder among others), a closed standard output, and SIGTERM / Ctrl-C in the
middle of a run. Every case gets a clear message or the right output, never a traceback, an
abort, a hang, a replaced device or input, or a file left behind.

Devices: a private null device made with mknod (root only) where the test may, else /dev/null
itself; each is checked to still be a character device afterwards. FIFOs are made here; a FIFO
output is drained by a thread, a FIFO input is held open by the test as its writer.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import threading

import pytest

from testlib import DATA, PY, parse_to, pyprof_env

pytestmark = pytest.mark.needs_build

LENET = os.path.join(DATA, "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite")


@pytest.fixture(scope="module")
def lenet_dict(tmp_path_factory):
    """LeNet's net.dict with range lines (what export draws)."""
    path = tmp_path_factory.mktemp("lenet") / "lenet.dict"
    parse_to(LENET, path, "--ranges")
    return str(path)


def pyprof(*args, cwd=None, timeout=300, preexec_fn=None, env=None, stdin=None):
    """`python -m pyprof ARGS`: the front every user runs."""
    res = subprocess.run([PY, "-m", "pyprof", *map(str, args)], capture_output=True, text=True,
                         timeout=timeout, cwd=cwd, env=env or pyprof_env(),
                         preexec_fn=preexec_fn, stdin=stdin)
    return res


def assert_clean(res, rc=1):
    """The exit status asked for, and no crash: no traceback, no abort, no signal."""
    assert res.returncode == rc, (res.returncode, res.stderr[-3000:])
    for crash in ("Traceback", "terminate called", "Aborted", "killed by signal"):
        assert crash not in res.stderr, res.stderr[-3000:]


# The six commands that take -o, each with what it reads: (arguments with OUT for the output,
# the input a user might name as OUT).
def commands(dict_path: str, sqlite: str) -> dict[str, tuple[list[str], str]]:
    return {
        "parse": (["parse", "-q", sqlite, "-o", "OUT"], sqlite),
        "prof": (["prof", "-c", "all", dict_path, "-o", "OUT"], dict_path),
        "prof --parquet": (["prof", "--parquet", dict_path, "-o", "OUT"], dict_path),
        "export": (["export", dict_path, "-o", "OUT"], dict_path),
        "diff": (["diff", dict_path, dict_path, "-o", "OUT"], dict_path),
        "report": (["report", dict_path, "-o", "OUT"], dict_path),
    }


COMMANDS = ["parse", "prof", "prof --parquet", "export", "diff", "report"]


def with_output(args: list[str], out) -> list[str]:
    return [str(out) if a == "OUT" else a for a in args]


@pytest.fixture
def inputs(lenet_dict, tmp_path):
    """Copies of the inputs in a folder of their own (a test may try to overwrite them)."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(lenet_dict, folder / "net.dict")
    shutil.copy(LENET, folder / "net.sqlite")
    return str(folder / "net.dict"), str(folder / "net.sqlite")


@pytest.fixture
def null_device(tmp_path):
    """A character device that discards what is written: a private one (mknod 1:3, as
    /dev/null) when this process may make one, else /dev/null itself."""
    folder = tmp_path / "dev"
    folder.mkdir()
    path = folder / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        path = "/dev/null"
    yield str(path)
    assert stat.S_ISCHR(os.lstat(path).st_mode), f"{path} is no longer a device"
    if path != "/dev/null":
        assert sorted(os.listdir(folder)) == ["null"]  # no temporary left beside it


class Drain:
    """Reads a FIFO to its end on a thread: the reader a FIFO output waits for."""

    def __init__(self, path):
        self.data = b""
        self.thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self.thread.start()

    def _read(self, path):
        chunks = []
        # The command may open the FIFO more than once (never, for one output); read each.
        with open(path, "rb") as f:
            while chunk := f.read(1 << 16):
                chunks.append(chunk)
        self.data = b"".join(chunks)

    def result(self) -> bytes:
        self.thread.join(timeout=300)
        assert not self.thread.is_alive()
        return self.data


def check_content(command: str, data: bytes) -> None:
    """What each command writes, recognised in the bytes a device or FIFO received."""
    if command == "parse":
        assert json.loads(data.splitlines()[0])["pyprof_dict"] == 2
    elif command == "prof":
        assert data.startswith(b'"idx"') or data.split(b"\n")[0].split()[0] == b"Idx"
    elif command == "prof --parquet":
        assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"
    elif command == "export":
        assert "traceEvents" in json.loads(data)
    elif command == "diff":
        assert b"diff summary" in data
    elif command == "report":
        assert data.startswith(b"<!DOCTYPE html>")


# --- 1. a device or FIFO as the output is written in place, never replaced --------------------

@pytest.mark.parametrize("command", COMMANDS)
def test_device_output_is_written_in_place(command, inputs, null_device):
    args, _ = commands(*inputs)[command]
    res = pyprof(*with_output(args, null_device))
    assert_clean(res, 0)  # the fixture checks the device is still one


@pytest.mark.parametrize("command", COMMANDS)
def test_fifo_output_is_written_in_place(command, inputs, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    drain = Drain(fifo)
    args, _ = commands(*inputs)[command]
    res = pyprof(*with_output(args, fifo))
    if res.returncode != 0:  # the reader is waiting: release it before failing
        with open(fifo, "wb"):
            pass
    assert_clean(res, 0)
    check_content(command, drain.result())
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["in", "out.fifo"]


# --- 10. -o naming the input, or the same file through a link, is refused ----------------------

@pytest.mark.parametrize("link", ["same path", "symbolic link", "hard link"])
@pytest.mark.parametrize("command", COMMANDS)
def test_output_that_is_the_input_is_refused(command, link, inputs, tmp_path):
    args, victim = commands(*inputs)[command]
    before = open(victim, "rb").read()
    out = victim
    if link == "symbolic link":
        out = str(tmp_path / ("link" + os.path.splitext(victim)[1]))
        os.symlink(victim, out)
    elif link == "hard link":
        out = str(tmp_path / ("hard" + os.path.splitext(victim)[1]))
        os.link(victim, out)
    res = pyprof(*with_output(args, out))
    assert_clean(res, 1)
    assert "it is the input" in res.stderr and "name another output" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert open(victim, "rb").read() == before
    assert [n for n in os.listdir(os.path.dirname(victim)) if n.startswith(".")] == []


@pytest.mark.parametrize("command", ["prof", "prof --parquet", "export", "diff"])
def test_database_parsed_first_is_protected_too(command, inputs):
    """prof, export and diff of a database parse it into a temporary net.dict first: the C++
    tool never sees the database, so the front protects it."""
    _, sqlite = inputs
    before = open(sqlite, "rb").read()
    args = {"prof": ["prof", sqlite], "prof --parquet": ["prof", "--parquet", sqlite],
            "export": ["export", sqlite], "diff": ["diff", sqlite, sqlite]}[command]
    res = pyprof(*args, "-o", sqlite)
    assert_clean(res, 1)
    assert f"cannot write {sqlite}: it is the input {sqlite}" in res.stderr, res.stderr
    assert open(sqlite, "rb").read() == before


# --- 3. a loop of symbolic links as the input --------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS + ["prof --report ranks"])
def test_symlink_loop_input_is_a_clean_error(command, inputs, tmp_path):
    os.symlink("loop2.dict", tmp_path / "loop1.dict")
    os.symlink("loop1.dict", tmp_path / "loop2.dict")
    loop = str(tmp_path / "loop1.dict")
    if command == "prof --report ranks":
        args = ["prof", "--report", "ranks", loop, inputs[0]]
    else:
        args, victim = commands(*inputs)[command]
        args = [loop if a == victim else a for a in with_output(args, tmp_path / "out")]
    res = pyprof(*args)
    assert_clean(res, 1)
    assert "Too many levels of symbolic links" in res.stderr, res.stderr
    assert not os.path.exists(tmp_path / "out")


# --- 4. an endless line ------------------------------------------------------------------------

def limit_memory():
    """1 GiB of address space: more than the longest line takes, far less than an unbounded
    read of /dev/zero reaches."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("how", ["named", "standard input", "diff"])
def test_endless_line_is_a_clean_error_in_bounded_memory(how, inputs):
    if how == "named":
        res = pyprof("prof", "/dev/zero", preexec_fn=limit_memory)
    elif how == "diff":
        res = pyprof("diff", inputs[0], "/dev/zero", preexec_fn=limit_memory)
    else:
        with open("/dev/zero", "rb") as zero:
            res = pyprof("prof", "-", stdin=zero, preexec_fn=limit_memory)
    assert_clean(res, 1)
    assert "line 1: longer than 64 MiB, the most a net.dict line may hold" in res.stderr, \
        res.stderr


# --- 9. a FIFO as the input --------------------------------------------------------------------

class Writer:
    """Holds a FIFO open as its writer (O_RDWR never waits) and writes `data` into it from a
    thread, then closes it."""

    def __init__(self, path, data: bytes | None):
        self.fd = os.open(path, os.O_RDWR)
        self.thread = None
        if data is not None:
            self.thread = threading.Thread(target=self._write, args=(data,), daemon=True)
            self.thread.start()

    def _write(self, data):
        with os.fdopen(os.dup(self.fd), "wb") as f:
            f.write(data)
        os.close(self.fd)

    def close(self):
        if self.thread is None:
            os.close(self.fd)
        else:
            self.thread.join(timeout=300)


@pytest.mark.parametrize("command", COMMANDS)
def test_fifo_input_is_streamed_or_refused(command, inputs, tmp_path):
    """prof and diff read a net.dict once, start to end: a FIFO is read as a stream. The others
    read theirs more than once (or at random, SQLite): a FIFO is refused, never waited on."""
    args, victim = commands(*inputs)[command]
    fifo = str(tmp_path / ("in.fifo" + os.path.splitext(victim)[1]))
    os.mkfifo(fifo)
    out = tmp_path / ("out.parquet" if command == "prof --parquet" else "out")
    args = with_output(args, out)
    args[len(args) - 1 - args[::-1].index(victim)] = fifo  # the last input (diff: NEW)
    streams = command in ("prof", "prof --parquet", "diff")
    writer = Writer(fifo, open(victim, "rb").read() if streams else None)
    try:
        res = pyprof(*args)
    finally:
        writer.close()
    if streams:
        assert_clean(res, 0)
        assert out.stat().st_size > 0
    else:
        assert_clean(res, 1)
        assert f"{fifo} is a FIFO (named pipe), not a regular file" in res.stderr, res.stderr
        assert "save it to a file first" in res.stderr
        assert not out.exists()


def test_fifo_without_a_writer_is_not_waited_on(tmp_path):
    fifo = tmp_path / "net.dict"
    os.mkfifo(fifo)
    res = pyprof("prof", fifo)
    assert_clean(res, 1)
    assert "empty input" in res.stderr, res.stderr


# --- 6. a closed standard output ---------------------------------------------------------------

def close_stdout():
    os.close(1)


@pytest.mark.parametrize("command", COMMANDS + ["peak --help"])
def test_closed_standard_output(command, inputs, tmp_path):
    """With -o, the command works as ever; to standard output, it says that is closed."""
    if command == "peak --help":
        res = pyprof("peak", "--help", preexec_fn=close_stdout)
        assert_clean(res, 0)
        return
    args, _ = commands(*inputs)[command]
    out = tmp_path / ("out.parquet" if command == "prof --parquet" else "out")
    res = subprocess.run([PY, "-m", "pyprof", *with_output(args, out)], capture_output=False,
                         stderr=subprocess.PIPE, text=True, timeout=300, env=pyprof_env(),
                         preexec_fn=close_stdout)
    assert_clean(res, 0)
    assert out.stat().st_size > 0
    if command in ("parse", "prof", "diff"):
        without_o = [a for a in args if a not in ("-o", "OUT")]
        res = subprocess.run([PY, "-m", "pyprof", *without_o], stderr=subprocess.PIPE,
                             text=True, timeout=300, env=pyprof_env(), preexec_fn=close_stdout)
        assert_clean(res, 1)
        assert "cannot write standard output: it is closed" in res.stderr, res.stderr


# --- 7, 8. folders of inputs --------------------------------------------------------------------

def test_folder_with_a_broken_rank_link_fails_that_input(tmp_path):
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    shutil.copy(LENET, ranks / "net.rank0.sqlite")
    os.symlink("/nonexistent/net.rank1.sqlite", ranks / "net.rank1.sqlite")
    res = pyprof("parse", ranks, "-o", tmp_path / "out")
    assert_clean(res, 1)
    assert f"cannot open {ranks / 'net.rank1.sqlite'}: No such file or directory" in res.stderr
    assert "1 of 2 inputs parsed" in res.stderr, res.stderr
    assert os.listdir(tmp_path / "out") == ["net.rank0.dict"]


def test_dataset_folder_with_a_broken_rank_link_is_an_error(tmp_path, lenet_dict):
    pytest.importorskip("pyarrow")
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    with open(lenet_dict) as f:
        header, rest = f.read().split("\n", 1)
    (ranks / "net.rank0.dict").write_text(
        json.dumps({**json.loads(header), "rank": 0}) + "\n" + rest)
    os.symlink("/nonexistent/net.rank1.dict", ranks / "net.rank1.dict")
    res = pyprof("prof", "--parquet", ranks, "-o", tmp_path / "dataset")
    assert_clean(res, 1)
    assert f"{ranks / 'net.rank1.dict'}" in res.stderr and "No such file" in res.stderr, \
        res.stderr
    assert not (tmp_path / "dataset").exists()


def test_empty_folder_among_inputs_does_not_stop_the_others(tmp_path):
    (tmp_path / "empty").mkdir()
    shutil.copy(LENET, tmp_path / "net.sqlite")
    res = pyprof("parse", tmp_path / "empty", tmp_path / "net.sqlite", "-o", tmp_path / "out")
    assert_clean(res, 1)
    assert f"{tmp_path / 'empty'} holds no trace files" in res.stderr, res.stderr
    assert "1 of 2 inputs parsed" in res.stderr
    assert os.listdir(tmp_path / "out") == ["net.dict"]


# --- 5. SIGTERM and Ctrl-C in the middle of a run ----------------------------------------------

def wait_for(proc, found):
    """Polls until `found()` is true while `proc` runs (the commands below block on a FIFO
    the test holds open, so they wait there until told otherwise)."""
    while not found():
        assert proc.poll() is None, proc.communicate()[1]
        threading.Event().wait(0.01)


def leftovers(*folders) -> list[str]:
    return sorted(n for folder in folders for n in os.listdir(folder))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_parquet_leaves_nothing(signum, inputs, tmp_path):
    """pyprof-prof blocks reading a --peaks FIFO whose writer writes nothing, inside the
    front's staging folder; the signal ends both, and nothing is left."""
    pytest.importorskip("pyarrow")
    peaks = tmp_path / "peaks.fifo"
    os.mkfifo(peaks)
    work = tmp_path / "work"
    work.mkdir()
    writer = Writer(peaks, None)
    try:
        proc = subprocess.Popen([PY, "-m", "pyprof", "prof", "--parquet", "--peaks", peaks,
                                 inputs[0], "-o", work / "net.parquet"], stderr=subprocess.PIPE,
                                text=True, env=pyprof_env(), start_new_session=True)
        wait_for(proc, lambda: any(n.startswith(".net.parquet.") for n in os.listdir(work)))
        wait_for(proc, lambda: child_of(proc.pid) is not None)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        writer.close()
    check_ended(proc.returncode, err, signum, "prof")
    assert leftovers(work) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_report_leaves_no_temporary_folder(signum, inputs, tmp_path):
    """The report's last prof run (the Ranks section) blocks reading a rank FIFO whose writer
    writes nothing, with the report's temporary folder in $TMPDIR; the signal ends it, and
    neither that folder nor a half page is left."""
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    fifo = ranks / "net.rank1.dict"
    os.mkfifo(fifo)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "page"
    out.mkdir()
    writer = Writer(fifo, None)
    try:
        proc = subprocess.Popen([PY, "-m", "pyprof", "report", inputs[0], "--ranks", ranks,
                                 "-o", out / "net.html"], stderr=subprocess.PIPE, text=True,
                                env=pyprof_env({"TMPDIR": str(tmp)}), start_new_session=True)
        wait_for(proc, lambda: ranks_run(proc.pid))
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        writer.close()
    check_ended(proc.returncode, err, signum, "report")
    assert leftovers(tmp, out) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_prof_of_a_database_leaves_no_temporary(signum, inputs, tmp_path):
    """`pyprof prof DB` parses DB into a temporary net.dict in $TMPDIR, then pyprof-prof blocks
    reading a --peaks FIFO whose writer writes nothing; the signal ends both, and the temporary
    folder is gone."""
    peaks = tmp_path / "peaks.fifo"
    os.mkfifo(peaks)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    writer = Writer(peaks, None)
    try:
        proc = subprocess.Popen([PY, "-m", "pyprof", "prof", "--peaks", peaks, inputs[1]],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=pyprof_env({"TMPDIR": str(tmp)}), start_new_session=True)
        # pyprof-prof on the parsed net.dict (not the front's `--list-options` run before it)
        wait_for(proc, lambda: runs(proc.pid, b"pyprof-prof", b"input0.dict"))
        assert len(leftovers(tmp)) == 1  # the parsed net.dict's folder, while prof runs
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        writer.close()
    check_ended(proc.returncode, err, signum, "prof")
    assert leftovers(tmp) == []


def runs(pid: int, program: bytes, argument: bytes) -> bool:
    """Whether `pid`'s child runs `program` with an argument that holds `argument`."""
    child = child_of(pid)
    if child is None:
        return False
    try:
        with open(f"/proc/{child}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return program in argv[0] and any(argument in a for a in argv[1:])


def child_of(pid: int) -> int | None:
    """A child process of `pid` (its parent in /proc/N/stat), or None."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                # pid (comm) state ppid ...: comm may hold spaces, the last ')' ends it.
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            return int(name)
    return None


def ranks_run(pid: int) -> bool:
    """Whether `pid`'s child is the ranks report's pyprof-prof (the one that blocks)."""
    child = child_of(pid)
    if child is None:
        return False
    try:
        with open(f"/proc/{child}/cmdline", "rb") as f:
            return b"ranks" in f.read()
    except OSError:
        return False


def check_ended(returncode: int, err: str, signum: int, command: str) -> None:
    """SIGTERM: the front ends by the signal, silently; Ctrl-C: one line, status 130."""
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    if signum == signal.SIGINT:
        assert returncode == 130, (returncode, err)
        assert err.strip().splitlines()[-1] == f"pyprof {command}: interrupted", err
    else:
        assert returncode == -signum, (returncode, err)


# --- also seen ---------------------------------------------------------------------------------

def test_report_bounds_a_huge_name(inputs, tmp_path):
    """A name parse would never write (it cuts names at 4 KiB), made by hand: the page holds it
    cut to 10,000 characters, saying how much is left out, in every table and figure, instead of
    copying all of it (a 52 MB name once took 25x its input in memory)."""
    name = "conv2d_" + "x" * 200_000
    with open(inputs[0]) as f:
        header, *lines = f.read().splitlines()
    first = next(i for i, line in enumerate(lines) if json.loads(line).get("op") == "conv2d")
    lines[first] = json.dumps({**json.loads(lines[first]), "op": name})
    huge = tmp_path / "huge.dict"
    huge.write_text("\n".join([header, *lines]) + "\n")
    res = pyprof("report", huge, "-o", tmp_path / "huge.html")
    assert_clean(res, 0)
    page = (tmp_path / "huge.html").read_text()
    cut = name[:10_000] + f"…(+{len(name) - 10_000} characters)"
    assert json.dumps(cut)[1:-1] in page or cut in page
    assert "x" * 10_001 not in page


def test_report_error_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": 3}')
    res = pyprof("report", bad, "-o", tmp_path / "bad.html")
    assert_clean(res, 1)
    assert res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith(f"pyprof report: error: pyprof parse {bad} failed: {bad}: "), \
        res.stderr


def test_report_into_a_closed_pipe_ends_quietly(inputs, tmp_path):
    """`pyprof report ... | head -0`: the page is written, the line saying so meets a closed
    pipe; the status is the C++ tools' (141), without a BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        res = subprocess.run([PY, "-m", "pyprof", "report", inputs[0], "-o", tmp_path / "p.html"],
                             stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300,
                             env=pyprof_env())
    finally:
        os.close(write_end)
    assert_clean(res, 128 + signal.SIGPIPE)
    assert "BrokenPipeError" not in res.stderr and "Exception ignored" not in res.stderr
    assert (tmp_path / "p.html").stat().st_size > 0
