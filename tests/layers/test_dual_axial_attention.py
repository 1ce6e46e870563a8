import math

import keras
import numpy as np
import pytest

from keras_textattn.layers import DualAxialSelfAttention
from keras_textattn.layers import FeatureAxialSelfAttention
from keras_textattn.layers import TextAxialSelfAttention
from tests import numpy_reference as ref
from tests.layer_contract import check_finite_on_extremes
from tests.layer_contract import check_padding_invariance
from tests.layer_contract import run_layer_contract
from tests.layer_contract import set_random_weights
from tests.layer_contract import to_numpy


def light_mdsa(X, W_q, W_k, W_v, keep, activation, zeta=None):
    """Section 3.2 in the paper's notation: X is d x N (columns are elements).

    Returns softplus(W), d x N (Eq. 6 or 10, then the softplus of Eq. 8).
    """
    Q, K, V = W_q @ X, W_k @ X, W_v @ X  # Eq. 2-4
    n = X.shape[1]
    W = np.zeros_like(X, dtype="float64")
    for i in range(n):
        scores = np.array([Q[:, i] @ K[:, j] for j in range(n)])
        if activation == "softplus":
            alpha = np.where(keep, ref.softplus(scores), 0.0)
        else:
            alpha = ref.softmax_over(scores, keep)
        if zeta is not None:
            alpha = alpha * zeta[i]
        W[:, i] = sum(alpha[j] * V[:, j] for j in range(n))
    return ref.softplus(W)


def text_axial_reference(x, mask, kernels, activation="softplus", attenuation=True):
    """Eq. 9-11 per example; Dense kernels act as x @ kernel, i.e. W = kernel^T."""
    outputs = np.zeros_like(x, dtype="float64")
    for b in range(len(x)):
        keep = mask[b]
        X = np.where(keep[:, None], x[b], 0.0).T
        n = X.shape[1]
        zeta = None
        if attenuation:
            zeta = np.array([[1 / math.log(math.e * abs(i - j) + math.e) for j in range(n)] for i in range(n)])
        gates = light_mdsa(X, *(k.T for k in kernels), keep, activation, zeta)
        mu = 1.0 / max(keep.sum(), 1)
        outputs[b] = (gates * X * mu).T * keep[:, None]  # Eq. 11
    return outputs


def feature_axial_reference(x, mask, kernels, activation="softplus"):
    """Section 3.4: the same attention on X^T (features are the elements), transposed back."""
    outputs = np.zeros_like(x, dtype="float64")
    for b in range(len(x)):
        X = np.where(mask[b][:, None], x[b], 0.0).T  # d x N
        Xt = X.T  # N x d: d elements of size N
        gates = light_mdsa(Xt, *(k.T for k in kernels), np.ones(Xt.shape[1], bool), activation)
        outputs[b] = (gates * Xt) * mask[b][:, None]
    return outputs


X_SHAPE = (3, 6, 4)
MASK = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] + [0] * 5], bool)


@pytest.mark.parametrize(
    "layer_cls, init_kwargs, output_shape, propagates, static",
    [
        (TextAxialSelfAttention, {}, (7, 8), True, False),
        (TextAxialSelfAttention, {"score_activation": "softmax", "use_attenuation": False}, (7, 8), True, False),
        (FeatureAxialSelfAttention, {}, (7, 8), True, True),
        (DualAxialSelfAttention, {}, (8,), False, True),
        (DualAxialSelfAttention, {"return_sequences": True}, (7, 8), True, True),
        (DualAxialSelfAttention, {"use_feature_axis": False}, (8,), False, False),
        (DualAxialSelfAttention, {"use_feature_axis": False, "aggregation": "mean"}, (8,), False, False),
    ],
)
def test_layer_contract(layer_cls, init_kwargs, output_shape, propagates, static, tmp_path):
    run_layer_contract(
        layer_cls, init_kwargs, output_shape, propagates_mask=propagates, static_time=static, tmp_path=tmp_path
    )


@pytest.mark.parametrize("activation", ["softplus", "softmax"])
@pytest.mark.parametrize("attenuation", [True, False])
def test_text_axial_matches_reference(activation, attenuation):
    rng = np.random.default_rng(0)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = TextAxialSelfAttention(score_activation=activation, use_attenuation=attenuation)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.3)
    outputs, weights = to_numpy(layer(x, mask=MASK, return_attention_scores=True))
    kernels = [layer.query_dense.kernel, layer.key_dense.kernel, layer.value_dense.kernel]
    kernels = [keras.ops.convert_to_numpy(k) for k in kernels]
    expected = text_axial_reference(x, MASK, kernels, activation, attenuation)
    np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-6)
    # The Figure 5 map times x times mu is the output.
    mu = 1.0 / MASK.sum(1)[:, None, None]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(weights) * x * mu, expected, rtol=1e-5, atol=1e-6)


def test_feature_axial_matches_reference():
    rng = np.random.default_rng(1)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = FeatureAxialSelfAttention()
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.3)
    kernels = [keras.ops.convert_to_numpy(d.kernel) for d in (layer.query_dense, layer.key_dense, layer.value_dense)]
    np.testing.assert_allclose(
        to_numpy(layer(x, mask=MASK)), feature_axial_reference(x, MASK, kernels), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("aggregation", ["sum", "mean"])
def test_dual_axial_matches_reference(aggregation):
    rng = np.random.default_rng(2)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = DualAxialSelfAttention(aggregation=aggregation)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.3)
    npy = keras.ops.convert_to_numpy
    text = text_axial_reference(
        x,
        MASK,
        [
            npy(d.kernel)
            for d in (
                layer.text_attention.query_dense,
                layer.text_attention.key_dense,
                layer.text_attention.value_dense,
            )
        ],
    )
    feature = feature_axial_reference(
        x,
        MASK,
        [
            npy(d.kernel)
            for d in (
                layer.feature_attention.query_dense,
                layer.feature_attention.key_dense,
                layer.feature_attention.value_dense,
            )
        ],
    )
    W_f, W_t, b = npy(layer.gate_feature.kernel).T, npy(layer.gate_text.kernel).T, npy(layer.gate_text.bias)
    expected = np.zeros((3, 4))
    for n in range(3):
        total = 0.0
        for i in np.flatnonzero(MASK[n]):
            f = ref.sigmoid(W_f @ feature[n, i] + W_t @ text[n, i] + b)  # Eq. 12
            total = total + f * text[n, i] + (1 - f) * feature[n, i]
        # Eq. 13; "mean" divides the sum by the number of real tokens (our option for long texts).
        expected[n] = np.tanh(total if aggregation == "sum" else total / MASK[n].sum())
    np.testing.assert_allclose(to_numpy(layer(x, mask=MASK)), expected, rtol=1e-5, atol=1e-6)


def test_text_axial_padding_invariance():
    rng = np.random.default_rng(3)
    layer = TextAxialSelfAttention()
    check_padding_invariance(
        layer,
        rng.normal(size=(2, 6, 4)).astype("float32"),
        real_length=6,
        call_kwargs={"return_attention_scores": True},
    )


def test_text_axial_only_dual_padding_invariance():
    rng = np.random.default_rng(3)
    layer = DualAxialSelfAttention(use_feature_axis=False)
    check_padding_invariance(layer, rng.normal(size=(2, 6, 4)).astype("float32"), real_length=6)


@pytest.mark.parametrize("layer_cls", [FeatureAxialSelfAttention, DualAxialSelfAttention])
def test_static_layers_padding_invariance(layer_cls):
    rng = np.random.default_rng(4)
    layer = layer_cls()
    layer.build((None, 10, 4))
    check_padding_invariance(
        layer,
        rng.normal(size=(2, 10, 4)).astype("float32"),
        real_length=4,
        static_time=True,
        call_kwargs={"return_attention_scores": True},
    )


@pytest.mark.parametrize(
    "layer_cls, kwargs",
    [
        (TextAxialSelfAttention, {}),
        (FeatureAxialSelfAttention, {}),
        (DualAxialSelfAttention, {}),
        (DualAxialSelfAttention, {"score_activation": "softmax"}),
    ],
)
def test_finite_on_extremes(layer_cls, kwargs):
    outputs = check_finite_on_extremes(layer_cls(**kwargs), features=4)
    first = keras.ops.convert_to_numpy(outputs[0])
    np.testing.assert_array_equal(first[1], 0.0)  # all-padding row: zeros


@pytest.mark.parametrize("aggregation", ["sum", "mean"])
def test_dual_axial_stays_finite_and_close_to_float32_under_mixed_float16(aggregation):
    """Its output is a tanh: under mixed_float16 it must stay finite where its parts' products
    and outputs pass float16's 65,504 (inputs of magnitude 10, which Keras's own
    MultiHeadAttention handles), and match float32 with the same weights; they were NaN when
    the parts computed in float16. mixed_bfloat16 keeps 16-bit compute in the parts."""
    x = np.random.default_rng(5).normal(size=(2, 7, 16)).astype("float32") * 10
    mask = np.ones((2, 7), bool)
    mask[1, 4:] = False
    exact = DualAxialSelfAttention(aggregation=aggregation)
    expected = to_numpy(exact(x, mask=mask))
    feature_part = to_numpy(exact.feature_attention(x, mask=mask))
    assert np.abs(feature_part).max() > 65504  # beyond float16: the case this test is about
    mixed = DualAxialSelfAttention(aggregation=aggregation, dtype="mixed_float16")
    mixed.build(x.shape)
    mixed.set_weights(exact.get_weights())
    outputs, maps = mixed(x, mask=mask, return_attention_scores=True)
    assert keras.backend.standardize_dtype(outputs.dtype) == "float16"
    assert {keras.backend.standardize_dtype(m.dtype) for m in maps.values()} == {"float16"}
    np.testing.assert_allclose(to_numpy(keras.ops.cast(outputs, "float32")), expected, atol=0.02)
    assert mixed.feature_attention.compute_dtype == "float32"
    assert DualAxialSelfAttention(dtype="mixed_bfloat16")._parts_policy("gate_text").compute_dtype == "bfloat16"


def test_mu_uses_real_tokens_only():
    """Eq. 11 with mu = 1/N, N the unpadded length: doubling one token's padding changes nothing,
    and a text of 2 real tokens is scaled by 1/2, not by 1/time."""
    x = np.ones((1, 5, 2), "float32")
    mask = np.array([[1, 1, 0, 0, 0]], bool)
    layer = TextAxialSelfAttention(use_attenuation=False)
    layer.build(x.shape)
    layer.set_weights([np.zeros_like(keras.ops.convert_to_numpy(w)) for w in layer.weights])
    # Zero maps: scores 0, alpha = softplus(0) = log 2, V = 0, W = 0, softplus(W) = log 2.
    outputs = keras.ops.convert_to_numpy(layer(x, mask=mask))
    np.testing.assert_allclose(outputs[0, :2], np.log(2) / 2, rtol=1e-6)
    np.testing.assert_array_equal(outputs[0, 2:], 0.0)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="inspects a TensorFlow graph")
def test_never_materialises_n_n_d():
    """Memory is O(b (N^2 + N d + d^2)): no traced tensor has batch*N*N*d elements."""
    import tensorflow as tf

    layer = DualAxialSelfAttention()
    x = tf.zeros((2, 16, 8))
    layer(x)
    concrete = tf.function(lambda t: layer(t)).get_concrete_function(x)
    biggest = max(
        int(np.prod(out.shape))
        for op in concrete.graph.get_operations()
        for out in op.outputs
        if out.shape.rank is not None and out.shape.is_fully_defined()
    )
    assert biggest < 2 * 16 * 16 * 8, biggest


@pytest.mark.parametrize(
    "layer_cls, kwargs, message",
    [
        (TextAxialSelfAttention, {"score_activation": "relu"}, r"score_activation.*relu"),
        (TextAxialSelfAttention, {"attenuation_c": 1.0}, r"attenuation_c > 1.*attenuation_c=1.0"),
        (TextAxialSelfAttention, {"attenuation_w": -1.0}, r"attenuation_w >= 0"),
        (DualAxialSelfAttention, {"score_activation": "sigmoid"}, r"score_activation.*sigmoid"),
        (DualAxialSelfAttention, {"aggregation": "max"}, r"aggregation` must be one of \['mean', 'sum'\].*'max'"),
        # A string was read as true: "False" kept what it meant to turn off.
        (
            DualAxialSelfAttention,
            {"use_feature_axis": "False"},
            r"DualAxialSelfAttention: `use_feature_axis` must be True or False. Received: use_feature_axis='False'$",
        ),
        (DualAxialSelfAttention, {"use_attenuation": "no"}, r"`use_attenuation` must be True or False.*'no'$"),
        (DualAxialSelfAttention, {"return_sequences": None}, r"`return_sequences` must be True or False.*=None$"),
        (TextAxialSelfAttention, {"use_attenuation": "false"}, r"`use_attenuation` must be True or False.*'false'$"),
        (
            FeatureAxialSelfAttention,
            {"use_bias": 1},
            r"FeatureAxialSelfAttention: `use_bias` must be True or False.*=1$",
        ),
    ],
)
def test_invalid_arguments(layer_cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        layer_cls(**kwargs)


def test_incompatible_inputs():
    with pytest.raises(ValueError, match="static time length"):
        FeatureAxialSelfAttention()(keras.Input(shape=(None, 4)))
    with pytest.raises(ValueError, match="static time length"):
        DualAxialSelfAttention()(keras.Input(shape=(None, 4)))
    layer = TextAxialSelfAttention()
    layer(np.zeros((1, 3, 4), "float32"))
    with pytest.raises(ValueError, match=r"expected axis 2 of input shape to have value 4.*\(1, 3, 5\)"):
        layer(np.zeros((1, 3, 5), "float32"))
