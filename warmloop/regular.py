"""Files warmloop reads or writes by a name a user gave (a batch file, a request log, an HTML
page, a saved opening) must be regular files: each is opened without blocking and checked
before a byte moves, so a FIFO or a device named in a file's place is refused at once, never
waited on (opening a FIFO to write blocks until a reader comes; to read, until a writer
does), and a device such as /dev/zero is never read until memory runs out."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

NOT_REGULAR = "it is not a regular file"


def open_regular(path: Path, flags: int, mode: int = 0o600) -> int:
    """A blocking descriptor on the regular file `path`, opened with `flags` (and `mode`
    where it is created). OSError when it cannot be opened, or (strerror `NOT_REGULAR`)
    when it is a FIFO, a device, a socket or a directory."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO no one reads, opened to write
            raise OSError(errno.ENXIO, NOT_REGULAR, str(path)) from exc
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, NOT_REGULAR, str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
