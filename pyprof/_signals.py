"""How the Python fronts end on a signal: no traceback, no file left behind.

A command that the `pyprof` front runs in Python (report, prof --parquet, export and diff of a
database) stages files (temporary folders, hidden temporaries beside its outputs) and runs
pyprof's C++ tools as children. SIGTERM (a scheduler's), SIGHUP and SIGINT (Ctrl-C) are
passed on to the running children, which remove their own temporaries as they end
(csrc/common/output_file.h), and raised in Python as an exception, so that every `finally` and
`with` on the way out removes the command's; then the command ends as the signal would have
ended it (SIGINT: a one-line note and exit status 130, no KeyboardInterrupt traceback).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_lock = threading.Lock()
_children: set[subprocess.Popen] = set()  # the running children, told of an ending signal
_ended_by: int | None = None  # the first ending signal: later ones only reach the children
# The main thread is starting a child: an exception raised there now would lose the child (it
# runs on, unknown, holding the command's pipes), so the handler leaves it to run().
_starting_in_main = False
_deferred: int | None = None


class Ended(BaseException):
    """SIGTERM or SIGHUP arrived (SIGINT is KeyboardInterrupt): the command unwinds and ends."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_for(signum: int):
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Ended(signum)


def _on_signal(signum, frame):
    global _ended_by, _deferred
    with _lock:
        first = _ended_by is None
        if first:
            _ended_by = signum
        children = list(_children)
    for child in children:
        try:
            child.send_signal(signum)
        except OSError:
            pass
    if not first:
        return  # a second Ctrl-C does not interrupt the cleanup the first one started
    if _starting_in_main:
        _deferred = signum
        return
    _raise_for(signum)


def end_on_signals() -> None:
    """Installs the handlers (in the main thread); a signal the parent left ignored (nohup,
    `cmd &` without job control) stays ignored."""
    for signum in ENDING_SIGNALS:
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, _on_signal)


def end_by(signum: int) -> None:
    """Ends the process by `signum` at its default disposition (status 128 + N to a shell)."""
    sys.stdout and sys.stdout.flush()
    sys.stderr and sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # not reached


def _raise_deferred(main: bool) -> None:
    global _deferred
    if main and _deferred is not None:
        signum, _deferred = _deferred, None
        _raise_for(signum)


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(args, **kwargs), its child told of an ending signal (end_on_signals()),
    also of one that came while it was starting, and, on any exception here, ended by SIGTERM
    rather than SIGKILL, so that it removes its temporaries first. Takes subprocess.run's
    capture_output as well as Popen's arguments."""
    global _starting_in_main
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    main = threading.current_thread() is threading.main_thread()
    if main:
        _starting_in_main = True
    try:
        child = subprocess.Popen(args, **kwargs)
    except BaseException:
        _starting_in_main = False if main else _starting_in_main
        _raise_deferred(main)
        raise
    if main:
        _starting_in_main = False
    with child:
        with _lock:
            _children.add(child)
            ended = _ended_by
        try:
            if ended is not None:
                child.send_signal(ended)  # it came while the child was starting
            _raise_deferred(main)
            out, err = child.communicate()
        except BaseException:
            child.terminate()
            try:
                child.wait(timeout=30)
            except BaseException:
                child.kill()
            raise
        finally:
            with _lock:
                _children.discard(child)
    return subprocess.CompletedProcess(args, child.returncode, out, err)
