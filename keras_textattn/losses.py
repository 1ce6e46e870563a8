"""Losses for the classifiers (`keras.ops` only: any Keras 3 backend)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_textattn")
class SmoothedSparseCategoricalCrossentropy(keras.losses.Loss):
    """Cross-entropy of integer labels against label-smoothed targets (Szegedy et al., 2016, sec. 7).

    The target of an example of class y among K classes is `1 - label_smoothing + label_smoothing / K`
    for y and `label_smoothing / K` for every other class: Keras's
    `CategoricalCrossentropy(label_smoothing=...)` of the one-hot labels, for the integer labels the
    datasets give (Keras's `SparseCategoricalCrossentropy` takes no smoothing). With 0 it is the
    sparse cross-entropy. `train(label_smoothing=...)` compiles with it.

    Args:
        label_smoothing: a number in [0, 1).
        reduction, name, dtype: as `keras.losses.Loss`'s.

    Shapes: `y_true` (batch,) or (batch, 1) integer labels; `y_pred` (batch, K) probabilities;
    the loss of each example (batch,) before the reduction.
    """

    def __init__(
        self,
        label_smoothing=0.0,
        reduction="sum_over_batch_size",
        name="smoothed_sparse_categorical_crossentropy",
        dtype=None,
    ):
        if (
            isinstance(label_smoothing, bool)
            or not isinstance(label_smoothing, (int, float))
            or not 0 <= label_smoothing < 1
        ):
            raise ValueError(f"label_smoothing must be a number in [0, 1); got {label_smoothing!r}")
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.label_smoothing = float(label_smoothing)

    def call(self, y_true, y_pred):
        if len(y_true.shape) == len(y_pred.shape):
            y_true = ops.squeeze(y_true, axis=-1)
        targets = ops.one_hot(ops.cast(y_true, "int32"), ops.shape(y_pred)[-1], dtype=y_pred.dtype)
        return keras.losses.categorical_crossentropy(targets, y_pred, label_smoothing=self.label_smoothing)

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}
