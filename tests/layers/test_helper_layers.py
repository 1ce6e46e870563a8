import keras
import numpy as np
import pytest

from keras_textattn.layers import MaskedGlobalAveragePooling1D
from keras_textattn.layers import MaskedGlobalMaxPooling1D
from keras_textattn.layers import PositionEmbedding
from tests.layer_contract import run_layer_contract
from tests.layer_contract import to_numpy


def test_position_embedding_contract(tmp_path):
    run_layer_contract(PositionEmbedding, {"max_length": 10}, (7, 8), propagates_mask=True, tmp_path=tmp_path)


def test_position_embedding_adds_the_first_rows():
    layer = PositionEmbedding(max_length=6)
    x = np.random.rand(2, 4, 3).astype("float32")
    outputs = keras.ops.convert_to_numpy(layer(x))
    np.testing.assert_allclose(outputs, x + keras.ops.convert_to_numpy(layer.embeddings)[:4], rtol=1e-6)
    with pytest.raises(ValueError, match=r"longer than max_length.*time=7, max_length=6"):
        PositionEmbedding(max_length=6)(keras.Input(shape=(7, 3)))
    with pytest.raises(ValueError, match="max_length"):
        PositionEmbedding(max_length=0)


def test_masked_max_pooling_contract(tmp_path):
    run_layer_contract(MaskedGlobalMaxPooling1D, {}, (8,), propagates_mask=False, tmp_path=tmp_path)


def test_masked_max_pooling_ignores_padding():
    x = np.array([[[1.0, -5.0], [2.0, -1.0], [100.0, 100.0]], [[3.0, 3.0], [9.0, 9.0], [9.0, 9.0]]], "float32")
    mask = np.array([[True, True, False], [False, False, False]])
    outputs = to_numpy(MaskedGlobalMaxPooling1D()(x, mask=mask))
    np.testing.assert_array_equal(outputs, [[2.0, -1.0], [0.0, 0.0]])


def test_masked_average_pooling_contract(tmp_path):
    run_layer_contract(MaskedGlobalAveragePooling1D, {}, (8,), propagates_mask=False, tmp_path=tmp_path)


def test_masked_average_pooling_ignores_padding_and_never_divides_by_zero():
    x = np.array([[[1.0, -5.0], [3.0, -1.0], [100.0, 100.0]], [[3.0, 3.0], [9.0, 9.0], [9.0, 9.0]]], "float32")
    mask = np.array([[True, True, False], [False, False, False]])
    outputs = to_numpy(MaskedGlobalAveragePooling1D()(x, mask=mask))
    np.testing.assert_array_equal(outputs, [[2.0, -3.0], [0.0, 0.0]])
