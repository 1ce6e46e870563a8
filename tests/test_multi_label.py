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
