"""Writing files and folders so that an interrupted process never leaves a half-written one."""

import os
import shutil
import tempfile


def write_atomically(path, write):
    """Call `write(temporary_path)`, then move the finished file to `path` in one step."""
    folder = os.path.dirname(os.path.abspath(path))
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


def refuse_existing(path, overwrite):
    """Raise `FileExistsError` if `path` exists and `overwrite` is False."""
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{os.path.abspath(path)} already exists; pass overwrite=True (--overwrite) to replace it")


def write_folder_atomically(path, write, overwrite=False):
    """Call `write(temporary_folder)`, then rename the finished folder to `path`.

    The temporary folder is a hidden sibling of `path` (same file system, so the
    rename is atomic) and is removed if `write` fails or the process is stopped
    with an exception. An existing `path` is refused unless `overwrite`; it is then
    replaced only once the new folder is complete.

    Raises:
        FileExistsError: `path` exists and `overwrite` is False.
    """
    path = os.path.abspath(path)
    refuse_existing(path, overwrite)
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(dir=parent, prefix=f".tmp-{name}-")
    try:
        write(temporary)
        os.chmod(temporary, 0o755)  # mkdtemp makes folders private
        if os.path.exists(path):
            replaced = tempfile.mkdtemp(dir=parent, prefix=f".old-{name}-")
            os.replace(path, os.path.join(replaced, name))
            os.replace(temporary, path)
            shutil.rmtree(replaced)
        else:
            os.replace(temporary, path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
