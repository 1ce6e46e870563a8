"""The exception type for a user's mistakes and the checks that raise it (defined in
`keras_textattn_config.checks`, which imports no TensorFlow), and the checks of texts and answers."""

import numpy as np

from keras_textattn_config.checks import SEEDS  # noqa: F401 (re-exported)
from keras_textattn_config.checks import UserError
from keras_textattn_config.checks import check_flag  # noqa: F401
from keras_textattn_config.checks import check_seed  # noqa: F401
from keras_textattn_config.checks import check_verbose  # noqa: F401
from keras_textattn_config.checks import check_whole
from keras_textattn_config.checks import valid_unicode


def check_batch_size(batch_size):
    """`batch_size` (texts per model call) is a positive whole number, else a `UserError`."""
    check_whole("batch-size", batch_size)


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
        raise UserError(
            f"{who} gives no probabilities (NaN) for {int(unanswered.sum())} of the {len(texts)} texts, "
            f"the first {first!r:.60}: its weights are not numbers (a run that diverged) or its model "
            "averages over no tokens (an empty text)"
        )


LONG_TEXTS = ("cut", "windows")  # what a classifier or a SavedModel does with a text longer than the model reads


def check_long_texts(long_texts, stride, encoders):
    """A `UserError` unless `long_texts` is one of `LONG_TEXTS` and `stride` (None: the default)
    goes with it and is one every encoder of `encoders` can read windows at."""
    if long_texts not in LONG_TEXTS:
        raise UserError(f"long texts are read as one of {', '.join(LONG_TEXTS)}; got {long_texts!r}")
    if stride is not None and long_texts != "windows":
        raise UserError("a stride goes with reading long texts in windows (--long-texts windows)")
    if long_texts == "windows":
        for encoder in encoders:
            try:
                encoder.windows([], stride)
            except ValueError as error:
                raise UserError(str(error)) from None
