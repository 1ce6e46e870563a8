"""Mask-aware pooling over time (HCAN's maxpool variant, LAMA+ctx's context, the baselines)."""

import keras
from keras import ops

from keras_textattn.layers import _attention_utils as utils


@keras.saving.register_keras_serializable(package="keras_textattn")
class MaskedGlobalMaxPooling1D(keras.layers.Layer):
    """Max over the real (unpadded) time steps: `(batch, time, features)` to `(batch, features)`.

    Keras's `GlobalMaxPooling1D` ignores masks, so padding could win the max.
    An all-padding text gives zeros.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.max(inputs, axis=1)
        keep = ops.expand_dims(ops.cast(mask, "bool"), -1)
        pooled = ops.max(ops.where(keep, inputs, ops.full_like(inputs, float("-inf"))), axis=1)
        return ops.where(ops.any(keep, axis=1), pooled, ops.zeros_like(pooled))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        utils.check_sequence_shape("MaskedGlobalMaxPooling1D", input_shape)
        return (input_shape[0], input_shape[-1])


@keras.saving.register_keras_serializable(package="keras_textattn")
class MaskedGlobalAveragePooling1D(keras.layers.Layer):
    """Mean over the real (unpadded) time steps: `(batch, time, features)` to `(batch, features)`.

    Unlike Keras's `GlobalAveragePooling1D`, which divides by zero (NaN) for a text
    that is all padding, an all-padding text gives zeros.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.mean(inputs, axis=1)
        weights = ops.expand_dims(ops.cast(mask, inputs.dtype), -1)
        return ops.sum(inputs * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        utils.check_sequence_shape("MaskedGlobalAveragePooling1D", input_shape)
        return (input_shape[0], input_shape[-1])
