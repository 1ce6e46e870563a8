import keras
import numpy as np
import pytest

from keras_textattn.layers import MaskedGlobalAveragePooling1D
from keras_textattn.layers import MaskedGlobalMaxPooling1D
from keras_textattn.layers import PositionEmbedding
from keras_textattn.layers import RowReadEmbedding
from keras_textattn.optimizers import LazySGD
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


@pytest.mark.parametrize("layer_cls", [MaskedGlobalMaxPooling1D, MaskedGlobalAveragePooling1D])
def test_masked_poolings_give_zeros_for_no_time_steps(layer_cls):
    """A batch of empty texts from a vectorizer without a fixed length is `(batch, 0, features)`:
    zeros, as for an all-padding text, in the eager call and in a compiled model with a dynamic
    length (the max raised "Cannot compute the max of an empty tensor", the mean gave NaN)."""
    empty = np.zeros((2, 0, 3), "float32")
    for mask in (None, np.zeros((2, 0), bool)):
        outputs = to_numpy(layer_cls()(empty, mask=mask))
        assert outputs.shape == (2, 3)
        np.testing.assert_array_equal(outputs, 0.0)
    inputs = keras.Input(shape=(None, 3))
    model = keras.Model(inputs, layer_cls()(inputs))
    np.testing.assert_array_equal(model.predict(empty, verbose=0), 0.0)
    x = np.arange(12, dtype="float32").reshape(2, 2, 3)  # and unmasked inputs as before
    expected = x.max(axis=1) if layer_cls is MaskedGlobalMaxPooling1D else x.mean(axis=1)
    np.testing.assert_allclose(model.predict(x, verbose=0), expected)


def _embedding_pair(**kwargs):
    """A `RowReadEmbedding` and a Keras `Embedding` with the same table."""
    ours, keras_own = RowReadEmbedding(20, 4, **kwargs), keras.layers.Embedding(20, 4, **kwargs)
    ours.build((None, 3))
    keras_own.build((None, 3))
    keras_own.set_weights(ours.get_weights())
    return ours, keras_own


def test_row_read_embedding_is_keras_embedding_also_after_rows_were_updated(tmp_path):
    ids = np.array([[1, 5, 0], [19, 5, 5]])
    ours, keras_own = _embedding_pair(mask_zero=True)
    np.testing.assert_array_equal(to_numpy(ours(ids)), to_numpy(keras_own(ids)))
    np.testing.assert_array_equal(to_numpy(ours.compute_mask(ids)), ids != 0)
    # A lazy optimizer writes rows in place: a read afterwards must see the new rows.
    for layer in (ours, keras_own):
        gradient = np.ones((2, 4), "float32")
        LazySGD(0.5).apply([_sparse_gradient(gradient, [5, 19], layer)], [layer.embeddings])
    np.testing.assert_array_equal(to_numpy(ours(ids)), to_numpy(keras_own(ids)))
    np.testing.assert_array_equal(to_numpy(ours(ids))[1, 0], to_numpy(keras_own.embeddings)[19])
    inputs = keras.Input((3,), dtype="int32")
    model = keras.Model(inputs, ours(inputs))
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras", safe_mode=True)
    assert type(loaded.layers[-1]) is RowReadEmbedding
    np.testing.assert_array_equal(to_numpy(loaded(ids)), to_numpy(model(ids)))


def _sparse_gradient(values, rows, layer):
    """The gradient TensorFlow gives a table read at `rows` (dense on other backends)."""
    if keras.backend.backend() != "tensorflow":
        dense = np.zeros(layer.embeddings.shape, "float32")
        np.add.at(dense, rows, values)
        return dense
    import tensorflow as tf

    return tf.IndexedSlices(tf.constant(values), tf.constant(rows), dense_shape=tf.constant(layer.embeddings.shape))


def test_row_read_embedding_computes_in_the_policy_and_keeps_a_float32_table():
    layer = RowReadEmbedding(20, 4, dtype="mixed_float16")
    outputs = layer(np.array([[1, 2]]))
    assert keras.backend.standardize_dtype(outputs.dtype) == "float16"
    assert layer.embeddings.dtype == "float32"


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="row reads and sparse gradients are TensorFlow's")
def test_row_read_embedding_gives_a_sparse_gradient_and_compiles_with_xla():
    import tensorflow as tf

    layer = RowReadEmbedding(20, 4)
    ids = tf.constant([[1, 5, 5]])
    layer.build(ids.shape)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(ids))
    gradient = tape.gradient(loss, layer.embeddings.value)
    assert isinstance(gradient, tf.IndexedSlices)
    np.testing.assert_array_equal(np.sort(gradient.indices.numpy()), [1, 5, 5])
    compiled = tf.function(lambda ids: layer(ids), jit_compile=True)
    np.testing.assert_array_equal(compiled(ids).numpy(), layer(ids).numpy())
