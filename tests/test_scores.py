import numpy as np
import pytest

from keras_textattn._scores import macro_f1


def test_macro_f1_leaves_out_classes_with_no_rows_and_no_predictions():
    """Two of six classes, every row right: 1.0 (scored as 0, the four absent classes made it 0.333).
    A class predicted but absent from the rows still counts, with F1 0: (1 + 2/3 + 0) / 3."""
    assert macro_f1(np.array([1, 3, 3]), np.array([1, 3, 3])) == 1.0
    assert macro_f1(np.array([1, 3, 3]), np.array([1, 3, 4])) == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert macro_f1(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0])) == 0.0
