"""Sequence shapes chosen from the texts themselves, for runs that do not give them."""

import math

import numpy as np
import tensorflow as tf

from keras_textattn.text.encoder import TextEncoder

PERCENTILE = 95
SAMPLE = 2000  # texts read, from the start of the training data
# (smallest, largest): a longer text is cut, a shorter one padded.
TOKENS = (8, 256)
WORDS_PER_SENTENCE = (8, 64)
SENTENCES = (1, 30)


def _cover(counts, limits, multiple=1):
    """The `PERCENTILE`th percentile of `counts`, rounded up to `multiple`, within `limits`."""
    value = float(np.percentile(counts, PERCENTILE)) if len(counts) else limits[0]
    return int(min(max(math.ceil(value / multiple) * multiple, limits[0]), limits[1]))


def _token_counts(texts, hierarchical=False):
    """`TextEncoder.count_tokens` of the first `SAMPLE` of `texts` (strings or `(text, label)`
    pairs), by batch."""
    if isinstance(texts.element_spec, tuple):
        texts = texts.map(lambda text, *_: text)
    counter = TextEncoder(hierarchical=hierarchical)
    return [counter.count_tokens(batch) for batch in texts.take(SAMPLE).batch(1024).prefetch(tf.data.AUTOTUNE)]


def choose_lengths(texts, hierarchical=False, longest=None, split_long_sentences=False):
    """The sequence shape that covers 95% of `texts` whole.

    Args:
        texts: a `tf.data.Dataset` of strings or of `(text, label)` pairs (the
            training split); its first 2,000 texts are read.
        hierarchical: also choose sentences per text (words per sentence is then
            the sequence length), as HCAN reads texts.
        longest: the most tokens per text chosen (flat texts; a model's
            `ModelSpec.longest_text`); None: 256.

    Returns:
        `{"sequence_length": tokens per text (a multiple of 8, 8 to `longest`)}`; when
        hierarchical, words per sentence (8 to 64) and `"max_sentences"` (1 to 30): sentences,
        or with `split_long_sentences` (as `TextEncoder`'s) the rows of that many words that
        read a text whole, a longer sentence taking several.
    """
    counts = _token_counts(texts, hierarchical)
    if not hierarchical:
        return {"sequence_length": _cover(np.concatenate([[]] + counts), (TOKENS[0], longest or TOKENS[1]), multiple=8)}
    sentences = np.concatenate([[]] + [c[0] for c in counts]).astype(int)
    words = np.concatenate([[]] + [c[1] for c in counts])
    width = _cover(words, WORDS_PER_SENTENCE, multiple=8)
    if split_long_sentences:  # rows that read each text whole, a sentence of more than `width` words taking several
        sentences = np.bincount(
            np.repeat(np.arange(len(sentences)), sentences), weights=np.ceil(words / width), minlength=len(sentences)
        )
    return {"sequence_length": width, "max_sentences": _cover(sentences, SENTENCES)}


def choose_open_lengths(options, texts, longest=None):
    """The `TextEncoder` lengths that `options` (its arguments) leaves None, chosen from
    `texts` by `choose_lengths` (at most `longest` tokens; rows of words with the options'
    `split_long_sentences`): `{}` when every length is given."""
    hierarchical = options.get("hierarchical", False)
    if options.get("sequence_length") is not None and (not hierarchical or options.get("max_sentences") is not None):
        return {}
    chosen = choose_lengths(
        texts,
        hierarchical=hierarchical,
        longest=longest,
        split_long_sentences=bool(options.get("split_long_sentences")),
    )
    return {name: value for name, value in chosen.items() if options.get(name) is None}


def texts_cut(texts, sequence_length):
    """`(share, tokens)`: the share of `texts` (flat; the first 2,000) longer than
    `sequence_length` tokens, and the length that would hold 95% of them whole (a
    multiple of 8), for a run to say what its length leaves out."""
    counts = np.concatenate([[]] + _token_counts(texts))
    if not len(counts):
        return 0.0, TOKENS[0]
    return float(np.mean(counts > sequence_length)), _cover(counts, (TOKENS[0], math.inf), multiple=8)
