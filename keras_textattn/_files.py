"""Writing files and folders so that an interrupted process never leaves a half-written one."""

import contextlib
import errno
import fcntl
import glob
import os
import shutil
import tempfile
import time

from keras_textattn.errors import UserError

# A write refused for want of room: the disk is full (ENOSPC), or the user's quota on it is
# used up (EDQUOT: shared clusters; the file system's free space does not show it).
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class FolderInUseError(UserError):
    """Another process holds the lock of a folder (see `locked`)."""


def check_parents(path):
    """A `UserError` naming the first of `path`'s folders that is a file: `os.makedirs` says only
    "[Errno 17] File exists" of `predict --output data/small.csv/p.csv`."""
    parent = os.path.dirname(os.fspath(path))
    while parent and not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if parent and os.path.exists(parent) and not os.path.isdir(parent):
        raise UserError(f"{parent} is a file, not a folder; give a path whose folders are folders")


def make_folders(folder):
    """`os.makedirs(folder, exist_ok=True)`, with `check_parents`'s line where a part of it is a file."""
    check_parents(os.path.join(os.fspath(folder), "x"))
    os.makedirs(folder, exist_ok=True)


def check_room(path, needed):
    """An `OSError` ENOSPC (a full disk) or EDQUOT (a used-up quota), naming `path`, when the
    folder of `path` has less room than `needed` bytes. Where the OS has `posix_fallocate`
    (Linux), the room is asked of the file system by allocating it in a file removed at once,
    which counts the user's quota; elsewhere (macOS), or on a file system that allocates nothing
    ahead, it is the file system's free space."""
    folder = os.path.dirname(os.path.abspath(path))
    if hasattr(os, "posix_fallocate"):
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".room-")
        try:
            os.posix_fallocate(handle, 0, needed)
            return
        except OSError as error:
            if error.errno in NO_SPACE_ERRNOS:
                raise OSError(error.errno, os.strerror(error.errno), path) from None
            # another refusal (EOPNOTSUPP, EINVAL): the free space, below
        finally:
            os.close(handle)
            os.remove(probe)
    if shutil.disk_usage(folder).free < needed:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def write_atomically(path, write):
    """Call `write(temporary_path)`, then move the finished file to `path` in one step (its
    folder is made if missing); a `UserError` if `path` is a folder."""
    if os.path.isdir(path):
        raise UserError(f"{os.path.abspath(path)} is a folder; give the path of a file to write")
    folder = os.path.dirname(os.path.abspath(path))
    make_folders(folder)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    os.close(handle)
    try:
        write(temporary)
        os.chmod(temporary, 0o644)  # mkstemp makes files private
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def write_text(path, text):
    """Write `text` (UTF-8) to `path` atomically."""

    def write(temporary):
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)

    write_atomically(path, write)


@contextlib.contextmanager
def locked(folder):
    """Hold an exclusive lock on `folder` (a run folder, an export target) while the block runs.

    The lock is a file beside the folder (`.<name>.lock`, holding the owner's process
    id), so that it stays put while the folder itself is moved or replaced; it is
    removed when the block ends, and the operating system releases the lock when the
    process ends, however it ends. A second process gets a `FolderInUseError` naming
    the process that holds it.
    """
    parent, name = os.path.split(os.path.abspath(folder))
    make_folders(os.path.dirname(os.fspath(folder)) or ".")
    path = os.path.join(parent, f".{name}.lock")
    while True:
        handle = open(path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            if error.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise FolderInUseError(f"{folder} is in use by process {owner}; wait for it to finish or stop it") from None
        # The holder before us may have removed the file after we opened it: lock the file at `path`.
        if os.path.exists(path) and os.path.samestat(os.fstat(handle.fileno()), os.stat(path)):
            break
        handle.close()
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        os.remove(path)
        handle.close()


def lock_holder(folder):
    """`(process id, start time)` of the process that holds `folder`'s lock (`locked`) while it
    runs, else None: no lock file, or one a killed process left."""
    parent, name = os.path.split(os.path.abspath(folder))
    path = os.path.join(parent, f".{name}.lock")
    try:
        with open(path, encoding="utf-8") as handle:
            pid = int(handle.read().strip())
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(path)))
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)  # signal 0: is it alive?
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return pid, started


def refuse_overlap(source, target):
    """Raise `UserError` if the folder `target` is `source`, lies inside it or contains it
    (writing it would destroy the source)."""
    source, target = os.path.realpath(source), os.path.realpath(target)
    if source == target or target.startswith(source + os.sep) or source.startswith(target + os.sep):
        raise UserError(
            f"the output {target} is, contains or lies inside the run folder {source}; "
            "choose an output outside the run folder"
        )


def recover_folder_swap(path):
    """Finish a replacement of the folder `path` that a killed process left halfway.

    `write_folder_atomically` renames the old folder to `.old-<name>` and then the new
    one into place. Killed between the two renames, `path` is missing: the old folder
    is moved back (the new one is lost; run the export again). Killed after them,
    only the old copy is left to delete. Returns True if anything was recovered.
    """
    parent, name = os.path.split(os.path.abspath(path))
    old = os.path.join(parent, f".old-{name}")
    if not os.path.isdir(old):
        return False
    if os.path.exists(path):
        shutil.rmtree(old)
    else:
        os.replace(old, path)
    return True


def as_items(value):
    """`value`'s items as a list where it is a list, tuple, generator (Path.glob) or NumPy array;
    None for anything else (bytes and dicts are iterable, but not lists of items)."""
    iterable = hasattr(value, "__iter__") and not isinstance(value, (bytes, dict))
    return list(value) if iterable else None


def as_paths(paths):
    """One path, or a list of paths, as a list of paths (None as none); a `UserError` for
    anything else."""
    if paths is None:
        return []
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    items = as_items(paths)
    if items is None or not all(isinstance(item, (str, os.PathLike)) for item in items):
        raise UserError(f"expected a path or a list of paths; got {paths!r}")
    return items


def check_output(path, overwrite, entries, source=None):
    """Check a folder to be written before the slow work that writes it.

    Finishes a replacement of `path` that a killed process left halfway
    (`recover_folder_swap`), then raises `UserError` if `path` is the folder `source`
    (a run folder, or each of a list of them), lies inside it or contains it, or is a file;
    `FileExistsError` if `path` exists and `overwrite` is False; and, with `overwrite`, a
    `UserError` if the folder holds an entry that is not one of `entries`, the names its
    writer writes: `overwrite` replaces an earlier output of the same kind, never a folder
    of other files (a TF Serving model's parent folder of versions, say), as `train` does.
    """
    check_path(path)
    recover_folder_swap(path)
    for folder in as_paths(source or []):
        refuse_overlap(folder, path)
    check_output_file(path, overwrite, folder=True)
    if os.path.isdir(path):
        foreign = sorted(name for name in os.listdir(path) if name not in entries)
        if foreign:
            raise UserError(
                f"{os.path.abspath(path)} holds {', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}, "
                "which this command does not write; --overwrite replaces only an earlier output of it, "
                "nothing was changed: choose another output"
            )


def check_path(path, name="the output"):
    """A `UserError` unless `path` is a non-empty path (an empty one would name the working folder)."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise UserError(f"{name} must be a path to write to; got {path!r}")


def check_output_file(path, overwrite, folder=False):
    """Before the slow work that writes `path` (a file, or with `folder` a folder): a `UserError`
    if it is a folder (a file), and `FileExistsError` if it exists and `overwrite` is False."""
    check_path(path)
    check_parents(path)
    wanted, found = ("folder", "file") if folder else ("file", "folder")
    if os.path.exists(path) and os.path.isdir(path) != folder:
        raise UserError(f"{os.path.abspath(path)} is a {found}; give the path of a {wanted} to write")
    refuse_existing(path, overwrite)


def refuse_writing_over(path, reads):
    """A `UserError` where `path`, a file to write, is one of the files `reads` that the command
    reads: with --overwrite, `predict --data x.csv --output x.csv` replaced the texts with their labels."""
    for read in reads:
        if os.path.exists(path) and os.path.exists(read) and os.path.samefile(path, read):
            raise UserError(
                f"{os.path.abspath(path)} is a file this command reads (--data); give another path to write"
            )


def refuse_existing(path, overwrite):
    """`FileExistsError` if `path` exists and `overwrite` is False."""
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(
            f"{os.path.abspath(path)} already exists; pass overwrite=True (--overwrite) to replace it"
        )


def write_folder_atomically(path, write, entries, overwrite=False):
    """Call `write(temporary_folder)`, then rename the finished folder to `path`.

    The temporary folder is a hidden sibling of `path` (same file system, so the
    rename is atomic) and is removed if `write` fails or the process is stopped
    with an exception. An existing `path` is refused unless `overwrite` and it holds only
    `entries` (`check_output`); it is then replaced only once the new folder is complete, by two
    renames that the next call finishes or rolls back if a kill falls between them (`recover_folder_swap`).
    The folder is locked (`locked`) meanwhile.

    Raises:
        FileExistsError: `path` exists and `overwrite` is False.
        UserError: `path` is a file, or holds an entry not in `entries`.
        FolderInUseError: another process is writing `path`.
    """
    path = os.path.abspath(path)
    with locked(path):
        check_output(path, overwrite, entries)
        _write_and_swap(path, write)


def _write_and_swap(path, write):
    parent, name = os.path.split(path)
    for stale in glob.glob(os.path.join(glob.escape(parent), f".tmp-{glob.escape(name)}-*")):
        shutil.rmtree(stale, ignore_errors=True)  # a killed write's (the lock says none is running)
    temporary = tempfile.mkdtemp(dir=parent, prefix=f".tmp-{name}-")
    try:
        write(temporary)
        os.chmod(temporary, 0o755)  # mkdtemp makes folders private
        if os.path.exists(path):
            old = os.path.join(parent, f".old-{name}")  # a fixed name, for `recover_folder_swap`
            os.replace(path, old)
            os.replace(temporary, path)
            shutil.rmtree(old)
        else:
            os.replace(temporary, path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
