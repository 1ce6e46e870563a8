import keras
import numpy as np
import pytest

from keras_textattn.layers import ScalableAttention
from tests import numpy_reference as ref
from tests.layer_contract import check_finite_on_extremes
from tests.layer_contract import check_padding_invariance
from tests.layer_contract import run_layer_contract
from tests.layer_contract import set_random_weights
from tests.layer_contract import to_numpy


def scalable_attention_reference(x, mask, kernels, biases, hidden_activation, attention):
    """Section 2 and 3.2: per-position neurons, alpha, then h = tanh(X alpha^T)."""
    batch, time, _ = x.shape
    h = np.zeros((batch, x.shape[-1]))
    alphas = np.zeros((batch, time))
    for b in range(batch):
        y = [x[b, i] for i in range(time)]
        for j, (kernel, bias) in enumerate(zip(kernels, biases)):
            # a neuron: y = f([w_1^T x_1 + b_1, ..., w_n^T x_n + b_n])
            y = [y[i] @ kernel[i] + bias[i] for i in range(time)]
            if j < len(kernels) - 1:
                y = [hidden_activation(v) for v in y]
        logits = np.array([v[0] for v in y])
        if attention == "softplus":
            alpha = np.where(mask[b], ref.softplus(logits), 0.0)
        else:
            alpha = ref.softmax_over(logits, mask[b])
        alphas[b] = alpha
        h[b] = np.tanh(sum(alpha[i] * x[b, i] for i in range(time) if mask[b, i]))
    return h, alphas


@pytest.mark.parametrize(
    "init_kwargs",
    [{}, {"hidden_units": (4, 3), "attention_activation": "softmax"}],
)
def test_layer_contract(init_kwargs, tmp_path):
    run_layer_contract(ScalableAttention, init_kwargs, (8,), propagates_mask=False, static_time=True, tmp_path=tmp_path)


@pytest.mark.parametrize("hidden_units", [(), (5,)])
@pytest.mark.parametrize("attention", ["softplus", "softmax"])
def test_matches_numpy_reference(hidden_units, attention):
    rng = np.random.default_rng(0)
    layer = ScalableAttention(hidden_units=hidden_units, attention_activation=attention)
    x = rng.normal(size=(3, 6, 4)).astype("float32")
    mask = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] + [0] * 5], bool)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=1.0)
    outputs, alpha = to_numpy(layer(x, mask=mask, return_attention_scores=True))
    weights = layer.get_weights()
    expected, expected_alpha = scalable_attention_reference(x, mask, weights[0::2], weights[1::2], np.tanh, attention)
    np.testing.assert_allclose(outputs, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-5)


def test_default_initializer_is_glorot_per_position():
    """Section 3.4: Glorot for each neuron, so the spread must not shrink with the length."""
    for time in (10, 1000):
        layer = ScalableAttention()
        layer.build((None, time, 100))
        kernel = keras.ops.convert_to_numpy(layer.kernels[0])
        limit = np.sqrt(6 / (100 + 1))
        assert np.abs(kernel).max() <= limit + 1e-6
        assert np.abs(kernel).max() > 0.9 * limit


def test_padding_invariance():
    rng = np.random.default_rng(1)
    layer = ScalableAttention(attention_activation="softmax")
    layer.build((None, 12, 4))
    check_padding_invariance(
        layer,
        rng.normal(size=(2, 12, 4)).astype("float32"),
        real_length=5,
        static_time=True,
        call_kwargs={"return_attention_scores": True},
    )


def test_finite_on_extremes_and_all_padding_row():
    layer = ScalableAttention()
    _, alpha = check_finite_on_extremes(layer, features=4)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(alpha)[1], 0.0)


def test_needs_static_time():
    with pytest.raises(ValueError, match="static time length"):
        ScalableAttention()(keras.Input(shape=(None, 8)))


def test_rejects_a_longer_input_than_built():
    layer = ScalableAttention()
    layer(np.zeros((1, 5, 3), "float32"))
    with pytest.raises(ValueError, match=r"weights for 5 positions: inputs may be at most that long.*\(1, 6, 3\)"):
        layer(np.zeros((1, 6, 3), "float32"))


@pytest.mark.parametrize("hidden_units", [(), (3,)])
def test_a_shorter_input_gives_what_it_gives_padded(hidden_units):
    """An input cut to fewer positions than built reads the first positions' weights: the output
    and the scores of the cut positions are those of the input padded to the built length, also
    in a compiled function whose length is only known when it runs (a batch cut to its texts)."""
    rng = np.random.default_rng(0)
    layer = ScalableAttention(hidden_units=hidden_units)
    layer.build((None, 9, 4))
    set_random_weights(layer, rng, scale=1.0)
    x = rng.normal(size=(2, 9, 4)).astype("float32")
    mask = np.array([[1] * 5 + [0] * 4, [1] * 3 + [0] * 6], bool)
    padded, padded_alpha = to_numpy(layer(x, mask=mask, return_attention_scores=True))
    calls = [lambda a, m: layer(a, mask=m, return_attention_scores=True)]
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        calls.append(tf.function(calls[0], reduce_retracing=True))
    for call in calls:
        for length in (5, 6, 9):
            outputs, alpha = to_numpy(call(x[:, :length], mask[:, :length]))
            np.testing.assert_allclose(outputs, padded, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(alpha, padded_alpha[:, :length], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"hidden_units": (0,)}, "positive integer"),
        ({"hidden_units": (2.5,)}, "positive integer"),
        (
            {"hidden_units": 8},
            r"`hidden_units` must be a list of positive integers, one per hidden layer \(e.g. \[8\]; "
            r"\[\] for none\). Received: hidden_units=8$",
        ),
        ({"hidden_units": "8"}, r"Received: hidden_units='8'$"),
        ({"attention_activation": "relu"}, r"one of \['softmax', 'softplus'\].*relu"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ScalableAttention(**kwargs)


def test_rejects_wrong_rank():
    with pytest.raises(ValueError, match=r"\(batch, time, features\).*rank 2"):
        ScalableAttention()(keras.Input(shape=(8,)))
