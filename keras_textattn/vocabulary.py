"""The reserved token ids and the CJK character sets, shared by the encoder, the models and
the clients (no dependencies).

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
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2A6DF), (0x2A700, 0x2EE5F),
    (0x2F800, 0x2FA1F), (0x30000, 0x323AF),
)
# Where HCAN's texts split into sentences (a pattern for RE2 and Python's re alike): runs of `.`,
# `!` and `?` (the paper's rule); with `split_cjk` also the ideographic full stop and the fullwidth /
# halfwidth forms of `!`, `.`, `?` and the ideographic full stop.
SENTENCE_END = "[.!?]+"
CJK_SENTENCE_END = "[.!?\u3002\uff01\uff0e\uff1f\uff61]+"
