"""What the Python fronts (`pyprof report`, `pyprof prof --parquet`, `pyprof export` and `pyprof
diff` of a database) do with the files they are given, as the C++ tools do
(csrc/common/output_file.h, csrc/common/input_files.h):

- an output that is one of the command's inputs (the same path, or the same file through a
  symbolic or hard link) is refused before anything is written;
- a regular file, or a name not there yet, is replaced whole: written under a hidden temporary
  name beside it and renamed over it when complete (a symbolic link is kept and the file it
  names replaced; an overwritten file keeps its permissions);
- a device or a FIFO (`-o /dev/null`, `-o /dev/stdout`) is written in place, never replaced by
  a regular file;
- an input that is not a regular file (a FIFO, a device) is refused where the command reads it
  more than once, instead of waiting on it forever.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile


class FileError(Exception):
    """A file the command cannot use as given; the message says why."""


def file_kind(mode: int) -> str:
    """What kind of file a mode is, in words (as csrc/common/input_files.cpp says it)."""
    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def written_in_place(path: str) -> bool:
    """True for an existing device, FIFO or socket (through links): written, never replaced."""
    st = _stat(path)
    return st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)


def check_not_an_input(output: str, inputs: list[str | None]) -> None:
    """FileError when `output` is a regular file that is one of `inputs` (through any link)."""
    out = _stat(output)
    if out is None or not stat.S_ISREG(out.st_mode):
        return
    for path in inputs:
        st = _stat(path) if path else None
        if st is not None and (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            same = "" if path == output else " (the same file)"
            raise FileError(f"cannot write {output}: it is the input {path}{same}, which writing "
                            "would replace; name another output")


def check_regular_input(path: str, needs: str) -> None:
    """FileError unless `path` is a regular file (through links); `needs` says why one is."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise FileError(f"cannot open {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileError(f"{path} is {file_kind(st.st_mode)}, not a regular file: {needs}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def place(staged: str, destination: str) -> None:
    """Puts the complete file `staged` at `destination`: renamed over a regular file (or a new
    name), keeping the old file's permissions and a symbolic link's link; copied into a device
    or FIFO, which stays what it is."""
    if written_in_place(destination):
        with open(staged, "rb") as src, open(destination, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.unlink(staged)
        return
    target = os.path.realpath(destination)
    st = _stat(target)
    os.chmod(staged, st.st_mode & 0o7777 if st is not None else 0o666 & ~_umask())
    os.replace(staged, target)


def write_atomic(path: str, text: str) -> None:
    """Writes `text` (UTF-8) to `path` whole or not at all (see place()); on any failure, or an
    exception such as KeyboardInterrupt, no temporary is left."""
    if written_in_place(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    folder = os.path.dirname(os.path.realpath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        place(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
