"""Texts that every export is verified on: vocabulary words and the inputs that break pipelines."""

import numpy as np

from keras_textattn.vocabulary import RESERVED

# Empty, blank, invalid UTF-8, control characters, a 1 MB text.
HOSTILE_TEXTS = (b"", b"   \n\t", b"\xff\xfe\x80 invalid UTF-8 \xc3", b"\x00\x01 control", b"word " * 200_000)


def probe_texts(encoder, count=32, seed=0):
    """`count` texts of 1 to 60 random vocabulary tokens (with sentence ends), then `HOSTILE_TEXTS`."""
    vocabulary = encoder.get_vocabulary()[RESERVED:]
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(count):
        words = rng.choice(vocabulary, size=rng.integers(1, 61)).tolist()
        for position in rng.integers(0, len(words), size=len(words) // 10):
            words[position] += "."
        texts.append(" ".join(words).encode("utf-8"))
    return texts + list(HOSTILE_TEXTS)
