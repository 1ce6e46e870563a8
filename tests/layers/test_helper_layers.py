import keras
import numpy as np
import pytest

from keras_textattn.layers import DocumentSentences
from keras_textattn.layers import MaskedGlobalAveragePooling1D
from keras_textattn.layers import MaskedGlobalMaxPooling1D
from keras_textattn.layers import PositionEmbedding
from keras_textattn.layers import SentenceRows
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


def test_sentence_rows_and_document_sentences_take_their_sizes_from_the_call(tmp_path):
    """In a model built for any number of sentences and words, documents of 3 sentences of 4 words
    and of 2 of 5 become a row per sentence (NumPy's reshape) and their sentence vectors go back
    to their documents; the model saves and loads with the same outputs."""
    ids = keras.Input(shape=(None, None), dtype="int32")
    rows = SentenceRows()(ids)
    vectors = keras.layers.Embedding(20, 6)(rows)[:, 0]  # one vector per sentence row
    model = keras.Model(ids, [rows, DocumentSentences()([vectors, ids])])
    assert model.output_shape == [(None, None), (None, None, 6)]
    for shape in ((2, 3, 4), (3, 2, 5)):
        documents = np.random.default_rng(0).integers(0, 20, shape).astype("int32")
        got_rows, sentences = (to_numpy(x) for x in model(documents))
        np.testing.assert_array_equal(got_rows, documents.reshape(-1, shape[-1]))
        embeddings = to_numpy(model.layers[2].embeddings)
        np.testing.assert_allclose(sentences, embeddings[documents[:, :, 0]], rtol=1e-6)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(to_numpy(loaded(documents)[1]), sentences, rtol=1e-6)
    assert SentenceRows().compute_output_shape((2, 3, 4, 8)) == (6, 4, 8)


def test_sentence_rows_and_document_sentences_refuse_flat_ids():
    with pytest.raises(ValueError, match="SentenceRows expects ids of rank 3 or more; received shape \\(None, 7\\)"):
        SentenceRows()(keras.Input(shape=(7,)))
    with pytest.raises(ValueError, match="DocumentSentences expects document ids of rank 3 or more"):
        DocumentSentences()([keras.Input(shape=(8,)), keras.Input(shape=(7,))])
