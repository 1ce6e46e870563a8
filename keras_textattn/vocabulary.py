"""The reserved token ids, shared by the encoder, the models and the clients (no dependencies).

Id 0 pads a text to its sequence length (every model masks it); id 1 is a token that is
not in the vocabulary; the vocabulary's tokens follow, most frequent first.
"""

PAD_ID = 0
OOV_ID = 1
RESERVED = 2  # ids before the first vocabulary token
