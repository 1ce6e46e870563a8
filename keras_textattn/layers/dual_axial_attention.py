"""Dual-axial self-attention (Zhang et al., 2021, "Dual-axial self-attention network
for text classification", ../shared/papers/dual_axial_self_attention.md, section 3).

The three layers share the paper's light multi-dimensional self-attention
(section 3.2): single-dimensional scores `s_ij = q_i . k_j`, weights
`alpha_ij = softplus(s_ij)` (Eq. 6-7), `w_i = sum_j alpha_ij v_j`, and the output
`h_ij = softplus(w_ij) * x_ij` (Eq. 8). No `(batch, N, N, d)` tensor is ever formed:
memory is O(batch * (N^2 + N d + d^2)).

Nothing in Eq. 6-8 scales the products, so `h` grows about as the cube of the inputs:
under `mixed_float16` the text- and feature-axial layers' outputs pass float16's
largest value (65,504) for inputs of magnitude about 15 and 6 (the values themselves,
not a rounding); `DualAxialSelfAttention` computes them in float32 there.
"""

import math

import keras
from keras import ops

from keras_textattn.layers import _attention_utils as utils

_SCORE_ACTIVATIONS = {"softplus", "softmax"}
_AGGREGATIONS = {"sum", "mean"}


def _multi_dimensional_weights(query, key, value, key_mask, score_activation, attenuation=None):
    """softplus(W) of Eq. 6 / Eq. 10 along axis 1, in float32.

    Args:
        query, key, value: `(batch, L, C)`; axis 1 is the attended axis.
        key_mask: float32 `(batch, L)` or None.
        score_activation: "softplus" (Eq. 6) or "softmax" (the paper's ablation).
        attenuation: float32 `(L, L)` factors `zeta_ij` (Eq. 9) or None.

    Returns:
        float32 `(batch, L, C)`: the multi-dimensional attention weights.
    """
    scores = ops.einsum("bic,bjc->bij", query, key)
    value = ops.cast(value, "float32")
    if score_activation == "softplus":
        alpha = utils.softplus(ops.cast(scores, "float32"))
        if key_mask is not None:  # a masked key's value is zeroed, not its weights: one pass less over (L, L)
            value = value * ops.expand_dims(key_mask, -1)
    else:
        alpha = utils.masked_softmax(scores, None if key_mask is None else ops.expand_dims(key_mask, 1), axis=-1)
    if attenuation is not None:
        alpha = alpha * attenuation
    weighted = ops.einsum("bij,bjc->bic", alpha, value)
    return utils.softplus(weighted)


class _AxialSelfAttention(keras.layers.Layer):
    """Holds what the text- and feature-axial layers share: Q, K, V projections and config."""

    def __init__(
        self,
        score_activation="softplus",
        use_bias=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        utils.check_choice(type(self).__name__, "score_activation", score_activation, _SCORE_ACTIVATIONS)
        utils.check_bool(type(self).__name__, "use_bias", use_bias)
        self.score_activation = score_activation
        self.use_bias = bool(use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _build_projections(self, projected_shape):
        """Create the Q, K, V maps of Eq. 2-4 over the last axis of `projected_shape`."""
        units = projected_shape[-1]
        self.query_dense, self.key_dense, self.value_dense = (
            keras.layers.Dense(
                units,
                use_bias=self.use_bias,
                kernel_initializer=utils.clone_initializer(self.kernel_initializer),
                bias_initializer=utils.clone_initializer(self.bias_initializer),
                dtype=utils.sublayer_dtype(self, name),
                name=name,
            )
            for name in ("query", "key", "value")
        )
        for dense in (self.query_dense, self.key_dense, self.value_dense):
            dense.build(projected_shape)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        outputs = keras.KerasTensor(inputs.shape, self.compute_dtype)
        if return_attention_scores:
            return outputs, keras.KerasTensor(inputs.shape, self.compute_dtype)
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score_activation": self.score_activation,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return utils.with_quantized_sublayers(self, config)


@keras.saving.register_keras_serializable(package="keras_textattn")
class TextAxialSelfAttention(_AxialSelfAttention):
    """Text-axial self-attention (section 3.3, Eq. 9-11).

    `Q, K, V = X W_q, X W_k, X W_v` (d to d), `alpha_ij = softplus(q_i . k_j) zeta_ij`,
    `w_i = sum_j alpha_ij v_j` (Eq. 10), `h_ij = softplus(w_ij) x_ij mu` (Eq. 11), with
    the attenuation `zeta_ij = 1 / log(w |i - j| + c)` (Eq. 9, w = c = e) and
    `mu = 1 / N`, N the number of real (unpadded) tokens of each text.

    Choices where the paper is silent:
        - Q, K, V have no bias (Eq. 2-4 have none); `use_bias=True` adds one.
        - With `score_activation="softmax"` (the paper's ablation) the softmax
          replaces softplus in Eq. 10 and the attenuation multiplies its output.
        - Padded tokens are masked as keys and their outputs are zero, so padding
          never changes a real token's output; an all-padding text gives zeros.
        - The attention map returned is the paper's Figure 5 view: the per-token,
          per-dimension weights `softplus(w_ij)` of shape `(batch, time, features)`.

    Args:
        score_activation: "softplus" (paper) or "softmax".
        use_attenuation: apply `zeta` (Eq. 9); False is the paper's ablation.
        attenuation_w, attenuation_c: w and c of Eq. 9; need `w >= 0`, `c > 1` so
            that `log(w |i - j| + c) > 0`.
        use_bias, kernel_initializer, bias_initializer: of the Q, K, V maps.

    Call arguments:
        inputs: `(batch, time, features)`; time may be dynamic.
        mask: optional `(batch, time)` padding mask, propagated to the output.
        return_attention_scores: also return `softplus(W)`, `(batch, time, features)`.

    Returns:
        `H^t` of shape `(batch, time, features)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import TextAxialSelfAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> hidden, weights = TextAxialSelfAttention()(x, mask=mask, return_attention_scores=True)
    >>> tuple(hidden.shape), tuple(weights.shape)
    ((2, 6, 8), (2, 6, 8))
    >>> float(np.abs(ops.convert_to_numpy(hidden)[1, 4:]).max())  # padded steps are zero
    0.0
    """

    def __init__(
        self,
        score_activation="softplus",
        use_attenuation=True,
        attenuation_w=math.e,
        attenuation_c=math.e,
        **kwargs,
    ):
        super().__init__(score_activation=score_activation, **kwargs)
        if not (attenuation_w >= 0 and attenuation_c > 1):
            raise ValueError(
                "TextAxialSelfAttention: the attenuation 1 / log(w |i-j| + c) needs "
                "attenuation_w >= 0 and attenuation_c > 1. Received: "
                f"attenuation_w={attenuation_w!r}, attenuation_c={attenuation_c!r}"
            )
        utils.check_bool(type(self).__name__, "use_attenuation", use_attenuation)
        self.use_attenuation = bool(use_attenuation)
        self.attenuation_w = float(attenuation_w)
        self.attenuation_c = float(attenuation_c)

    def build(self, input_shape):
        input_shape = utils.check_sequence_shape(type(self).__name__, input_shape)
        self.input_spec = utils.built_input_spec(input_shape, axes=(2,))
        self._build_projections(input_shape)

    def _attenuation(self, time):
        position = ops.arange(time, dtype="float32")
        distance = ops.abs(ops.expand_dims(position, 1) - ops.expand_dims(position, 0))
        return 1.0 / ops.log(self.attenuation_w * distance + self.attenuation_c)

    def call(self, inputs, mask=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        inputs = utils.zero_padding(inputs, mask)
        key_mask = utils.float_mask(mask, inputs)
        attenuation = self._attenuation(ops.shape(inputs)[1]) if self.use_attenuation else None
        weights = _multi_dimensional_weights(
            self.query_dense(inputs),
            self.key_dense(inputs),
            self.value_dense(inputs),
            key_mask,
            self.score_activation,
            attenuation,
        )
        weights = weights * ops.expand_dims(key_mask, -1)
        real_tokens = ops.maximum(ops.sum(key_mask, axis=1), 1.0)
        mu = ops.reshape(1.0 / real_tokens, (-1, 1, 1))
        outputs = ops.cast(weights * ops.cast(inputs, "float32") * mu, self.compute_dtype)
        if return_attention_scores:
            return outputs, ops.cast(weights, self.compute_dtype)
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "use_attenuation": self.use_attenuation,
                "attenuation_w": self.attenuation_w,
                "attenuation_c": self.attenuation_c,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_textattn")
class FeatureAxialSelfAttention(_AxialSelfAttention):
    """Feature-axial self-attention (section 3.4): Eq. 6-8 on the transposed input.

    The input `(batch, time, features)` is transposed so that each feature is a
    vector over time; `Q, K, V = X^T W_q, X^T W_k, X^T W_v` with `time x time`
    maps, scores are `features x features`, and the output is transposed back:
    `h_ij = softplus(w_ji) x_ij`. No attenuation and no `mu` (section 3.4).

    Because the linear maps act on the time axis, the time length is static and
    fixed at build (a `ValueError` says so otherwise).

    Choices where the paper is silent:
        - Padded time steps are zeroed before the maps and their outputs are zero,
          so the content of padding never changes a real token's output (the maps
          keep their position-specific weights, as in `ScalableAttention`).
        - The attention map returned is the paper's Figure 5 view: `softplus(W)`
          transposed back to `(batch, time, features)`.

    Args:
        score_activation: "softplus" (paper) or "softmax".
        use_bias, kernel_initializer, bias_initializer: of the Q, K, V maps.

    Call arguments:
        inputs: `(batch, time, features)` with static time.
        mask: optional `(batch, time)` padding mask, propagated to the output.
        return_attention_scores: also return `softplus(W)`, `(batch, time, features)`.

    Returns:
        `H^f` of shape `(batch, time, features)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import FeatureAxialSelfAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> hidden, weights = FeatureAxialSelfAttention()(x, mask=mask, return_attention_scores=True)
    >>> tuple(hidden.shape), tuple(weights.shape)
    ((2, 6, 8), (2, 6, 8))
    """

    def build(self, input_shape):
        input_shape = utils.check_sequence_shape(type(self).__name__, input_shape, static_time=True)
        self.input_spec = utils.built_input_spec(input_shape, axes=(1, 2))
        self._build_projections((input_shape[0], input_shape[2], input_shape[1]))

    def call(self, inputs, mask=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        inputs = utils.zero_padding(inputs, mask)
        transposed = ops.transpose(inputs, (0, 2, 1))
        weights = _multi_dimensional_weights(
            self.query_dense(transposed),
            self.key_dense(transposed),
            self.value_dense(transposed),
            None,
            self.score_activation,
        )
        weights = ops.transpose(weights, (0, 2, 1))
        if mask is not None:
            weights = weights * ops.expand_dims(ops.cast(mask, "float32"), -1)
        outputs = ops.cast(weights * ops.cast(inputs, "float32"), self.compute_dtype)
        if return_attention_scores:
            return outputs, ops.cast(weights, self.compute_dtype)
        return outputs


@keras.saving.register_keras_serializable(package="keras_textattn")
class DualAxialSelfAttention(keras.layers.Layer):
    """Dual-axial self-attention (section 3.1-3.5): text- and feature-axial in parallel,
    fused by a gate.

    `f_i = sigmoid(W_f h_i^f + W_t h_i^t + b)` (Eq. 12) and
    `u = tanh(sum_i f_i * h_i^t + (1 - f_i) * h_i^f)` over the real tokens (Eq. 13).

    The feature-axial part needs a static time length (see
    `FeatureAxialSelfAttention`); with `use_feature_axis=False` the layer is the
    paper's "Text-axial SA" ablation (`u = tanh(sum_i h_i^t)`, no gate) and accepts
    any length.

    Args:
        score_activation: "softplus" (paper) or "softmax" (ablation), both modules.
        use_attenuation: Eq. 9 in the text-axial module (False: ablation).
        use_feature_axis: include the feature-axial module and the gate.
        aggregation: "sum" (Eq. 13 as written) or "mean": `tanh` of the mean over the
            real tokens instead of their sum. Our choice, not the paper's: the sum
            grows with the text's length, so on long texts (hundreds of tokens) `u`
            saturates and its gradient vanishes; the mean keeps its scale. Equal
            ordering of texts of one length; differs across lengths.
        return_sequences: return the per-token fused values
            `f_i * h_i^t + (1 - f_i) * h_i^f` of shape `(batch, time, features)`
            (mask propagated) instead of `u`.
        kernel_initializer, bias_initializer: of every map (Glorot and zeros, section 4).

    Under `mixed_float16` the text- and feature-axial parts and the gate compute in
    float32 (float32 weights either way): Eq. 6 and 10's unscaled products, and the
    parts' outputs that grow with them, pass float16's largest value (65,504) for
    inputs of magnitude about 6 and more, and the layer's output, a `tanh`, must stay finite
    there. `mixed_bfloat16` has float32's range and keeps its 16-bit compute.

    Call arguments:
        inputs: `(batch, time, features)`.
        mask: optional `(batch, time)` padding mask.
        return_attention_scores: also return a dict with the Figure 5 maps,
            `{"text": (batch, time, features), "feature": (batch, time, features)}`
            (`"feature"` only with `use_feature_axis`).

    Returns:
        `u` of shape `(batch, features)`, or `(batch, time, features)` with
        `return_sequences=True`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import DualAxialSelfAttention
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> summary, maps = DualAxialSelfAttention()(x, mask=mask, return_attention_scores=True)
    >>> tuple(summary.shape), sorted(maps), tuple(maps["text"].shape)
    ((2, 8), ['feature', 'text'], (2, 6, 8))
    >>> tuple(DualAxialSelfAttention(use_feature_axis=False, return_sequences=True)(x, mask=mask).shape)
    (2, 6, 8)
    """

    def __init__(
        self,
        score_activation="softplus",
        use_attenuation=True,
        use_feature_axis=True,
        aggregation="sum",
        return_sequences=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        utils.check_choice(type(self).__name__, "score_activation", score_activation, _SCORE_ACTIVATIONS)
        utils.check_choice(type(self).__name__, "aggregation", aggregation, _AGGREGATIONS)
        for name, flag in (
            ("use_attenuation", use_attenuation),
            ("use_feature_axis", use_feature_axis),
            ("return_sequences", return_sequences),
        ):
            utils.check_bool(type(self).__name__, name, flag)
        self.aggregation = aggregation
        self.score_activation = score_activation
        self.use_attenuation = bool(use_attenuation)
        self.use_feature_axis = bool(use_feature_axis)
        self.return_sequences = bool(return_sequences)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = utils.check_sequence_shape(type(self).__name__, input_shape, static_time=self.use_feature_axis)
        features = input_shape[-1]
        common = dict(
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            bias_initializer=keras.initializers.serialize(self.bias_initializer),
        )
        self.text_attention = TextAxialSelfAttention(
            score_activation=self.score_activation,
            use_attenuation=self.use_attenuation,
            dtype=self._parts_policy("text_axial"),
            name="text_axial",
            **common,
        )
        self.text_attention.build(input_shape)
        if self.use_feature_axis:
            self.feature_attention = FeatureAxialSelfAttention(
                score_activation=self.score_activation,
                dtype=self._parts_policy("feature_axial"),
                name="feature_axial",
                **common,
            )
            self.feature_attention.build(input_shape)
            # Eq. 12: W_f without bias, W_t with the gate's bias b.
            self.gate_feature = keras.layers.Dense(
                features, use_bias=False, dtype=self._parts_policy("gate_feature"), name="gate_feature", **common
            )
            self.gate_text = keras.layers.Dense(
                features, dtype=self._parts_policy("gate_text"), name="gate_text", **common
            )
            self.gate_feature.build(input_shape)
            self.gate_text.build(input_shape)

    def _parts_policy(self, name):
        """The policy of part `name` (`utils.sublayer_dtype`), float32 under mixed_float16 (see the
        class docstring)."""
        policy = utils.sublayer_dtype(self, name)
        if policy.compute_dtype == "float16" and policy.variable_dtype == "float32":
            return keras.DTypePolicy("float32")
        return policy

    def call(self, inputs, mask=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        text, text_map = self.text_attention(inputs, mask=mask, return_attention_scores=True)
        maps = {"text": text_map}
        if self.use_feature_axis:
            feature, maps["feature"] = self.feature_attention(inputs, mask=mask, return_attention_scores=True)
            gate = ops.sigmoid(ops.cast(self.gate_feature(feature) + self.gate_text(text), "float32"))
            fused = gate * ops.cast(text, "float32") + (1.0 - gate) * ops.cast(feature, "float32")
        else:
            fused = ops.cast(text, "float32")
        if mask is not None:
            fused = fused * ops.expand_dims(ops.cast(mask, "float32"), -1)
        if self.return_sequences:
            outputs = fused
        elif self.aggregation == "sum":
            outputs = ops.tanh(ops.sum(fused, axis=1))
        else:
            tokens = ops.sum(utils.float_mask(mask, fused), axis=1, keepdims=True)
            outputs = ops.tanh(ops.sum(fused, axis=1) / ops.maximum(tokens, 1.0))
        outputs = ops.cast(outputs, self.compute_dtype)
        if return_attention_scores:
            return outputs, {name: ops.cast(value, self.compute_dtype) for name, value in maps.items()}
        return outputs

    def compute_mask(self, inputs, mask=None):
        return mask if self.return_sequences else None

    def compute_output_shape(self, input_shape):
        if self.return_sequences:
            return tuple(input_shape)
        return (input_shape[0], input_shape[-1])

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), self.compute_dtype)
        if not return_attention_scores:
            return outputs
        names = ("text", "feature") if self.use_feature_axis else ("text",)
        return outputs, {name: keras.KerasTensor(inputs.shape, self.compute_dtype) for name in names}

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score_activation": self.score_activation,
                "use_attenuation": self.use_attenuation,
                "use_feature_axis": self.use_feature_axis,
                "aggregation": self.aggregation,
                "return_sequences": self.return_sequences,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return utils.with_quantized_sublayers(self, config)
