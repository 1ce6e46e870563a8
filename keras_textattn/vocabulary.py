"""The reserved token ids, the CJK character sets and HCAN's sentence rows, shared by the
encoder, the models and the clients (no dependencies).

Id 0 pads a text to its sequence length (every model masks it); id 1 is a token that is
not in the vocabulary; the vocabulary's tokens follow, most frequent first.
"""

PAD_ID = 0
OOV_ID = 1
RESERVED = 2  # ids before the first vocabulary token

# CJK ideographs: the CJK Unified Ideographs block, its extensions A to I and the compatibility
# ideographs (the blocks BERT's tokenizer splits). Chinese and Japanese put no spaces between
# words, so with `TextEncoder(split_cjk=True)` each ideograph is a token of its own.
CJK_IDEOGRAPHS = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2EE5F),
    (0x2F800, 0x2FA1F),
    (0x30000, 0x323AF),
)
# Where HCAN's texts split into sentences (a pattern for RE2 and Python's re alike): runs of `.`,
# `!` and `?` (the paper's rule); with `split_cjk` also the ideographic full stop and the fullwidth /
# halfwidth forms of `!`, `.`, `?` and the ideographic full stop.
SENTENCE_END = "[.!?]+"
CJK_SENTENCE_END = "[.!?\u3002\uff01\uff0e\uff1f\uff61]+"


def sentence_rows(lengths, width, max_rows=None):
    """Which rows a hierarchical text of sentences with `lengths` tokens is read as (HCAN's
    `TextEncoder(split_long_sentences=True)`): `[(sentence, first token)]` in reading order. Each
    sentence's first `width` tokens are a row; the first `max_rows` sentences keep theirs, and
    rows left over (fewer sentences than `max_rows`) hold the rest of long sentences, `width`
    tokens each, in order. No sentence is dropped for the tail of another."""
    spare = float("inf") if max_rows is None else max(max_rows - len(lengths), 0)
    rows, tails = [], 0
    for sentence, length in enumerate(lengths):
        for start in range(0, length, width):
            if start == 0:
                keep = max_rows is None or sentence < max_rows
            else:
                keep, tails = tails < spare, tails + 1
            if keep:
                rows.append((sentence, start))
    return rows


def window_starts(count, width, stride):
    """Where each window over a text of `count` units (tokens, or a hierarchical text's sentences)
    starts, the rule of `TextEncoder.windows`: a text of at most `width` units is one window from
    0; a longer one has windows `stride` apart, the last moved back to end with the text."""
    over = max(count - width, 0)  # units past the first window
    return [min(window * stride, over) for window in range(-(-over // stride) + 1)]
