import keras
import numpy as np
import pytest

from keras_textattn.layers import CascadedSemanticPositional
from keras_textattn.layers import MultiQueryAttention
from keras_textattn.layers import SemanticSelfAttention
from tests import numpy_reference as ref
from tests.layer_contract import check_finite_on_extremes
from tests.layer_contract import check_padding_invariance
from tests.layer_contract import check_save_and_load
from tests.layer_contract import run_layer_contract
from tests.layer_contract import set_random_weights
from tests.layer_contract import to_numpy

X_SHAPE = (3, 6, 4)
MASK = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] + [0] * 5], bool)
npy = keras.ops.convert_to_numpy


def semantic_reference(D, gamma, beta, epsilon=1e-6):
    """Eq. 4 on one unpadded text D (L x d): LayerNorm(softmax(D D^T / sqrt(d)) D)."""
    weights = np.stack([ref.softmax_over(row, np.ones(len(D), bool)) for row in D @ D.T / np.sqrt(D.shape[1])])
    return ref.layer_norm(weights @ D, gamma, beta, epsilon), weights


def _layer_norm_weights(layer):
    return npy(layer.layer_norm.gamma), npy(layer.layer_norm.beta)


@pytest.mark.parametrize(
    "layer_cls, init_kwargs, output_shape, propagates",
    [
        (SemanticSelfAttention, {}, (7, 8), True),
        (CascadedSemanticPositional, {}, (7, 8), True),
        (MultiQueryAttention, {"num_queries": 3}, (8,), False),
        (MultiQueryAttention, {"num_queries": 2, "output_dim": 5}, (5,), False),
    ],
)
def test_layer_contract(layer_cls, init_kwargs, output_shape, propagates, tmp_path):
    run_layer_contract(layer_cls, init_kwargs, output_shape, propagates_mask=propagates, tmp_path=tmp_path)


def test_semantic_self_attention_matches_eq_4():
    rng = np.random.default_rng(0)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = SemanticSelfAttention()
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.5)
    outputs, weights = to_numpy(layer(x, mask=MASK, return_attention_scores=True))
    assert len(layer.trainable_weights) == 2  # only the layer normalisation
    for b in range(3):
        keep = MASK[b]
        expected, expected_weights = semantic_reference(x[b][keep], *_layer_norm_weights(layer))
        np.testing.assert_allclose(outputs[b][keep], expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(npy(outputs)[b][~keep], 0.0)
        np.testing.assert_allclose(npy(weights)[b][np.ix_(keep, keep)], expected_weights, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lstm_layers", [1, 2])
def test_cascaded_matches_eq_4_to_9(lstm_layers):
    """`lstm_layers=2` (our choice; the paper has one) feeds each Bi-LSTM's output to the next."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = CascadedSemanticPositional(lstm_layers=lstm_layers)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.5)
    outputs = to_numpy(layer(x, mask=MASK))
    lstms = [
        ([npy(w) for w in f.weights], [npy(w) for w in b.weights])
        for f, b in zip(layer.forward_lstms, layer.backward_lstms)
    ]
    assert len(lstms) == lstm_layers
    for b in range(3):
        D = x[b][MASK[b]]
        S, _ = semantic_reference(D, *_layer_norm_weights(layer.semantic_attention))  # Eq. 4
        H = S
        for forward, backward in lstms:
            H = np.concatenate([ref.lstm(H, *forward), ref.lstm(H[::-1], *backward)[::-1]], -1)  # Eq. 5-7
        P, _ = semantic_reference(H, *_layer_norm_weights(layer.positional_attention))  # Eq. 8
        np.testing.assert_allclose(outputs[b][MASK[b]], S + P, rtol=1e-4, atol=1e-5)  # Eq. 9


def test_stacked_bi_lstms_save_and_load(tmp_path):
    """Each of the stacked LSTMs comes back with its own weights (the contract runs `lstm_layers=1`)."""
    check_save_and_load(CascadedSemanticPositional(lstm_layers=2), tmp_path)


def test_multi_query_matches_eq_10_to_13():
    rng = np.random.default_rng(2)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = MultiQueryAttention(num_queries=3)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.5)
    outputs, alpha = to_numpy(layer(x, mask=MASK, return_attention_scores=True))
    W_h, b_h, queries, W_f = (
        npy(layer.hidden.kernel),
        npy(layer.hidden.bias),
        npy(layer.queries),
        npy(layer.fusion.kernel),
    )
    for b in range(3):
        F = x[b][MASK[b]]
        u = np.tanh(F @ W_h + b_h)  # Eq. 10
        a = np.stack([ref.softmax_over(u @ q, np.ones(len(F), bool)) for q in queries])  # Eq. 11
        pooled = a @ F  # Eq. 12
        np.testing.assert_allclose(outputs[b], pooled.reshape(-1) @ W_f, rtol=1e-5, atol=1e-5)  # Eq. 13
        np.testing.assert_allclose(npy(alpha)[b][:, MASK[b]], a, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(npy(alpha)[b][:, ~MASK[b]], 0.0)


@pytest.mark.parametrize(
    "layer",
    [
        lambda: SemanticSelfAttention(),
        lambda: CascadedSemanticPositional(),
        lambda: CascadedSemanticPositional(lstm_layers=2),
        lambda: MultiQueryAttention(num_queries=2),
    ],
)
def test_padding_invariance_and_extremes(layer):
    rng = np.random.default_rng(3)
    check_padding_invariance(
        layer(),
        rng.normal(size=(2, 5, 4)).astype("float32"),
        real_length=5,
        call_kwargs={"return_attention_scores": True},
    )
    outputs = check_finite_on_extremes(layer(), features=4)
    np.testing.assert_array_equal(npy(outputs[0])[1], 0.0)  # all-padding row


@pytest.mark.parametrize(
    "layer_cls, kwargs, message",
    [
        (CascadedSemanticPositional, {"lstm_layers": 0}, r"lstm_layers.*lstm_layers=0"),
        (MultiQueryAttention, {"num_queries": 0}, r"num_queries.*num_queries=0"),
        (MultiQueryAttention, {"output_dim": 2.0}, r"output_dim.*output_dim=2.0"),
        # LayerNormalization's epsilon: 0 or less gave NaN on a constant input; a string failed inside Keras at build.
        (
            CascadedSemanticPositional,
            {"epsilon": 0.0},
            r"`epsilon` must be a finite number > 0. Received: epsilon=0.0$",
        ),
        (
            SemanticSelfAttention,
            {"epsilon": -1e-6},
            r"`epsilon` must be a finite number > 0. Received: epsilon=-1e-06$",
        ),
        (
            SemanticSelfAttention,
            {"epsilon": "1e-6"},
            r"`epsilon` must be a finite number > 0. Received: epsilon='1e-6'$",
        ),
    ],
)
def test_invalid_arguments(layer_cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        layer_cls(**kwargs)


def test_incompatible_inputs():
    with pytest.raises(ValueError, match=r"d must be even.*features=5"):
        CascadedSemanticPositional()(keras.Input(shape=(4, 5)))
    with pytest.raises(ValueError, match=r"known, positive feature size"):
        MultiQueryAttention()(keras.Input(shape=(4, None)))
