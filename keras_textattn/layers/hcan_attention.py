"""Convolutional multihead attention of HCAN (Gao et al., 2018, "Hierarchical
Convolutional Attention Networks for Text Classification",
../shared/papers/hcan_hierarchical_conv_attention.txt, sections 3.1-3.8).

Choices where the paper is silent, shared by the layers here:
    - Scores are scaled by `sqrt(d / h)`, the size of one head (Vaswani et al.);
      Eq. 1 writes `sqrt(d)` for the single-head case.
    - Padded time steps are zeroed before the convolutions, so with 'same'
      padding a real token next to padding sees exactly what it would see at the
      end of an unpadded text; padded keys are masked and padded outputs are zero.
"""

import math

import keras
from keras import ops

from keras_textattn.layers import _attention_utils as utils


def _split_heads(x, num_heads):
    """`(batch, time, d)` to `(batch, heads, time, d / heads)`."""
    batch, time = ops.shape(x)[0], ops.shape(x)[1]
    x = ops.reshape(x, (batch, time, num_heads, x.shape[-1] // num_heads))
    return ops.transpose(x, (0, 2, 1, 3))


def _merge_heads(x):
    """`(batch, heads, time, d / heads)` to `(batch, time, d)`."""
    batch, time = ops.shape(x)[0], ops.shape(x)[2]
    x = ops.transpose(x, (0, 2, 1, 3))
    return ops.reshape(x, (batch, time, x.shape[2] * x.shape[3]))


def _check_arguments(name, num_heads, units, kernel_size, dropout):
    """The argument checks of every HCAN layer; `name` is the layer's class name."""
    utils.check_positive_int(name, "num_heads", num_heads)
    utils.check_positive_int(name, "units", units, allow_none=True)
    utils.check_positive_int(name, "kernel_size", kernel_size)
    utils.check_number(name, "dropout", dropout, 0, 1)


class _ConvAttentionBase(keras.layers.Layer):
    """Config and Conv1D feature extractors (section 3.2, Eq. 2) shared by the HCAN layers."""

    def __init__(
        self,
        num_heads=8,
        units=None,
        kernel_size=3,
        dropout=0.1,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_arguments(type(self).__name__, num_heads, units, kernel_size, dropout)
        self.num_heads = num_heads
        self.units = units
        self.kernel_size = kernel_size
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _build_common(self, input_shape):
        """Validate the input shape, create the attention dropout, and return
        `(input_shape, d)`, d the number of filter maps."""
        name = type(self).__name__
        input_shape = utils.check_sequence_shape(name, input_shape)
        units = self.units or input_shape[-1]
        if units % self.num_heads:
            raise ValueError(
                f"{name}: the model size d ({'units' if self.units else 'input features'}) "
                f"must be divisible by num_heads. Received: d={units}, num_heads={self.num_heads}"
            )
        self.input_spec = utils.built_input_spec(input_shape, axes=(2,))
        self.attention_dropout = keras.layers.Dropout(
            self.dropout, dtype=utils.sublayer_dtype(self, "attention_dropout"), name="attention_dropout"
        )
        return input_shape, units

    def _conv(self, units, activation, name, input_shape):
        conv = keras.layers.Conv1D(
            units,
            self.kernel_size,
            padding="same",
            activation=activation,
            kernel_initializer=utils.clone_initializer(self.kernel_initializer),
            bias_initializer=utils.clone_initializer(self.bias_initializer),
            dtype=utils.sublayer_dtype(self, name),
            name=name,
        )
        conv.build(input_shape)
        return conv

    def _attend(self, query, key, value, key_mask, training):
        """Scaled dot-product attention per head (Eq. 1, 3) with dropout on the weights.

        query: `(batch, heads, q, d/h)`; key, value: `(batch, heads, time, d/h)`;
        key_mask: float32 `(batch, time)`. Returns the heads' outputs and weights.
        """
        scale = 1.0 / math.sqrt(query.shape[-1])
        scores = ops.einsum("bhqc,bhkc->bhqk", query, key)
        weights = utils.masked_softmax(ops.cast(scores, "float32") * scale, key_mask[:, None, None, :], axis=-1)
        weights = ops.cast(weights, self.compute_dtype)
        dropped = self.attention_dropout(weights, training=training)
        return ops.einsum("bhqk,bhkc->bhqc", dropped, value), weights

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "units": self.units,
                "kernel_size": self.kernel_size,
                "dropout": self.dropout,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return utils.with_quantized_sublayers(self, config)


@keras.saving.register_keras_serializable(package="keras_textattn")
class ConvMultiheadSelfAttention(_ConvAttentionBase):
    """Convolutional multihead self-attention (sections 3.2-3.3, Eq. 1-3).

    `Q = ELU(Conv1D(E))`, `K = ELU(Conv1D(E))`, `V = act(Conv1D(E))` with d filter
    maps and window 3, split into h heads, scaled dot-product softmax attention per
    head with dropout on the weights (section 3.8), heads concatenated.

    Args:
        num_heads: h; must divide d.
        units: d, the number of filter maps; None (default) keeps the input size.
        kernel_size: the convolution window (3 in the paper).
        value_activation: activation of V: "elu" (Eq. 2) or "tanh" (the second
            branch of Eq. 4), or any Keras activation.
        dropout: rate on the attention weights (0.1, section 3.8).

    Call arguments:
        inputs: `(batch, time, features)`.
        mask: optional `(batch, time)` padding mask, propagated to the output.
        training: for dropout.
        return_attention_scores: also return the weights, `(batch, heads, time, time)`.

    Returns:
        `(batch, time, d)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import ConvMultiheadSelfAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> hidden, weights = ConvMultiheadSelfAttention(num_heads=2)(x, mask=mask, return_attention_scores=True)
    >>> tuple(hidden.shape), tuple(weights.shape)
    ((2, 6, 8), (2, 2, 6, 6))
    >>> float(ops.convert_to_numpy(weights)[1, :, :, 4:].max())  # no query attends to padding
    0.0
    """

    def __init__(self, num_heads=8, units=None, value_activation="elu", **kwargs):
        super().__init__(num_heads=num_heads, units=units, **kwargs)
        self.value_activation = keras.activations.get(value_activation)

    def build(self, input_shape):
        input_shape, units = self._build_common(input_shape)
        self.query_conv = self._conv(units, "elu", "query_conv", input_shape)
        self.key_conv = self._conv(units, "elu", "key_conv", input_shape)
        self.value_conv = self._conv(units, self.value_activation, "value_conv", input_shape)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        inputs = utils.zero_padding(inputs, mask)
        key_mask = utils.float_mask(mask, inputs)
        heads, weights = self._attend(
            _split_heads(utils.call_unless_empty(self.query_conv, inputs), self.num_heads),
            _split_heads(utils.call_unless_empty(self.key_conv, inputs), self.num_heads),
            _split_heads(utils.call_unless_empty(self.value_conv, inputs), self.num_heads),
            key_mask,
            training,
        )
        outputs = utils.zero_padding(_merge_heads(heads), mask)
        if return_attention_scores:
            return outputs, weights
        return outputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units or input_shape[-1],)

    def compute_output_spec(self, inputs, mask=None, training=None, return_attention_scores=False):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), self.compute_dtype)
        if return_attention_scores:
            batch, time = inputs.shape[0], inputs.shape[1]
            return outputs, keras.KerasTensor((batch, self.num_heads, time, time), self.compute_dtype)
        return outputs

    def get_config(self):
        config = super().get_config()
        config["value_activation"] = keras.activations.serialize(self.value_activation)
        return config


@keras.saving.register_keras_serializable(package="keras_textattn")
class ParallelConvMultiheadSelfAttention(keras.layers.Layer):
    """Two convolutional multihead self-attentions in parallel, multiplied
    elementwise, then layer-normalised (section 3.4 Eq. 4, section 3.8; Figure 1).

    Branch a has ELU values, branch b tanh values; `LayerNorm(MH_a(E) * MH_b(E))`.

    Args:
        num_heads, units, kernel_size, dropout, kernel_initializer, bias_initializer:
            as `ConvMultiheadSelfAttention`, for both branches.
        epsilon: of the layer normalisation.

    Call arguments:
        inputs: `(batch, time, features)`.
        mask: optional `(batch, time)` padding mask, propagated; padded outputs are zero.
        training: for dropout.
        return_attention_scores: also return `{"elu": ..., "tanh": ...}`, each
            `(batch, heads, time, time)`.

    Returns:
        `(batch, time, d)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import ParallelConvMultiheadSelfAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> hidden, weights = ParallelConvMultiheadSelfAttention(num_heads=2)(x, mask=mask, return_attention_scores=True)
    >>> tuple(hidden.shape), sorted(weights), tuple(weights["elu"].shape)
    ((2, 6, 8), ['elu', 'tanh'], (2, 2, 6, 6))
    """

    def __init__(
        self,
        num_heads=8,
        units=None,
        kernel_size=3,
        dropout=0.1,
        epsilon=1e-6,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.branch_kwargs = dict(
            num_heads=num_heads,
            units=units,
            kernel_size=kernel_size,
            dropout=dropout,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
        )
        _check_arguments(type(self).__name__, num_heads, units, kernel_size, dropout)
        utils.check_number(type(self).__name__, "epsilon", epsilon, 0, low_included=False)
        self.epsilon = epsilon
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = utils.check_sequence_shape(type(self).__name__, input_shape)  # named as this layer, not a branch
        self.elu_branch = ConvMultiheadSelfAttention(
            value_activation="elu",
            dtype=utils.sublayer_dtype(self, "elu_branch"),
            name="elu_branch",
            **self.branch_kwargs,
        )
        self.tanh_branch = ConvMultiheadSelfAttention(
            value_activation="tanh",
            dtype=utils.sublayer_dtype(self, "tanh_branch"),
            name="tanh_branch",
            **self.branch_kwargs,
        )
        self.elu_branch.build(input_shape)
        self.tanh_branch.build(input_shape)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.epsilon, dtype=utils.sublayer_dtype(self, "layer_norm"), name="layer_norm"
        )
        self.layer_norm.build(self.elu_branch.compute_output_shape(input_shape))

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        elu, elu_weights = self.elu_branch(inputs, mask=mask, training=training, return_attention_scores=True)
        tanh, tanh_weights = self.tanh_branch(inputs, mask=mask, training=training, return_attention_scores=True)
        outputs = utils.normalise_real_steps(self.layer_norm, elu * tanh, mask)
        if return_attention_scores:
            return outputs, {"elu": elu_weights, "tanh": tanh_weights}
        return outputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.branch_kwargs["units"] or input_shape[-1],)

    def compute_output_spec(self, inputs, mask=None, training=None, return_attention_scores=False):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), self.compute_dtype)
        if not return_attention_scores:
            return outputs
        batch, time = inputs.shape[0], inputs.shape[1]
        shape = (batch, self.branch_kwargs["num_heads"], time, time)
        return outputs, {name: keras.KerasTensor(shape, self.compute_dtype) for name in ("elu", "tanh")}

    def get_config(self):
        config = super().get_config()
        config.update(self.branch_kwargs)
        config["epsilon"] = self.epsilon
        return utils.with_quantized_sublayers(self, config)


@keras.saving.register_keras_serializable(package="keras_textattn")
class ConvMultiheadTargetAttention(_ConvAttentionBase):
    """Convolutional multihead target attention (section 3.5, Eq. 5).

    A learned target vector `T` (1 x d) is the query of every head; keys and values
    are `ELU(Conv1D(E))`. The output is one weighted average per text, `(batch, d)`.
    Dropout (0.1) on the attention weights, as in every scaled dot-product
    attention of the paper (section 3.8).

    Args:
        num_heads: h; must divide d.
        units: d; None (default) keeps the input size.
        kernel_size: the convolution window (3).
        dropout: rate on the attention weights.
        target_initializer: of T (Glorot uniform by default, as the convolutions).

    Call arguments:
        inputs: `(batch, time, features)`.
        mask: optional `(batch, time)` padding mask; consumed.
        training: for dropout.
        return_attention_scores: also return the weights, `(batch, heads, time)`.

    Returns:
        `(batch, d)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import ConvMultiheadTargetAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> layer = ConvMultiheadTargetAttention(num_heads=2, units=4)
    >>> summary, weights = layer(x, mask=mask, return_attention_scores=True)
    >>> tuple(summary.shape), tuple(weights.shape)
    ((2, 4), (2, 2, 6))
    >>> ops.convert_to_numpy(weights)[1].sum(axis=-1).round(4).tolist()  # each head sums to 1 over the real tokens
    [1.0, 1.0]
    """

    def __init__(self, num_heads=8, units=None, target_initializer="glorot_uniform", **kwargs):
        super().__init__(num_heads=num_heads, units=units, **kwargs)
        self.target_initializer = keras.initializers.get(target_initializer)

    def build(self, input_shape):
        input_shape, units = self._build_common(input_shape)
        self.target = self.add_weight(name="target", shape=(1, units), initializer=self.target_initializer)
        self.key_conv = self._conv(units, "elu", "key_conv", input_shape)
        self.value_conv = self._conv(units, "elu", "value_conv", input_shape)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        inputs = utils.zero_padding(inputs, mask)
        key_mask = utils.float_mask(mask, inputs)
        target = ops.cast(self.target, self.compute_dtype)
        query = ops.broadcast_to(ops.expand_dims(target, 0), (ops.shape(inputs)[0], 1, target.shape[-1]))
        heads, weights = self._attend(
            _split_heads(query, self.num_heads),
            _split_heads(utils.call_unless_empty(self.key_conv, inputs), self.num_heads),
            _split_heads(utils.call_unless_empty(self.value_conv, inputs), self.num_heads),
            key_mask,
            training,
        )
        outputs = ops.squeeze(_merge_heads(heads), axis=1)
        if return_attention_scores:
            return outputs, ops.squeeze(weights, axis=2)
        return outputs

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.units or input_shape[-1])

    def compute_output_spec(self, inputs, mask=None, training=None, return_attention_scores=False):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), self.compute_dtype)
        if return_attention_scores:
            shape = (inputs.shape[0], self.num_heads, inputs.shape[1])
            return outputs, keras.KerasTensor(shape, self.compute_dtype)
        return outputs

    def get_config(self):
        config = super().get_config()
        config["target_initializer"] = keras.initializers.serialize(self.target_initializer)
        return config
