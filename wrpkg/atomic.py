"""Publishing outputs so that an interrupted run never leaves a half-written one.

Bazel discards the outputs of a failed action, but `wrpkg capture` and `wrpkg pack` also run
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

import contextlib
import ctypes
import errno
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from wrpkg.errors import WrpError

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


@contextlib.contextmanager
def staged(output: Path, error: type[WrpError], writing: str, left: str, rerun: str) -> Iterator[Path]:
    """A staging dir for `output` (see staging_dir), removed whatever happens. An OSError while
    writing becomes `error` saying what was left untouched (`left`) and how to retry."""
    staging = staging_dir(output)
    try:
        yield staging
    except OSError as exc:
        raise error(
            f"{writing} failed ({exc.strerror or exc}: {exc.filename or staging}); {left}",
            fix=f"free disk space (or fix the permission) and {rerun}",
        ) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


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


def write_staged(path: Path, data: bytes) -> None:
    """Writes a file that is about to be published, flushed to disk so a crash after the
    rename cannot leave it empty."""
    with open(path, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def write_file(output: Path, data: bytes) -> None:
    """Replaces `output` with `data` in one rename; on failure `output` is left as it was."""
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
    os.close(fd)
    try:
        write_staged(Path(tmp), data)
        os.chmod(tmp, 0o644)
        publish_file(Path(tmp), output)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
