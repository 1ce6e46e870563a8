"""Scalable attention (Zheng et al., 2020, "A Scalable Attention Mechanism Based
Neural Network for Text Classification", ../shared/papers/scalable_attention.md)."""

import keras
from keras import ops

from keras_textattn.layers import _attention_utils as utils


@keras.saving.register_keras_serializable(package="keras_textattn")
class ScalableAttention(keras.layers.Layer):
    """Scalable attention: position-specific neurons score every token (section 2, 3.2).

    Sublayer `j` applies, at every position `i`, its own weights to that position:
    `y[:, i, :] = f_j(x[:, i, :] @ W_j[i] + b_j[i])`, with `W_j` of shape
    `(time, in_j, units_j)`. The hidden sublayers have `hidden_units` neurons and
    `hidden_activation`; the last sublayer has one neuron and the attention
    activation, which gives the attention vector `alpha` of shape `(batch, time)`
    (the unnumbered equation of section 3.2). The output is `h = tanh(sum_i alpha_i x_i)`.

    Because every position has its own weights, the time length is fixed when the
    layer is built: it is built on a static `time` axis (a `ValueError` says so
    otherwise). A later input may be shorter: its positions read the first weights,
    which gives the same output as that input padded (and masked) to the built length,
    so a training loop may cut each batch's trailing padding. A longer one is refused.

    Choices where the paper is silent:
        - `hidden_activation` defaults to `"tanh"` (the paper leaves it to the user
          and uses no hidden sublayer in its model, which is the default here).
        - `attention_activation="softmax"` gives the paper's "conventional
          attention" comparison: a softmax over the real positions.
        - Padded positions (mask 0) get `alpha = 0`, so they never reach the output.

    Args:
        hidden_units: sizes of the sublayers before the last one-neuron sublayer.
            `()` (default) is the paper's model: one sublayer.
        hidden_activation: activation of the hidden sublayers.
        attention_activation: `"softplus"` (paper, default) or `"softmax"`.
        kernel_initializer: initializer of the `(time, in, units)` kernels. None
            (default) is Glorot uniform for each position's `(in, units)` matrix,
            as in section 3.4 (Keras's own "glorot_uniform" would count `time`
            into the fans and shrink the weights as the text grows).
        bias_initializer: zeros by default, as in section 3.4.

    Call arguments:
        inputs: `(batch, time, features)`.
        mask: optional `(batch, time)` boolean padding mask; consumed (the output
            has no time axis).
        return_attention_scores: also return `alpha`, `(batch, time)`.

    Returns:
        `(batch, features)`, and `alpha` if asked.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import ScalableAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> summary, alpha = ScalableAttention()(x, mask=mask, return_attention_scores=True)
    >>> tuple(summary.shape), tuple(alpha.shape)
    ((2, 8), (2, 6))
    >>> float(ops.convert_to_numpy(alpha)[1, 4:].max())  # padding gets no weight
    0.0

    In a classifier (the time length must be static):

    >>> import keras
    >>> tokens = keras.Input((6,), dtype="int32")
    >>> embedded = keras.layers.Embedding(1000, 8, mask_zero=True)(tokens)
    >>> probabilities = keras.layers.Dense(2, activation="softmax")(ScalableAttention()(embedded))
    >>> keras.Model(tokens, probabilities).output_shape
    (None, 2)
    """

    def __init__(
        self,
        hidden_units=(),
        hidden_activation="tanh",
        attention_activation="softplus",
        kernel_initializer=None,
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(hidden_units, (list, tuple)):  # 8 was "'int' object is not iterable"
            raise ValueError(
                f"{type(self).__name__}: `hidden_units` must be a list of positive integers, one per "
                f"hidden layer (e.g. [8]; [] for none). Received: hidden_units={hidden_units!r}"
            )
        hidden_units = tuple(hidden_units)
        for units in hidden_units:
            utils.check_positive_int(type(self).__name__, "hidden_units[...]", units)
        utils.check_choice(type(self).__name__, "attention_activation", attention_activation, {"softplus", "softmax"})
        self.hidden_units = hidden_units
        self.hidden_activation = keras.activations.get(hidden_activation)
        self.attention_activation = attention_activation
        self.kernel_initializer = None if kernel_initializer is None else keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = utils.check_sequence_shape(type(self).__name__, input_shape, static_time=True)
        time, features = input_shape[1], input_shape[2]
        self.kernels, self.biases = [], []
        kernel_initializer = self.kernel_initializer or keras.initializers.VarianceScaling(
            scale=float(time), mode="fan_avg", distribution="uniform"
        )
        sizes = (features,) + self.hidden_units + (1,)
        for j, (fan_in, units) in enumerate(zip(sizes[:-1], sizes[1:])):
            self.kernels.append(
                self.add_weight(
                    name=f"sublayer_{j}_kernel",
                    shape=(time, fan_in, units),
                    initializer=kernel_initializer,
                )
            )
            self.biases.append(
                self.add_weight(
                    name=f"sublayer_{j}_bias",
                    shape=(time, units),
                    initializer=self.bias_initializer,
                )
            )
        self.input_spec = utils.built_input_spec(input_shape, axes=(2,))

    def call(self, inputs, mask=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        positions = self.kernels[0].shape[0]
        if inputs.shape[1] is not None and inputs.shape[1] > positions:
            raise ValueError(
                f"{type(self).__name__} has weights for {positions} positions: inputs may be at most that "
                f"long. Received: input shape {tuple(inputs.shape)}"
            )
        inputs = utils.zero_padding(inputs, mask)
        length = ops.shape(inputs)[1]
        y = inputs
        last = len(self.kernels) - 1
        for j, (kernel, bias) in enumerate(zip(self.kernels, self.biases)):
            y = ops.einsum("bti,tiu->btu", y, _first(kernel, length)) + _first(bias, length)
            if j < last:
                y = self.hidden_activation(y)
        logits = ops.squeeze(y, axis=-1)  # (batch, time)
        key_mask = None if mask is None else ops.cast(mask, "float32")
        if self.attention_activation == "softplus":
            alpha = utils.masked_softplus(logits, key_mask)
        else:
            alpha = utils.masked_softmax(logits, key_mask, axis=-1)
        # The weighted sum runs in float32: softplus weights are unbounded.
        summary = ops.einsum("bt,btf->bf", alpha, ops.cast(inputs, "float32"))
        outputs = ops.cast(ops.tanh(summary), self.compute_dtype)
        if return_attention_scores:
            return outputs, ops.cast(alpha, self.compute_dtype)
        return outputs

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), self.compute_dtype)
        if return_attention_scores:
            return outputs, keras.KerasTensor(inputs.shape[:2], self.compute_dtype)
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_units": list(self.hidden_units),
                "hidden_activation": keras.activations.serialize(self.hidden_activation),
                "attention_activation": self.attention_activation,
                "kernel_initializer": self.kernel_initializer and keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config


def _first(weights, length):
    """The first `length` positions of per-position `weights` (all of them at the built length)."""
    if isinstance(length, int) and length == weights.shape[0]:
        return weights
    return ops.slice(ops.convert_to_tensor(weights), (0,) * len(weights.shape), (length, *weights.shape[1:]))
