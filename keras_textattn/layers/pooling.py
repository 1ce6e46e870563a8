"""Mask-aware pooling over time (HCAN's maxpool variant, LAMA+ctx's context, the baselines)."""

import keras
from keras import ops

from keras_textattn.layers import _attention_utils as utils


class _MaskedGlobalPooling1D(keras.layers.Layer):
    """What the two poolings share: `(batch, time, features)` to `(batch, features)`, the
    mask consumed (none propagated)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def build(self, input_shape):
        utils.check_sequence_shape(type(self).__name__, input_shape)  # a rank-2 input pooled to (batch,) before

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        utils.check_sequence_shape(type(self).__name__, input_shape)
        return (input_shape[0], input_shape[-1])


@keras.saving.register_keras_serializable(package="keras_textattn")
class MaskedGlobalMaxPooling1D(_MaskedGlobalPooling1D):
    """Max over the real (unpadded) time steps: `(batch, time, features)` to `(batch, features)`.

    Keras's `GlobalMaxPooling1D` ignores masks, so padding could win the max.
    An all-padding text, or a batch of no time steps (`(batch, 0, features)`, as a
    vectorizer without a fixed length gives for empty texts), gives zeros.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import MaskedGlobalMaxPooling1D
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> x[1, 4:] = 100.0  # large values at the padded steps...
    >>> bool((ops.convert_to_numpy(MaskedGlobalMaxPooling1D()(x, mask=mask))[1] < 100).all())  # ...never win
    True
    """

    def call(self, inputs, mask=None):
        utils.check_call_inputs(self, inputs, mask)
        keep = ops.expand_dims(ops.cast(utils.float_mask(mask, inputs), "bool"), -1)
        # `initial`: no time steps at all is all padding too (without it Keras refuses the max
        # of an empty axis). The zeros are shaped from a sum, not from `pooled`: for an empty
        # axis Keras's PyTorch backend returns `initial` as a scalar, whatever the axis.
        pooled = ops.max(ops.where(keep, inputs, ops.full_like(inputs, float("-inf"))), axis=1, initial=float("-inf"))
        return ops.where(ops.any(keep, axis=1), pooled, ops.zeros_like(ops.sum(inputs, axis=1)))


@keras.saving.register_keras_serializable(package="keras_textattn")
class MaskedGlobalAveragePooling1D(_MaskedGlobalPooling1D):
    """Mean over the real (unpadded) time steps: `(batch, time, features)` to `(batch, features)`.

    Unlike Keras's `GlobalAveragePooling1D`, which divides by zero (NaN) for a text
    that is all padding, an all-padding text gives zeros, as does a batch of no time
    steps (`(batch, 0, features)`).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_textattn.layers import MaskedGlobalAveragePooling1D
    >>> x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")  # (batch, time, features)
    >>> mask = np.array([[True] * 6, [True] * 4 + [False] * 2])  # the second text has 2 padded steps
    >>> pooled = ops.convert_to_numpy(MaskedGlobalAveragePooling1D()(x, mask=mask))
    >>> bool(np.allclose(pooled[1], x[1, :4].mean(axis=0), atol=1e-6))  # the mean of the real steps
    True
    """

    def call(self, inputs, mask=None):
        utils.check_call_inputs(self, inputs, mask)
        weights = ops.expand_dims(ops.cast(utils.float_mask(mask, inputs), inputs.dtype), -1)
        return ops.sum(inputs * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)
