"""Losses for the classifiers (`keras.ops` only: any Keras 3 backend)."""

import numbers

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
        _check_smoothing(label_smoothing)
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.label_smoothing = float(label_smoothing)

    def call(self, y_true, y_pred):
        if len(y_true.shape) == len(y_pred.shape):
            y_true = ops.squeeze(y_true, axis=-1)
        targets = ops.one_hot(ops.cast(y_true, "int32"), ops.shape(y_pred)[-1], dtype=y_pred.dtype)
        return keras.losses.categorical_crossentropy(targets, y_pred, label_smoothing=self.label_smoothing)

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


@keras.saving.register_keras_serializable(package="keras_textattn")
class LabelWeightedBinaryCrossentropy(keras.losses.Loss):
    """Binary cross-entropy of each label's 0/1 with a weight per label for its positive rows and
    one for its negative rows: the class weights of multi-label data, where Keras's `fit(class_weight=...)`
    weighs whole rows by one class. The loss of a row is the mean over labels of
    `w * BCE(target, p)`, `w` the label's positive weight where the label is 1, its negative
    weight where it is 0; with every weight 1 it is Keras's `BinaryCrossentropy`. With
    `label_smoothing`, targets are smoothed towards 1/2 as Keras's are, the weights still following
    the labels. `train(class_weight=...)` compiles with it for multi-label data.

    Args:
        positive_weights, negative_weights: one positive number per label each.
        label_smoothing: a number in [0, 1).
        reduction, name, dtype: as `keras.losses.Loss`'s.

    Shapes: `y_true` and `y_pred` `(batch, labels)`, 0/1 and probabilities; the loss of each row
    `(batch,)` before the reduction.
    """

    def __init__(
        self,
        positive_weights,
        negative_weights,
        label_smoothing=0.0,
        reduction="sum_over_batch_size",
        name="label_weighted_binary_crossentropy",
        dtype=None,
    ):
        positive = _weights("positive_weights", positive_weights)
        negative = _weights("negative_weights", negative_weights)
        if len(positive) != len(negative):
            raise ValueError(
                f"positive_weights and negative_weights need one weight per label each; got {len(positive)} "
                f"and {len(negative)}"
            )
        _check_smoothing(label_smoothing)
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.positive_weights, self.negative_weights = positive, negative
        self.label_smoothing = float(label_smoothing)

    def call(self, y_true, y_pred):
        if y_pred.shape[-1] is not None and y_pred.shape[-1] != len(self.positive_weights):
            raise ValueError(
                f"y_pred must be (batch, {len(self.positive_weights)}): one probability per weighted label; "
                f"got shape {tuple(y_pred.shape)}"
            )
        labels = ops.cast(y_true, y_pred.dtype)
        targets = labels * (1 - self.label_smoothing) + 0.5 * self.label_smoothing
        positive = ops.convert_to_tensor(self.positive_weights, y_pred.dtype)
        negative = ops.convert_to_tensor(self.negative_weights, y_pred.dtype)
        weights = labels * positive + (1 - labels) * negative
        return ops.mean(weights * ops.binary_crossentropy(targets, y_pred), axis=-1)

    def get_config(self):
        return {
            **super().get_config(),
            "positive_weights": self.positive_weights,
            "negative_weights": self.negative_weights,
            "label_smoothing": self.label_smoothing,
        }


def _check_smoothing(label_smoothing):
    number = not isinstance(label_smoothing, bool) and isinstance(label_smoothing, (int, float))
    if not number or not 0 <= label_smoothing < 1:
        raise ValueError(f"label_smoothing must be a number in [0, 1); got {label_smoothing!r}")


def _weights(name, weights):
    """`weights` as a list of floats, each positive and finite; a `ValueError` naming `name` otherwise."""
    values = list(weights)
    if not values or not all(
        not isinstance(w, bool) and isinstance(w, numbers.Real) and 0 < w < float("inf") for w in values
    ):
        raise ValueError(f"{name} must be positive finite numbers, one per label; got {values!r:.80}")
    return [float(w) for w in values]
