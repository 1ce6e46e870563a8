"""Raw strings to token ids, in the TensorFlow graph (TensorFlow backend only)."""

from keras_textattn.text.encoder import TextEncoder
from keras_textattn.text.lengths import choose_lengths
from keras_textattn.text.lengths import choose_open_lengths
from keras_textattn.text.vectors import write_word2vec

__all__ = ["TextEncoder", "choose_lengths", "choose_open_lengths", "write_word2vec"]
