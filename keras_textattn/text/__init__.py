"""Raw strings to token ids, in the TensorFlow graph (TensorFlow backend only)."""

from keras_textattn.text.encoder import TextEncoder
from keras_textattn.text.lengths import choose_lengths
from keras_textattn.text.lengths import choose_open_lengths

__all__ = ["TextEncoder", "choose_lengths", "choose_open_lengths"]
