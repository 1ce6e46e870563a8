"""Raw strings to token ids, in the TensorFlow graph (TensorFlow backend only)."""

from keras_textattn.text.encoder import TextEncoder

__all__ = ["TextEncoder"]
