"""TFDS names and local files to `tf.data` (TensorFlow backend only)."""

from keras_textattn.datasets.formats import DataError
from keras_textattn.datasets.formats import LocalFile
from keras_textattn.datasets.formats import is_local_path
from keras_textattn.datasets.pipeline import check_class_weight
from keras_textattn.datasets.pipeline import encoded_rows
from keras_textattn.datasets.pipeline import inference_batch_size
from keras_textattn.datasets.pipeline import keeps_ids
from keras_textattn.datasets.pipeline import make_batches
from keras_textattn.datasets.pipeline import sample_rows
from keras_textattn.datasets.pipeline import weigh_classes
from keras_textattn.datasets.pipeline import weigh_labels
from keras_textattn.datasets.sources import load_dataset
from keras_textattn.datasets.sources import load_labelled_data
from keras_textattn.datasets.sources import resolve_source
from keras_textattn.datasets.splits import TextClassificationData

__all__ = [
    "DataError",
    "check_class_weight",
    "encoded_rows",
    "LocalFile",
    "TextClassificationData",
    "inference_batch_size",
    "is_local_path",
    "keeps_ids",
    "load_dataset",
    "load_labelled_data",
    "make_batches",
    "resolve_source",
    "sample_rows",
    "weigh_classes",
    "weigh_labels",
]
