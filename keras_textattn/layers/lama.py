"""LAMA, low-rank factorised multi-head attention (Mehta et al., "Compact Multi-Head
Self-Attention for Learning Supervised Text Representations",
../shared/papers/lama_low_rank_multihead_attention.md, sections 3.2-3.4)."""

import keras
from keras import ops

from keras_textattn.layers import _attention_utils as utils

_REGULARIZATIONS = {None, "positions", "embeddings"}


@keras.saving.register_keras_serializable(package="keras_textattn")
class LAMA(keras.layers.Layer):
    """Low-rank multi-head attention against a context vector (Eq. 7, 10-15, 18-19).

    `u_t = tanh(W_w h_t + b_w)` (Eq. 7); for each head, rank-k bilinear scores
    `f_t = 1^T (P^T c o Q^T u_t)` (Eq. 10-11); `A = softmax_t(l2_heads(tanh(f)))`
    (Eq. 13), shape `(batch, heads, time)`; `S = A H` (Eq. 15), `(batch, heads, features)`.

    Choices where the paper is silent or ambiguous:
        - `W_w`, `b_w` are drawn from N(0, 0.1^2) (section 3.2); P and Q Glorot uniform;
          the learned context `c` N(0, 0.1^2). The paper initialises `c` with the mean
          word embedding of a document, which is what `call(h, context=...)` is for.
        - The l2 normalisation runs over the heads of each token (Eq. 13). With one
          head it reduces every score to its sign, so `l2_normalize=False` is offered.
        - The disagreement penalty (Eq. 18-19) is added with `add_loss` as
          `lambda * mean over the batch` (the paper sums over a minibatch; a mean keeps
          lambda independent of the batch size): `"positions"` adds `||A A^T - I||_F^2`,
          `"embeddings"` the mean cosine similarity of the rows of S over all pairs
          (i, j), the diagonal included, exactly as Eq. 19b.
        - Padded tokens get zero weight; an all-padding text gives `A = 0`, `S = 0`.

    Args:
        num_heads: m.
        rank: k, the rank of each head's bilinear form (1 in the paper).
        flatten: return S flattened to `(batch, heads * features)` (the paper's `d`).
        l2_normalize: apply the l2 normalisation of Eq. 13.
        regularization: None, "positions" (Eq. 19a) or "embeddings" (Eq. 19b).
        regularization_weight: lambda (0.2 in the paper).

    Call arguments:
        inputs: `H`, `(batch, time, features)`.
        context: optional per-example context `(batch, context_features)` used
            instead of the learned vector (the paper's LAMA+ctx); decided at the
            first call and fixed after it.
        mask: optional `(batch, time)` padding mask; consumed.
        return_attention_scores: also return `A`, `(batch, heads, time)`.

    Returns:
        `S`: `(batch, heads, features)`, or `(batch, heads * features)` if `flatten`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import LAMA
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> summary, scores = LAMA(num_heads=3)(x, mask=mask, return_attention_scores=True)
    >>> tuple(summary.shape), tuple(scores.shape)
    ((2, 3, 8), (2, 3, 6))
    >>> float(ops.convert_to_numpy(scores)[1, :, 4:].max())  # padding gets no weight
    0.0
    >>> context = x.mean(axis=1)  # LAMA+ctx: a context vector per text instead of the learned one
    >>> tuple(LAMA(num_heads=3, flatten=True)(x, context=context, mask=mask).shape)
    (2, 24)
    """

    def __init__(
        self,
        num_heads=4,
        rank=1,
        flatten=False,
        l2_normalize=True,
        regularization=None,
        regularization_weight=0.2,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        utils.check_positive_int(type(self).__name__, "num_heads", num_heads)
        utils.check_positive_int(type(self).__name__, "rank", rank)
        utils.check_choice(type(self).__name__, "regularization", regularization, _REGULARIZATIONS)
        utils.check_number(type(self).__name__, "regularization_weight", regularization_weight, 0)
        utils.check_bool(type(self).__name__, "flatten", flatten)
        utils.check_bool(type(self).__name__, "l2_normalize", l2_normalize)
        self.num_heads = num_heads
        self.rank = rank
        self.flatten = bool(flatten)
        self.l2_normalize = bool(l2_normalize)
        self.regularization = regularization
        self.regularization_weight = float(regularization_weight)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.supports_masking = True

    def build(self, inputs_shape, context_shape=None):
        inputs_shape = utils.check_sequence_shape(type(self).__name__, inputs_shape)
        features = inputs_shape[-1]
        if context_shape is not None and (len(context_shape) != 2 or context_shape[-1] is None):
            raise ValueError(
                f"{type(self).__name__}: `context` must have shape (batch, context_features) with known "
                f"context_features. Received: context shape {tuple(context_shape)}"
            )
        context_features = features if context_shape is None else context_shape[-1]
        self.input_spec = utils.built_input_spec(inputs_shape, axes=(2,))
        self.uses_context_input = context_shape is not None
        self.hidden = keras.layers.Dense(
            features,
            activation="tanh",
            kernel_initializer=keras.initializers.RandomNormal(stddev=0.1),
            bias_initializer=keras.initializers.RandomNormal(stddev=0.1),
            dtype=utils.sublayer_dtype(self, "hidden"),
            name="hidden",
        )
        self.hidden.build(inputs_shape)
        factors = self.num_heads * self.rank
        self.context_factors = self.add_weight(
            name="context_factors",
            shape=(context_features, factors),
            initializer=utils.clone_initializer(self.kernel_initializer),
        )
        self.token_factors = self.add_weight(
            name="token_factors",
            shape=(features, factors),
            initializer=utils.clone_initializer(self.kernel_initializer),
        )
        if not self.uses_context_input:
            self.context = self.add_weight(
                name="context", shape=(features,), initializer=keras.initializers.RandomNormal(stddev=0.1)
            )

    def call(self, inputs, context=None, mask=None, return_attention_scores=False):
        utils.check_call_inputs(self, inputs, mask)
        if (context is not None) != self.uses_context_input:
            raise ValueError(
                f"{type(self).__name__} was built {'with' if self.uses_context_input else 'without'} a "
                f"`context` input and must be called the same way. Received: "
                f"context={'None' if context is None else tuple(context.shape)}"
            )
        inputs = utils.zero_padding(inputs, mask)
        key_mask = utils.float_mask(mask, inputs)
        hidden = ops.cast(self.hidden(inputs), "float32")  # u_t, (batch, time, features)
        if context is None:
            context = ops.expand_dims(self.context, 0)  # (1, features)
        context_proj = ops.matmul(ops.cast(context, "float32"), ops.cast(self.context_factors, "float32"))
        token_proj = ops.matmul(hidden, ops.cast(self.token_factors, "float32"))
        # Eq. 10-11: Hadamard product of the projections, summed over each head's k factors.
        scores = ops.expand_dims(context_proj, 1) * token_proj  # (batch, time, m * k)
        batch, time = ops.shape(scores)[0], ops.shape(scores)[1]
        scores = ops.sum(ops.reshape(scores, (batch, time, self.num_heads, self.rank)), axis=-1)
        scores = ops.tanh(scores)
        if self.l2_normalize:
            # Not ops.normalize: the TFLite converter turns it into L2_NORMALIZATION,
            # which gives NaN for the zero scores of an all-padding text with a context.
            scores = scores / ops.sqrt(ops.sum(ops.square(scores), axis=-1, keepdims=True) + 1e-12)
        # Eq. 13: softmax over time, one row per head.
        attention = utils.masked_softmax(ops.transpose(scores, (0, 2, 1)), key_mask[:, None, :], axis=-1)
        embeddings = ops.einsum("bmt,btf->bmf", attention, ops.cast(inputs, "float32"))  # Eq. 15
        if self.regularization is not None and self.regularization_weight > 0:
            self.add_loss(self.regularization_weight * self._disagreement_penalty(attention, embeddings))
        outputs = embeddings
        if self.flatten:
            outputs = ops.reshape(outputs, (batch, self.num_heads * inputs.shape[-1]))
        outputs = ops.cast(outputs, self.compute_dtype)
        if return_attention_scores:
            return outputs, ops.cast(attention, self.compute_dtype)
        return outputs

    def _disagreement_penalty(self, attention, embeddings):
        """`-D` of Eq. 19a or 19b, averaged over the batch (float32 scalar)."""
        if self.regularization == "positions":
            gram = ops.einsum("bmt,bnt->bmn", attention, attention)
            identity = ops.eye(self.num_heads, dtype="float32")
            return ops.mean(ops.sum(ops.square(gram - identity), axis=(1, 2)))
        unit = ops.normalize(embeddings, axis=-1, order=2, epsilon=1e-12)
        cosine = ops.einsum("bmf,bnf->bmn", unit, unit)
        return ops.mean(cosine)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, inputs_shape, context_shape=None):
        if self.flatten:
            features = inputs_shape[-1]
            return (inputs_shape[0], None if features is None else self.num_heads * features)
        return (inputs_shape[0], self.num_heads, inputs_shape[-1])

    def compute_output_spec(self, inputs, context=None, mask=None, return_attention_scores=False):
        outputs = keras.KerasTensor(self.compute_output_shape(inputs.shape), self.compute_dtype)
        if return_attention_scores:
            shape = (inputs.shape[0], self.num_heads, inputs.shape[1])
            return outputs, keras.KerasTensor(shape, self.compute_dtype)
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "rank": self.rank,
                "flatten": self.flatten,
                "l2_normalize": self.l2_normalize,
                "regularization": self.regularization,
                "regularization_weight": self.regularization_weight,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return utils.with_quantized_sublayers(self, config)
