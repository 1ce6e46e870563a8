"""CSPAN blocks (Jiang et al., "Cascaded Semantic and Positional Self-Attention
Network for Document Classification", ../shared/papers/cspan_cascaded_semantic_positional.md,
section 2)."""

import math

import keras
from keras import ops

from keras_textattn.layers import _attention_utils as utils


@keras.saving.register_keras_serializable(package="keras_textattn")
class SemanticSelfAttention(keras.layers.Layer):
    """Parameter-free self-attention, then layer normalisation (section 2.1, Eq. 4).

    `S = LayerNorm(softmax(D D^T / sqrt(d)) D)`: queries, keys and values are the
    input itself; the only weights are the layer normalisation's scale and offset.

    Choices where the paper is silent: padded tokens are masked as keys and their
    outputs are zero (not the layer normalisation's offset), so padding never
    changes a real token's output.

    Args:
        epsilon: of the layer normalisation.

    Call arguments:
        inputs: `(batch, time, features)`.
        mask: optional `(batch, time)` padding mask, propagated.
        return_attention_scores: also return the weights, `(batch, time, time)`.

    Returns:
        `(batch, time, features)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import SemanticSelfAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> semantic, weights = SemanticSelfAttention()(x, mask=mask, return_attention_scores=True)
    >>> tuple(semantic.shape), tuple(weights.shape)
    ((2, 6, 8), (2, 6, 6))
    """

    def __init__(self, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        utils.check_number(type(self).__name__, "epsilon", epsilon, 0, low_included=False)
        self.epsilon = epsilon
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = utils.check_sequence_shape(type(self).__name__, input_shape)
        self.input_spec = utils.built_input_spec(input_shape, axes=(2,))
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.epsilon, dtype=utils.sublayer_dtype(self, "layer_norm"), name="layer_norm"
        )
        self.layer_norm.build(input_shape)

    def call(self, inputs, mask=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        inputs = utils.zero_padding(inputs, mask)
        key_mask = utils.float_mask(mask, inputs)
        scale = 1.0 / math.sqrt(inputs.shape[-1])
        scores = ops.einsum("bic,bjc->bij", inputs, inputs)
        weights = utils.masked_softmax(ops.cast(scores, "float32") * scale, key_mask[:, None, :], axis=-1)
        weights = ops.cast(weights, self.compute_dtype)
        outputs = utils.normalise_real_steps(self.layer_norm, ops.matmul(weights, inputs), mask)
        if return_attention_scores:
            return outputs, weights
        return outputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        outputs = keras.KerasTensor(inputs.shape, self.compute_dtype)
        if return_attention_scores:
            batch, time = inputs.shape[0], inputs.shape[1]
            return outputs, keras.KerasTensor((batch, time, time), self.compute_dtype)
        return outputs

    def get_config(self):
        config = super().get_config()
        config["epsilon"] = self.epsilon
        return utils.with_quantized_sublayers(self, config)


@keras.saving.register_keras_serializable(package="keras_textattn")
class CascadedSemanticPositional(keras.layers.Layer):
    """Semantic self-attention, Bi-LSTM, self-attention, residual (section 2.1-2.2, Eq. 4-9).

    `S = SemanticSelfAttention(D)` (Eq. 4); `H = BiLSTM(S)` with d/2 units per
    direction (Eq. 5-7); `P = LayerNorm(softmax(H H^T / sqrt(d)) H)` (Eq. 8, the
    same parameter-free attention); output `F = S + P` (Eq. 9).

    Each direction has d/2 units, fixed by the residual of Eq. 9, so d must be even.
    Choice where the paper is silent: `lstm_layers > 1` stacks Bi-LSTMs.

    Args:
        lstm_layers: number of stacked Bi-LSTM layers (1 in the paper's base model).
        epsilon: of both layer normalisations.

    Call arguments:
        inputs: `(batch, time, features)`.
        mask: optional `(batch, time)` padding mask, propagated; the LSTMs skip
            padded steps and padded outputs are zero.
        return_attention_scores: also return `{"semantic": ..., "positional": ...}`,
            each `(batch, time, time)`.

    Returns:
        `F`, `(batch, time, features)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import CascadedSemanticPositional
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> features, weights = CascadedSemanticPositional()(x, mask=mask, return_attention_scores=True)
    >>> tuple(features.shape), sorted(weights), tuple(weights["positional"].shape)
    ((2, 6, 8), ['positional', 'semantic'], (2, 6, 6))
    """

    def __init__(self, lstm_layers=1, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        utils.check_positive_int(type(self).__name__, "lstm_layers", lstm_layers)
        utils.check_number(type(self).__name__, "epsilon", epsilon, 0, low_included=False)
        self.lstm_layers = lstm_layers
        self.epsilon = epsilon
        self.supports_masking = True

    def build(self, input_shape):
        name = type(self).__name__
        input_shape = utils.check_sequence_shape(name, input_shape)
        features = input_shape[-1]
        if features % 2:
            raise ValueError(
                f"{name}: the residual F = S + P (Eq. 9) needs Bi-LSTM outputs of the input "
                f"size, d/2 per direction, so d must be even. Received: features={features}"
            )
        self.semantic_attention = SemanticSelfAttention(
            epsilon=self.epsilon, dtype=utils.sublayer_dtype(self, "semantic_attention"), name="semantic_attention"
        )
        self.semantic_attention.build(input_shape)
        # Each Bi-LSTM as a forward and a backward LSTM rather than keras.layers.Bidirectional:
        # Bidirectional copies its layer through serialisation, which, when a saved model
        # is loaded, can hand a stack of them each other's LSTMs (Keras's object-sharing
        # scope matches objects by id()).
        self.forward_lstms, self.backward_lstms = [], []
        for i in range(self.lstm_layers):
            for direction, lstms in (("forward", self.forward_lstms), ("backward", self.backward_lstms)):
                lstm = keras.layers.LSTM(
                    features // 2,
                    return_sequences=True,
                    go_backwards=direction == "backward",
                    dtype=utils.sublayer_dtype(self, f"{direction}_lstm_{i}"),
                    name=f"{direction}_lstm_{i}",
                )
                lstm.build(input_shape[:-1] + (features,))
                lstms.append(lstm)
        self.positional_attention = SemanticSelfAttention(
            epsilon=self.epsilon, dtype=utils.sublayer_dtype(self, "positional_attention"), name="positional_attention"
        )
        self.positional_attention.build(input_shape)

    def call(self, inputs, mask=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        semantic, semantic_weights = self.semantic_attention(inputs, mask=mask, return_attention_scores=True)
        # On JAX the LSTMs always get a mask (all steps, where none is given): without one, Keras
        # 3.15's JAX backend takes its cuDNN LSTM on a GPU, which returns a backward LSTM's outputs
        # in input order where every other path returns them last step first (measured on an
        # H100; the flip below would undo it). Elsewhere no mask is added: the masked path is
        # 1.3-1.4x slower on a CPU.
        lstm_mask = mask
        if mask is None and keras.backend.backend() == "jax":
            lstm_mask = ops.ones(ops.shape(inputs)[:2], "bool")
        hidden = semantic
        for forward, backward in zip(self.forward_lstms, self.backward_lstms):
            # The backward LSTM returns its outputs last step first: flip them back (Eq. 7).
            backward_hidden = ops.flip(utils.call_unless_empty(backward, hidden, mask=lstm_mask), axis=1)
            hidden = ops.concatenate(
                [utils.call_unless_empty(forward, hidden, mask=lstm_mask), backward_hidden], axis=-1
            )
        positional, positional_weights = self.positional_attention(hidden, mask=mask, return_attention_scores=True)
        outputs = semantic + positional
        if return_attention_scores:
            return outputs, {"semantic": semantic_weights, "positional": positional_weights}
        return outputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        outputs = keras.KerasTensor(inputs.shape, self.compute_dtype)
        if not return_attention_scores:
            return outputs
        batch, time = inputs.shape[0], inputs.shape[1]
        weights = keras.KerasTensor((batch, time, time), self.compute_dtype)
        return outputs, {"semantic": weights, "positional": weights}

    def get_config(self):
        config = super().get_config()
        config.update({"lstm_layers": self.lstm_layers, "epsilon": self.epsilon})
        return utils.with_quantized_sublayers(self, config)


@keras.saving.register_keras_serializable(package="keras_textattn")
class MultiQueryAttention(keras.layers.Layer):
    """Multi-query soft attention (section 2.3, Eq. 10-13).

    `u_t = tanh(F_t W_h + b_h)` (Eq. 10); m learned queries;
    `alpha_it = softmax_t(u_t . Q_i)` (Eq. 11); `F_i = sum_t alpha_it F_t` (Eq. 12);
    output `concat(F_1..F_m) W_f` (Eq. 13), shape `(batch, output_dim)`.

    Choices where the paper is silent: `W_f` has no bias (Eq. 13 has none);
    queries are drawn Glorot uniform; padded tokens get zero weight and an
    all-padding text gives a zero output.

    Args:
        num_queries: m (16 in the paper).
        output_dim: columns of `W_f`; None (default) is d, as in the paper.

    Call arguments:
        inputs: `F`, `(batch, time, features)`.
        mask: optional `(batch, time)` padding mask; consumed.
        return_attention_scores: also return `alpha`, `(batch, queries, time)`.

    Returns:
        `(batch, output_dim)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import MultiQueryAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> pooled, weights = MultiQueryAttention(num_queries=4, output_dim=5)(x, mask=mask, return_attention_scores=True)
    >>> tuple(pooled.shape), tuple(weights.shape)
    ((2, 5), (2, 4, 6))
    >>> float(ops.convert_to_numpy(weights)[1, :, 4:].max())  # padding gets no weight
    0.0
    """

    def __init__(self, num_queries=16, output_dim=None, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        utils.check_positive_int(type(self).__name__, "num_queries", num_queries)
        utils.check_positive_int(type(self).__name__, "output_dim", output_dim, allow_none=True)
        self.num_queries = num_queries
        self.output_dim = output_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = utils.check_sequence_shape(type(self).__name__, input_shape)
        self.input_spec = utils.built_input_spec(input_shape, axes=(2,))
        features = input_shape[-1]
        self.hidden = keras.layers.Dense(
            features,
            activation="tanh",
            kernel_initializer=utils.clone_initializer(self.kernel_initializer),
            dtype=utils.sublayer_dtype(self, "hidden"),
            name="hidden",
        )
        self.hidden.build(input_shape)
        self.queries = self.add_weight(
            name="queries",
            shape=(self.num_queries, features),
            initializer=utils.clone_initializer(self.kernel_initializer),
        )
        self.fusion = keras.layers.Dense(
            self.output_dim or features,
            use_bias=False,
            kernel_initializer=utils.clone_initializer(self.kernel_initializer),
            dtype=utils.sublayer_dtype(self, "fusion"),
            name="fusion",
        )
        self.fusion.build((input_shape[0], self.num_queries * features))

    def call(self, inputs, mask=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        inputs = utils.zero_padding(inputs, mask)
        key_mask = utils.float_mask(mask, inputs)
        hidden = self.hidden(inputs)
        scores = ops.einsum("btf,mf->bmt", hidden, ops.cast(self.queries, self.compute_dtype))
        alpha = utils.masked_softmax(scores, key_mask[:, None, :], axis=-1)
        pooled = ops.einsum("bmt,btf->bmf", alpha, ops.cast(inputs, "float32"))
        pooled = ops.reshape(pooled, (ops.shape(pooled)[0], self.num_queries * inputs.shape[-1]))
        outputs = self.fusion(ops.cast(pooled, self.compute_dtype))
        if return_attention_scores:
            return outputs, ops.cast(alpha, self.compute_dtype)
        return outputs

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.output_dim or input_shape[-1])

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), self.compute_dtype)
        if return_attention_scores:
            shape = (inputs.shape[0], self.num_queries, inputs.shape[1])
            return outputs, keras.KerasTensor(shape, self.compute_dtype)
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_queries": self.num_queries,
                "output_dim": self.output_dim,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return utils.with_quantized_sublayers(self, config)
