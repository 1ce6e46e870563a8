"""Multi-label decisions and scores: a threshold per label chosen on held-out rows, the label sets
they give, and the scores of those sets (scikit-learn's)."""

import numpy as np

# The thresholds tried for each label.
CANDIDATES = np.round(np.arange(0.02, 0.981, 0.01), 2)
# A label with fewer positive held-out rows than this takes the global threshold: its own F1 curve
# is a handful of rows, and the best point of it says more of those rows than of the label.
FEWEST_POSITIVES = 5


def choose_thresholds(truth, probabilities):
    """`(thresholds, global threshold)`: for each label the candidate threshold (`CANDIDATES`)
    whose decisions `probability >= threshold` give the label the highest F1 on these held-out
    rows, and the one threshold that gives the highest macro F1 over the labels. Of thresholds that
    tie, the middle one; a label with fewer than `FEWEST_POSITIVES` positive rows takes the global
    threshold.

    Args:
        truth: `(rows, labels)` of 0/1.
        probabilities: `(rows, labels)`, each label's probability.
    """
    truth, probabilities = np.asarray(truth, bool), np.asarray(probabilities)
    f1 = np.array([_f1_by_candidate(truth[:, label], probabilities[:, label]) for label in range(truth.shape[1])])
    global_threshold = float(_middle_best(np.mean(f1, axis=0)))
    thresholds = np.array([_middle_best(row) for row in f1])
    thresholds[np.sum(truth, axis=0) < FEWEST_POSITIVES] = global_threshold
    return thresholds.astype(float), global_threshold


def _f1_by_candidate(truth, probabilities):
    """One label's F1 at each of `CANDIDATES`: 2 TP / (2 TP + FP + FN) = 2 TP / (predicted + actual),
    0 where both are 0."""
    decided = probabilities[:, None] >= CANDIDATES  # (rows, candidates)
    true_positives = np.sum(decided & truth[:, None], axis=0)
    sizes = np.sum(decided, axis=0) + np.sum(truth)
    return np.divide(2 * true_positives, sizes, out=np.zeros(sizes.shape), where=sizes > 0)


def _middle_best(f1):
    """The middle of the candidates whose F1 is the highest."""
    best = np.flatnonzero(f1 >= np.max(f1) - 1e-12)
    return CANDIDATES[best[len(best) // 2]]


def decide(probabilities, thresholds):
    """`(rows, labels)` booleans: each label's probability at or above its threshold."""
    return np.asarray(probabilities) >= np.asarray(thresholds, np.float32)


def label_sets(probabilities, thresholds, label_names):
    """For each row, `[(label, probability), ...]` of the labels decided (`decide`), most probable
    first; an empty list where no label reaches its threshold."""
    probabilities = np.asarray(probabilities)
    chosen = decide(probabilities, thresholds)
    return [
        [(label_names[i], float(row[i])) for i in sorted(np.flatnonzero(picked), key=lambda i: -row[i])]
        for row, picked in zip(probabilities, chosen)
    ]


def scores(truth, decided, label_names=None):
    """Scores of the decided label sets against `truth` (both `(rows, labels)` of 0/1): subset
    accuracy (every label of a row right), Hamming loss (the share of wrong row-label decisions),
    micro, macro and samples F1; with `label_names`, each label's precision, recall, F1 and
    support too. The macro F1 averages over the labels that occur in `truth` or `decided`, as the
    single-label `macro_f1` does over classes."""
    from sklearn import metrics

    truth, decided = np.asarray(truth, int), np.asarray(decided, int)
    present = np.flatnonzero(truth.any(axis=0) | decided.any(axis=0))
    result = {
        "subset_accuracy": float(metrics.accuracy_score(truth, decided)),
        "hamming_loss": float(metrics.hamming_loss(truth, decided)),
        "micro_f1": float(metrics.f1_score(truth, decided, average="micro", zero_division=0)),
        "macro_f1": float(
            metrics.f1_score(truth[:, present], decided[:, present], average="macro", zero_division=0)
            if len(present)
            else 0.0
        ),
        "samples_f1": float(metrics.f1_score(truth, decided, average="samples", zero_division=0)),
    }
    if label_names is not None:
        precision, recall, f1, support = metrics.precision_recall_fscore_support(
            truth, decided, average=None, zero_division=0
        )
        result["labels"] = {
            name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
            for name, p, r, f, s in zip(label_names, precision, recall, f1, support)
        }
    return result
