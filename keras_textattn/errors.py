"""The one exception type for a user's mistakes, and the checks that raise it."""

import re

import numpy as np


class UserError(ValueError):
    """A mistake in the arguments, files or folders a user gave (not a bug of ours).

    The command line prints it as one `keras-textattn: error: ...` line and exits 2;
    every other exception keeps its traceback. A `ValueError`, so code that catches
    `ValueError` around the Python API keeps working.
    """


def check_whole(name, value, minimum=1):
    """`value` is a whole number of at least `minimum` (1: a positive one), else a `UserError`
    naming the option `name` as the command line spells it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = "a positive whole number" if minimum == 1 else f"a whole number of at least {minimum}"
        raise UserError(f"{name} must be {wanted}; got {value!r}")
    return value


def check_flag(name, value):
    """`value` is True or False (a NumPy bool too), else a `UserError` naming the argument `name`:
    a string such as "False" or "no" would otherwise be read as true. Returns it as a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise UserError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def check_verbose(verbose):
    """`verbose` is what Keras's `fit` takes (0, 1, 2 or "auto"), else a `UserError` before any work."""
    if isinstance(verbose, bool) or verbose not in (0, 1, 2, "auto"):
        raise UserError(f"verbose must be 0 (silent), 1 (progress bars), 2 (a line an epoch) or 'auto'; got {verbose!r}")


def check_batch_size(batch_size):
    """`batch_size` (texts per model call) is a positive whole number, else a `UserError`."""
    check_whole("batch-size", batch_size)


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


def check_texts(texts):
    """`texts` as a list: one string (str or bytes) is one text, a list, tuple, NumPy array or
    other iterable of them is many; strs are `valid_unicode`. Anything else, or an item that is
    not a string (None, a number), is a `UserError` naming it, not TensorFlow's error from
    inside the model call."""
    if isinstance(texts, (str, bytes)):
        texts = [texts]
    try:
        texts = list(texts)
    except TypeError:
        raise UserError(f"texts must be a string or a list of strings; got {type(texts).__name__}") from None
    for index, text in enumerate(texts):
        if not isinstance(text, (str, bytes)):
            raise UserError(f"texts must be strings; item {index} is {text!r:.60} ({type(text).__name__})")
    return [valid_unicode(text) if isinstance(text, str) else text for text in texts]


def check_answered(probabilities, texts, who):
    """A `UserError` where `who` (a run, a model) gives NaN or infinity for any of `texts`
    (`probabilities`: `(len(texts), classes)`): its weights diverged, or a model of one's own
    averages over an empty text's no tokens. Never a "nan" probability in an answer."""
    unanswered = ~np.isfinite(probabilities).all(axis=-1)
    if unanswered.any():
        first = texts[int(np.argmax(unanswered))]
        first = first.decode("utf-8", "replace") if isinstance(first, bytes) else first
        raise UserError(f"{who} gives no probabilities (NaN) for {int(unanswered.sum())} of the {len(texts)} texts, "
                        f"the first {first!r:.60}: its weights are not numbers (a run that diverged) or its model "
                        "averages over no tokens (an empty text)")
