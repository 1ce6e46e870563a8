"""Metrics for the classifiers (`keras.ops` only: any Keras 3 backend)."""

import keras
from keras import ops


def all_labels_right(y_true, y_pred):
    """1.0 for each row whose every label is decided right at threshold 1/2, else 0.0."""
    right = ops.equal(ops.cast(y_true > 0.5, "int32"), ops.cast(y_pred >= 0.5, "int32"))
    return ops.cast(ops.all(right, axis=-1), "float32")


@keras.saving.register_keras_serializable(package="keras_textattn")
class SubsetAccuracy(keras.metrics.MeanMetricWrapper):
    """The share of rows whose every label is decided right at threshold 1/2 (multi-label's exact
    match): what training logs as "accuracy" for multi-label data. A run's own thresholds are
    chosen after training (`keras_textattn.multi_label`).

    Shapes: `y_true` `(batch, labels)` of 0/1; `y_pred` `(batch, labels)` probabilities.
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(all_labels_right, name=name, dtype=dtype)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}
