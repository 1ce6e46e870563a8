"""The multi-label decisions: thresholds chosen per label against a brute-force NumPy reference of F1,
the label sets they give, and the scores against hand-counted ones."""

import numpy as np
import pytest

from keras_textattn import multi_label


def _f1(truth, decided):
    """F1 of one label by counting, 0 where it has no positives and none is decided."""
    tp = int(np.sum(truth & decided))
    fp = int(np.sum(~truth & decided))
    fn = int(np.sum(truth & ~decided))
    return 0.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def _reference_thresholds(truth, probabilities):
    """For each label, every candidate scored by counting; the middle of the best."""
    chosen = []
    for label in range(truth.shape[1]):
        f1 = [_f1(truth[:, label], probabilities[:, label] >= t) for t in multi_label.CANDIDATES]
        best = [t for t, value in zip(multi_label.CANDIDATES, f1) if value == max(f1)]
        chosen.append(best[len(best) // 2])
    return np.array(chosen)


def test_each_threshold_maximises_its_label_f1_as_counted():
    rng = np.random.default_rng(0)
    truth = rng.random((400, 6)) < [0.05, 0.1, 0.2, 0.3, 0.5, 0.02]
    # Informative but noisy probabilities, of another scale per label.
    probabilities = np.clip(0.35 * truth + rng.random(truth.shape) * [0.6, 0.5, 0.7, 0.4, 0.9, 0.8], 0, 1)
    thresholds, global_threshold = multi_label.choose_thresholds(truth, probabilities)
    reference = _reference_thresholds(truth, probabilities)
    enough = truth.sum(axis=0) >= multi_label.FEWEST_POSITIVES
    np.testing.assert_allclose(thresholds[enough], reference[enough])
    # Each chosen threshold's F1 is at least that of every other candidate (not a mere agreement).
    for label in np.flatnonzero(enough):
        best = _f1(truth[:, label], probabilities[:, label] >= thresholds[label])
        assert all(best >= _f1(truth[:, label], probabilities[:, label] >= t) for t in multi_label.CANDIDATES)
    # The global threshold maximises the mean F1 over the labels.
    mean_f1 = [np.mean([_f1(truth[:, j], probabilities[:, j] >= t) for j in range(6)]) for t in multi_label.CANDIDATES]
    assert np.mean([_f1(truth[:, j], probabilities[:, j] >= global_threshold) for j in range(6)]) == max(mean_f1)


def test_a_label_with_few_held_out_positives_takes_the_global_threshold():
    rng = np.random.default_rng(1)
    truth = np.zeros((300, 3), bool)
    truth[:100, 0] = truth[100:200, 1] = True
    truth[:3, 2] = True  # three positives: fewer than FEWEST_POSITIVES
    probabilities = np.clip(0.5 * truth + 0.4 * rng.random(truth.shape), 0, 1)
    probabilities[:3, 2] = 0.97  # its own best threshold would be near 0.97
    thresholds, global_threshold = multi_label.choose_thresholds(truth, probabilities)
    assert thresholds[2] == global_threshold != pytest.approx(0.97, abs=0.05)


def test_tied_thresholds_give_the_middle_one():
    truth = np.array([[1], [0]], bool)
    probabilities = np.array([[0.8], [0.2]])  # every threshold in (0.2, 0.8] is perfect
    thresholds, _ = multi_label.choose_thresholds(np.repeat(truth, 5, 0), np.repeat(probabilities, 5, 0))
    perfect = [t for t in multi_label.CANDIDATES if 0.2 < t <= 0.8]
    assert thresholds[0] == perfect[len(perfect) // 2]


def test_label_sets_are_the_labels_at_or_above_their_thresholds_most_probable_first():
    probabilities = np.array([[0.9, 0.2, 0.6], [0.1, 0.1, 0.1], [0.3, 0.5, 0.3]], np.float32)
    sets = multi_label.label_sets(probabilities, [0.5, 0.5, 0.3], ["a", "b", "c"])
    assert [[name for name, _ in row] for row in sets] == [["a", "c"], [], ["b", "c"]]
    assert sets[0][0][1] == pytest.approx(0.9)


def test_scores_as_counted_by_hand():
    truth = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]])
    decided = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 1]])
    result = multi_label.scores(truth, decided, ["a", "b", "c"])
    assert result["subset_accuracy"] == 0.5  # rows 2 and 4
    assert result["hamming_loss"] == pytest.approx(3 / 12)
    # Per label: a TP 2; b TP 1 FN 1; c TP 1 FN 1 FP 1. Micro: TP 4, FP 1, FN 2.
    assert result["labels"]["a"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2}
    assert result["labels"]["b"]["f1"] == pytest.approx(2 / 3)
    assert result["labels"]["c"]["f1"] == pytest.approx(0.5)
    assert result["macro_f1"] == pytest.approx((1 + 2 / 3 + 0.5) / 3)
    assert result["micro_f1"] == pytest.approx(8 / 11)
    # Samples: rows' F1 2/3, 1, 2/3 (TP 1 FP 1 FN 1: 2/4), 1.
    assert result["samples_f1"] == pytest.approx((2 / 3 + 1 + 0.5 + 1) / 4)


def test_macro_f1_leaves_out_a_label_with_no_rows_never_decided():
    truth = np.array([[1, 0], [0, 0]])
    assert multi_label.scores(truth, truth)["macro_f1"] == 1.0  # label 2: no rows, none decided


def _best_threshold_macro_f1(truth, probabilities):
    """Each label's best F1 over the candidates, by counting; the mean over labels with a positive."""
    present = [label for label in range(truth.shape[1]) if truth[:, label].any()]
    best = [max(_f1(truth[:, j], probabilities[:, j] >= t) for t in multi_label.CANDIDATES) for j in present]
    return float(np.mean(best))


def test_the_streamed_macro_f1_is_each_labels_best_f1_as_counted():
    import keras

    from keras_textattn.metrics import BestThresholdMacroF1

    rng = np.random.default_rng(2)
    truth = rng.random((300, 5)) < [0.05, 0.2, 0.4, 0.1, 0.0]  # the last label has no positive: not averaged
    probabilities = np.clip(0.3 * truth + 0.7 * rng.random(truth.shape), 0, 1).astype("float32")
    metric = BestThresholdMacroF1(5)
    for start in range(0, 300, 64):  # batches of rows, as fit and evaluate give them
        metric.update_state(truth[start : start + 64], probabilities[start : start + 64])
    expected = _best_threshold_macro_f1(truth, probabilities)
    assert float(metric.result()) == pytest.approx(expected, abs=1e-6)
    assert 0.2 < expected < 0.9  # neither 0 nor 1: the counts, not a constant, decide it
    # A weight of 2 counts a row twice.
    twice = np.repeat(np.arange(300), 1 + (np.arange(300) % 2))
    weighted = BestThresholdMacroF1(5)
    weighted.update_state(truth, probabilities, sample_weight=1 + (np.arange(300) % 2))
    assert float(weighted.result()) == pytest.approx(
        _best_threshold_macro_f1(truth[twice], probabilities[twice]), abs=1e-6
    )
    metric.reset_state()
    assert float(metric.result()) == 0.0
    again = keras.metrics.deserialize(keras.metrics.serialize(weighted))
    assert again.labels == 5 and again.name == "macro_f1"
    with pytest.raises(ValueError, match=r"y_true must be \(batch, 5\) of 0/1; got shape \(4, 3\)"):
        metric.update_state(np.zeros((4, 3)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="labels must be a whole number of at least 1; got 0"):
        BestThresholdMacroF1(0)


def test_the_label_weighted_loss_weighs_each_labels_positives_and_negatives():
    import keras

    from keras_textattn.losses import LabelWeightedBinaryCrossentropy

    rng = np.random.default_rng(3)
    truth = (rng.random((16, 3)) < 0.3).astype("float32")
    probabilities = rng.uniform(0.01, 0.99, (16, 3)).astype("float32")
    positive, negative = [4.0, 1.0, 0.5], [0.25, 1.0, 2.0]
    weights = truth * positive + (1 - truth) * negative
    for smoothing in (0.0, 0.2):
        targets = truth * (1 - smoothing) + 0.5 * smoothing
        each = -(targets * np.log(probabilities) + (1 - targets) * np.log(1 - probabilities))
        loss = LabelWeightedBinaryCrossentropy(positive, negative, smoothing)
        assert float(loss(truth, probabilities)) == pytest.approx(np.mean(weights * each), rel=1e-5)
        # Weights of 1 are Keras's binary cross-entropy.
        ones = LabelWeightedBinaryCrossentropy([1.0] * 3, [1.0] * 3, smoothing)
        keras_loss = keras.losses.BinaryCrossentropy(label_smoothing=smoothing)
        assert float(ones(truth, probabilities)) == pytest.approx(float(keras_loss(truth, probabilities)), rel=1e-5)
    again = keras.losses.deserialize(keras.losses.serialize(LabelWeightedBinaryCrossentropy(positive, negative, 0.1)))
    assert (again.positive_weights, again.negative_weights, again.label_smoothing) == (positive, negative, 0.1)
    with pytest.raises(ValueError, match=r"y_pred must be \(batch, 3\): one probability per weighted label"):
        again(truth[:, :2], probabilities[:, :2])
    with pytest.raises(ValueError, match="one weight per label each; got 3 and 2"):
        LabelWeightedBinaryCrossentropy(positive, [1.0, 1.0])
    with pytest.raises(ValueError, match="negative_weights must be positive finite numbers"):
        LabelWeightedBinaryCrossentropy(positive, [1.0, 0.0, float("inf")])


def test_balanced_label_weights_are_counted_per_label_on_the_training_rows():
    import tensorflow as tf

    from keras_textattn.datasets import DataError
    from keras_textattn.datasets import weigh_labels

    truth = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0], [1, 0, 0]], "float32")  # label 2 has no positive
    rows = tf.data.Dataset.from_tensor_slices((tf.constant(["a", "b", "c", "d"]), truth))
    positive, negative, record = weigh_labels("balanced", rows, ["x", "y", "z"])
    # n / (2 * positives) and n / (2 * negatives): x 3 of 4, y 1 of 4; z's positive side has no row.
    assert positive == pytest.approx([4 / 6, 4 / 2, 1.0]) and negative == pytest.approx([4 / 2, 4 / 6, 4 / 8])
    assert record["y"] == {"positive": pytest.approx(2.0), "negative": pytest.approx(4 / 6)}
    assert weigh_labels({"y": 3}, rows, ["x", "y", "z"])[:2] == ([1.0, 3.0, 1.0], [1.0, 1.0, 1.0])
    with pytest.raises(DataError, match=r"names labels the data does not have: \['w'\]; the labels are"):
        weigh_labels({"w": 2}, rows, ["x", "y", "z"])
    assert weigh_labels(None, rows, ["x", "y", "z"]) == (None, None, None)
