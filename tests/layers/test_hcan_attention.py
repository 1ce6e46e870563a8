import keras
import numpy as np
import pytest

from keras_textattn.layers import ConvMultiheadSelfAttention
from keras_textattn.layers import ConvMultiheadTargetAttention
from keras_textattn.layers import ParallelConvMultiheadSelfAttention
from tests import numpy_reference as ref
from tests.layer_contract import check_finite_on_extremes
from tests.layer_contract import check_padding_invariance
from tests.layer_contract import run_layer_contract
from tests.layer_contract import set_random_weights
from tests.layer_contract import to_numpy

X_SHAPE = (3, 6, 8)
MASK = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] + [0] * 5], bool)


def conv_features(x, keep, conv, activation):
    """Eq. 2: act(Conv1D(E, W) + b), window 3, on the unpadded part of one text."""
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in (conv.kernel, conv.bias))
    return activation(ref.conv1d_same(x[keep], kernel, bias))


def multihead(queries, keys, values, heads):
    """Eq. 1 and 3: per head softmax(Q_i K_i^T / sqrt(d/h)) V_i, heads concatenated."""
    size = queries.shape[-1] // heads
    outputs, weights = [], []
    for h in range(heads):
        q, k, v = (m[:, h * size : (h + 1) * size] for m in (queries, keys, values))
        w = np.stack([ref.softmax_over(q_i @ k.T / np.sqrt(size), np.ones(len(k), bool)) for q_i in q])
        outputs.append(w @ v)
        weights.append(w)
    return np.concatenate(outputs, -1), np.stack(weights)


def self_attention_reference(layer, x, mask, value_activation):
    outputs = np.zeros(x.shape[:2] + (layer.compute_output_shape(x.shape)[-1],))
    for b in range(len(x)):
        keep = mask[b]
        q = conv_features(x[b], keep, layer.query_conv, ref.elu)
        k = conv_features(x[b], keep, layer.key_conv, ref.elu)
        v = conv_features(x[b], keep, layer.value_conv, value_activation)
        outputs[b, keep] = multihead(q, k, v, layer.num_heads)[0]
    return outputs


@pytest.mark.parametrize(
    "layer_cls, init_kwargs, output_shape, propagates",
    [
        (ConvMultiheadSelfAttention, {"num_heads": 2}, (7, 8), True),
        (ConvMultiheadSelfAttention, {"num_heads": 3, "units": 6, "value_activation": "tanh"}, (7, 6), True),
        (ParallelConvMultiheadSelfAttention, {"num_heads": 2}, (7, 8), True),
        (ConvMultiheadTargetAttention, {"num_heads": 4}, (8,), False),
    ],
)
def test_layer_contract(layer_cls, init_kwargs, output_shape, propagates, tmp_path):
    run_layer_contract(layer_cls, init_kwargs, output_shape, propagates_mask=propagates, tmp_path=tmp_path)


@pytest.mark.parametrize("value_activation, numpy_activation", [("elu", ref.elu), ("tanh", np.tanh)])
def test_self_attention_matches_reference(value_activation, numpy_activation):
    rng = np.random.default_rng(0)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = ConvMultiheadSelfAttention(num_heads=2, value_activation=value_activation)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.3)
    expected = self_attention_reference(layer, x, MASK, numpy_activation)
    np.testing.assert_allclose(to_numpy(layer(x, mask=MASK)), expected, rtol=1e-5, atol=1e-5)


def test_parallel_matches_reference():
    """Eq. 4 and section 3.8: LayerNorm(MH_a(E) * MH_b(E)), ELU and tanh values."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = ParallelConvMultiheadSelfAttention(num_heads=4)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.3)
    a = self_attention_reference(layer.elu_branch, x, MASK, ref.elu)
    b = self_attention_reference(layer.tanh_branch, x, MASK, np.tanh)
    gamma, beta = (keras.ops.convert_to_numpy(w) for w in (layer.layer_norm.gamma, layer.layer_norm.beta))
    expected = ref.layer_norm(a * b, gamma, beta, 1e-6) * MASK[..., None]
    np.testing.assert_allclose(to_numpy(layer(x, mask=MASK)), expected, rtol=1e-4, atol=1e-5)


def test_target_attention_matches_reference():
    """Eq. 5: the learned target T queries ELU-conv keys and values, per head."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = ConvMultiheadTargetAttention(num_heads=2)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=0.3)
    outputs, scores = to_numpy(layer(x, mask=MASK, return_attention_scores=True))
    target = keras.ops.convert_to_numpy(layer.target)
    for b in range(len(x)):
        keep = MASK[b]
        k = conv_features(x[b], keep, layer.key_conv, ref.elu)
        v = conv_features(x[b], keep, layer.value_conv, ref.elu)
        expected, weights = multihead(target, k, v, 2)
        np.testing.assert_allclose(outputs[b], expected[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(scores)[b][:, keep], weights[:, 0], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(scores)[b][:, ~keep], 0.0)


def test_dropout_acts_on_attention_weights_in_training_only():
    rng = np.random.default_rng(3)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = ConvMultiheadSelfAttention(num_heads=2, dropout=0.5)
    inference = [keras.ops.convert_to_numpy(layer(x)) for _ in range(2)]
    np.testing.assert_array_equal(inference[0], inference[1])
    training = keras.ops.convert_to_numpy(layer(x, training=True))
    assert not np.allclose(training, inference[0])


@pytest.mark.parametrize(
    "layer",
    [
        lambda: ConvMultiheadSelfAttention(num_heads=2),
        lambda: ParallelConvMultiheadSelfAttention(num_heads=2),
        lambda: ConvMultiheadTargetAttention(num_heads=2),
    ],
)
def test_padding_invariance_and_extremes(layer):
    rng = np.random.default_rng(4)
    check_padding_invariance(
        layer(),
        rng.normal(size=(2, 5, 8)).astype("float32"),
        real_length=5,
        call_kwargs={"return_attention_scores": True},
    )
    check_finite_on_extremes(layer(), features=8)


@pytest.mark.parametrize(
    "layer_cls, kwargs, message",
    [
        (ConvMultiheadSelfAttention, {"num_heads": 0}, r"num_heads.*positive integer.*num_heads=0"),
        (ConvMultiheadSelfAttention, {"units": -4}, r"units.*units=-4"),
        (ConvMultiheadTargetAttention, {"dropout": 1.0}, r"dropout.*\[0, 1\)"),
        (
            ConvMultiheadSelfAttention,
            {"dropout": "0.1"},
            r"`dropout` must be a number in \[0, 1\). Received: dropout='0.1'$",
        ),
        (
            ParallelConvMultiheadSelfAttention,
            {"dropout": float("nan")},
            r"a number in \[0, 1\). Received: dropout=nan$",
        ),
        (ParallelConvMultiheadSelfAttention, {"kernel_size": 0}, r"kernel_size"),
        (ParallelConvMultiheadSelfAttention, {"epsilon": 0}, r"epsilon.*Received: epsilon=0"),
    ],
)
def test_invalid_arguments(layer_cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        layer_cls(**kwargs)


@pytest.mark.parametrize(
    "layer_cls", [ConvMultiheadSelfAttention, ParallelConvMultiheadSelfAttention, ConvMultiheadTargetAttention]
)
def test_heads_must_divide_size(layer_cls):
    with pytest.raises(ValueError, match=r"divisible by num_heads.*d=10, num_heads=4"):
        layer_cls(num_heads=4)(keras.Input(shape=(5, 10)))
