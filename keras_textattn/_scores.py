"""Scores of a classifier's predictions, as `train`'s metrics.json and `evaluate`'s report give them."""

import numpy as np


def macro_f1(truth, predicted):
    """scikit-learn's macro F1 of the label ids `predicted` against `truth`, averaged over the
    classes that occur in either: a class with no rows that is never predicted has no F1 (0/0)
    and is left out. Counted as 0, it scored a file of two of six classes, every row right, 0.333."""
    from sklearn.metrics import f1_score

    return float(f1_score(truth, predicted, labels=np.union1d(truth, predicted), average="macro", zero_division=0))
