"""TensorFlow's writers on a full disk."""

import contextlib
import os
import re

import tensorflow as tf

from keras_textattn._files import NO_SPACE_ERRNOS


@contextlib.contextmanager
def full_disk_as_os_error():
    """Raise TensorFlow's report of a full disk or a used-up quota (a `ResourceExhaustedError`
    from inside its save ops, whose traceback runs through them) as the `OSError` ENOSPC or
    EDQUOT that Python's own writers raise, naming the file it was writing."""
    try:
        yield
    except tf.errors.ResourceExhaustedError as error:
        for number in sorted(NO_SPACE_ERRNOS):
            if os.strerror(number) in error.message:
                written = re.search(rf"(/[^\s;]+); {re.escape(os.strerror(number))}", error.message)
                raise OSError(number, os.strerror(number), written and written.group(1)) from None
        raise
