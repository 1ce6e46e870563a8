"""TensorFlow's writers on a full disk."""

import contextlib
import errno
import os
import re

import tensorflow as tf


@contextlib.contextmanager
def full_disk_as_os_error():
    """Raise TensorFlow's report of a full disk (a `ResourceExhaustedError` from inside its save
    ops, whose traceback runs through them) as the `OSError` ENOSPC that Python's own writers
    raise, naming the file it was writing."""
    try:
        yield
    except tf.errors.ResourceExhaustedError as error:
        if os.strerror(errno.ENOSPC) not in error.message:
            raise
        written = re.search(rf"(/[^\s;]+); {os.strerror(errno.ENOSPC)}", error.message)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), written and written.group(1)) from None
