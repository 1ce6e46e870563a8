"""The exception types for a user's mistakes, and every argument check: those of training's
options (a `RunError` naming the option as the command line does) and those of the layers and
builders (a `ValueError` in Keras's form: `LAMA: num_heads must be ... Received: num_heads=...`).

They import no TensorFlow (nor Keras), so that the command line checks its arguments before
the seconds TensorFlow's import takes. `keras_textattn.errors` re-exports them.
"""

import math
import numbers
import re

import numpy as np


class UserError(ValueError):
    """A mistake in the arguments, files or folders a user gave (not a bug of ours).

    The command line prints it as one `keras-textattn: error: ...` line and exits 2;
    every other exception keeps its traceback. A `ValueError`, so code that catches
    `ValueError` around the Python API keeps working.
    """


class RunError(UserError):
    """A user's mistake in a run's arguments or files, reported by the CLI as one line."""


def check_flag(name, value):
    """`value` is True or False (a NumPy bool too), else a `UserError` naming the argument `name`:
    a string such as "False" or "no" would otherwise be read as true. Returns it as a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise UserError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_whole(name, value, minimum=1):
    """`value` is a whole number of at least `minimum` (1: a positive one), else a `UserError`
    naming the option `name` as the command line spells it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = "a positive whole number" if minimum == 1 else f"a whole number of at least {minimum}"
        raise UserError(f"{name} must be {wanted}; got {value!r}")
    return value


def check_positive(name, value):
    """`value` is None or a finite number above 0, else a `RunError` naming `name` as a flag
    (NaN trained a model of NaNs)."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0
    ):
        raise RunError(f"{name.replace('_', '-')} must be a positive number; got {value!r}")


def check_count(name, value):
    """`value` is None or a positive whole number (`check_positive`'s message first)."""
    check_positive(name, value)
    if value is not None and not isinstance(value, int):
        raise RunError(f"{name.replace('_', '-')} must be a whole number; got {value!r}")


def check_one_of(name, value, choices, flag=None):
    """`value` is None or one of `choices`, else a `RunError` naming the option and the choices."""
    if value is not None and value not in choices:
        where = f" ({flag})" if flag else ""
        raise RunError(f"{name}{where} must be one of {', '.join(map(str, choices))}; got {value!r}")


def check_verbose(verbose):
    """`verbose` is what Keras's `fit` takes (0, 1, 2 or "auto"), else a `UserError` before any work."""
    if isinstance(verbose, bool) or verbose not in (0, 1, 2, "auto"):
        raise UserError(
            f"verbose must be 0 (silent), 1 (progress bars), 2 (a line an epoch) or 'auto'; got {verbose!r}"
        )


SEEDS = 2**32  # NumPy's legacy seeding, which Keras's `set_random_seed` uses, takes 0 to 2**32 - 1


def check_seed(seed):
    """`seed` is a whole number from 0 to 2**32 - 1 (what Keras and NumPy take), else a `UserError`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEEDS:
        raise UserError(f"seed must be a whole number from 0 to {SEEDS - 1}; got {seed!r}")


def valid_unicode(text):
    """`text` (a str) with its lone surrogates made U+FFFD, as the encoder reads bytes that are
    not UTF-8. Python keeps such bytes of command-line arguments as U+DC80-U+DCFF: decoded as the
    bytes they stand for; other lone surrogates (JSON's "\\ud800") replaced. TensorFlow refused
    either ("Error converting unicode string")."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", "\ufffd", text)


# The layers' and builders' arguments, in Keras's form.


def check_positive_int(layer_name, arg_name, value, allow_none=False):
    """Raise a `ValueError` unless `value` is a positive int (or None if allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        expected = "a positive integer" + (" or None" if allow_none else "")
        raise ValueError(f"{layer_name}: `{arg_name}` must be {expected}. Received: {arg_name}={value!r}")


def check_number(layer_name, arg_name, value, low, high=math.inf, low_included=True):
    """Raise a `ValueError` unless `value` is a real number (not a bool) in [low, high) ((low, high)
    without `low_included`): never NaN, and never inf, even where `high` is unbounded."""
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (number and (low <= value if low_included else low < value) and value < high):
        if high == math.inf:
            expected = f"a finite number {'>=' if low_included else '>'} {low}"
        else:
            expected = f"a number in {'[' if low_included else '('}{low}, {high})"
        raise ValueError(f"{layer_name}: `{arg_name}` must be {expected}. Received: {arg_name}={value!r}")


def check_bool(layer_name, arg_name, value):
    """Raise a `ValueError` unless `value` is True or False (a NumPy bool too): a string such as
    "False" or "no" would otherwise be read as true."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{layer_name}: `{arg_name}` must be True or False. Received: {arg_name}={value!r}")


def check_choice(layer_name, arg_name, value, choices):
    """Raise a `ValueError` unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(
            f"{layer_name}: `{arg_name}` must be one of {sorted(c for c in choices if c is not None)}"
            f"{' or None' if None in choices else ''}. Received: {arg_name}={value!r}"
        )
