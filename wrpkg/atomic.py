"""Publishing outputs so that an interrupted run never leaves a half-written one.

Bazel discards the outputs of a failed action, but `wrpkg capture` and `wrpkg bundle` also run
by hand, where a kill or a full disk mid-way must leave the previous output as it was. Every
output is built in a hidden staging directory next to it (same filesystem, so renames are
atomic) and published by rename:

- a directory replaces a previous one with renameat2(RENAME_EXCHANGE), one atomic swap; the
  old tree is deleted afterwards. Filesystems without it get two renames, and a kill between
  them leaves the old tree beside the output under a hidden name.
- a file replaces a previous one with rename(2).

Staging directories carry the creating process's id; a later run removes those whose process
is gone (what a kill leaves behind).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import tempfile
from pathlib import Path

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_STAGING = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_abandoned_staging(output: Path) -> None:
    """Removes staging dirs of `output` left by runs that were killed."""
    parent = output.parent
    if not parent.is_dir():
        return
    for entry in parent.iterdir():
        match = _STAGING.match(entry.name)
        if match and match["name"] == output.name and not _process_alive(int(match["pid"])):
            shutil.rmtree(entry, ignore_errors=True)


def staging_dir(output: Path) -> Path:
    """A fresh hidden directory beside `output`, for building it."""
    output.parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned_staging(output)
    return Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-{os.getpid()}-", dir=output.parent))


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swaps two paths; False where the kernel or filesystem cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def publish_dir(staged: Path, output: Path) -> None:
    """Puts the finished directory `staged` at `output`, replacing what is there in one step."""
    if output.is_symlink() or (output.exists() and not output.is_dir()):
        raise OSError(errno.ENOTDIR, "exists and is not a directory", str(output))
    if not output.exists():
        os.rename(staged, output)
        return
    if _exchange(staged, output):
        shutil.rmtree(staged, ignore_errors=True)  # now the previous tree
        return
    old = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-{os.getpid()}-old-", dir=output.parent))
    os.rename(output, old / "previous")
    os.rename(staged, output)
    shutil.rmtree(old, ignore_errors=True)


def publish_file(staged: Path, output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged, output)
