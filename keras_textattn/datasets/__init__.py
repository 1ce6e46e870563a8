"""TFDS names and local files to `tf.data` (TensorFlow backend only)."""

from keras_textattn.datasets.loading import LocalFile
from keras_textattn.datasets.loading import TextClassificationData
from keras_textattn.datasets.loading import load_dataset
from keras_textattn.datasets.pipeline import make_batches

__all__ = ["LocalFile", "TextClassificationData", "load_dataset", "make_batches"]
