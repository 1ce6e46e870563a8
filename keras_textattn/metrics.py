"""Metrics for the classifiers (`keras.ops` only: any Keras 3 backend)."""

import keras
from keras import ops

from keras_textattn.multi_label import CANDIDATES


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


@keras.saving.register_keras_serializable(package="keras_textattn")
class BestThresholdMacroF1(keras.metrics.Metric):
    """Multi-label macro F1 with each label decided at its own best threshold: for each label, the
    highest F1 over the thresholds a run chooses among (`multi_label.CANDIDATES`), averaged over
    the labels that have a positive row. It is what a run's thresholds, chosen on these rows
    (`multi_label.choose_thresholds`), would score, but for a label with too few positives to
    choose on: what training and a search (`val_macro_f1`) log for multi-label data.

    Counts, not probabilities, are kept between batches (true positives and decisions at each
    threshold, positives), so it streams over any number of rows. `sample_weight` weighs each row.

    Args:
        labels: how many labels the model decides.
        name, dtype: as `keras.metrics.Metric`'s.

    Shapes: `y_true` `(batch, labels)` of 0/1; `y_pred` `(batch, labels)` probabilities.
    """

    def __init__(self, labels, name="macro_f1", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if isinstance(labels, bool) or not isinstance(labels, int) or labels < 1:
            raise ValueError(f"labels must be a whole number of at least 1; got {labels!r}")
        self.labels = labels
        shape = (labels, len(CANDIDATES))
        self.true_positives = self.add_variable(shape, initializer="zeros", name="true_positives")
        self.decisions = self.add_variable(shape, initializer="zeros", name="decisions")
        self.positives = self.add_variable((labels,), initializer="zeros", name="positives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        truth = ops.cast(y_true, self.dtype)
        if len(truth.shape) != 2 or truth.shape[-1] != self.labels:
            raise ValueError(f"y_true must be (batch, {self.labels}) of 0/1; got shape {tuple(truth.shape)}")
        decided = ops.cast(ops.expand_dims(ops.cast(y_pred, "float32"), -1) >= _candidates(), self.dtype)
        true_positives = decided * ops.expand_dims(truth, -1)  # (batch, labels, candidates)
        if sample_weight is not None:
            weight = ops.reshape(ops.cast(sample_weight, self.dtype), (-1, 1))
            truth, decided, true_positives = (
                truth * weight,
                decided * ops.expand_dims(weight, -1),
                true_positives * ops.expand_dims(weight, -1),
            )
        self.true_positives.assign_add(ops.sum(true_positives, axis=0))
        self.decisions.assign_add(ops.sum(decided, axis=0))
        self.positives.assign_add(ops.sum(truth, axis=0))

    def result(self):
        sizes = self.decisions + ops.expand_dims(self.positives, -1)  # F1 = 2 TP / (decided + actual)
        best = ops.max(ops.divide_no_nan(2 * self.true_positives, sizes), axis=-1)
        present = ops.cast(self.positives > 0, self.dtype)
        return ops.divide_no_nan(ops.sum(best * present), ops.sum(present))

    def reset_state(self):
        for variable in (self.true_positives, self.decisions, self.positives):
            variable.assign(ops.zeros(variable.shape, variable.dtype))

    def get_config(self):
        return {"labels": self.labels, "name": self.name, "dtype": self.dtype}


def _candidates():
    return ops.convert_to_tensor(CANDIDATES, "float32")
