"""Helpers shared by the attention layers: shape checks, masks, stable softmax, and the
dtype policies of their sublayers (kept through Keras's quantization and `.keras` files).

Everything here uses `keras.ops` only, so the layers run on any Keras 3 backend.
Scores are normalised in float32 whatever the layer's compute dtype, so that
`mixed_float16` / `mixed_bfloat16` policies neither overflow nor lose the
ordering of close scores; callers cast the result back to the compute dtype.
"""

import keras
from keras import ops

from keras_textattn_config.checks import check_bool  # noqa: F401 (the layers' argument checks)
from keras_textattn_config.checks import check_choice  # noqa: F401
from keras_textattn_config.checks import check_number  # noqa: F401
from keras_textattn_config.checks import check_positive_int  # noqa: F401

# Added to the scores of masked keys before a softmax. Finite (unlike -inf),
# so a row whose keys are all masked gives no NaN; those rows are then zeroed.
_MASKED_SCORE = -1e9


def check_sequence_shape(layer_name, input_shape, static_time=False):
    """Check a `(batch, time, features)` input shape and return it as a tuple.

    `features` must be known and positive; `time` too when `static_time`.
    """
    input_shape = tuple(input_shape)
    if len(input_shape) != 3:
        raise ValueError(
            f"{layer_name} expects inputs of shape (batch, time, features), a rank-3 "
            f"tensor. Received: input shape {input_shape} (rank {len(input_shape)})"
        )
    if not input_shape[-1]:
        raise ValueError(
            f"{layer_name} needs a known, positive feature size (last axis). Received: input shape {input_shape}"
        )
    if static_time and input_shape[1] == 0:
        raise ValueError(
            f"{layer_name} has weights for every position, so it needs a time length of at "
            f"least 1. Received: input shape {input_shape}"
        )
    if static_time and input_shape[1] is None:
        raise ValueError(
            f"{layer_name} has weights for every position, so it needs a static time "
            "length (e.g. `keras.Input(shape=(sequence_length,))` before the "
            f"embedding, or a fixed `sequence_length` in the text encoder). "
            f"Received: input shape {input_shape}"
        )
    return input_shape


def check_call_inputs(layer, inputs, mask):
    """Raise a `ValueError` naming `layer` for inputs that are not floating-point features (token
    ids passed without an embedding, say) or a mask that does not match their `(batch, time)`,
    before a backend fails on them with a message of its own (or, for ids, silently does not)."""
    name = type(layer).__name__
    dtype = keras.backend.standardize_dtype(inputs.dtype)
    if not keras.backend.is_float_dtype(dtype):
        raise ValueError(
            f"{name} expects floating-point features (batch, time, features), e.g. from an Embedding "
            f"layer. Received: inputs of dtype {dtype}"
        )
    if mask is not None:
        expected, given = tuple(inputs.shape[:2]), tuple(mask.shape)
        if len(given) != 2 or any(a is not None and b is not None and a != b for a, b in zip(expected, given)):
            raise ValueError(
                f"{name} expects a padding mask of shape (batch, time) = {expected}, the first two axes "
                f"of its inputs. Received: mask shape {given}"
            )


def built_input_spec(built_shape, axes):
    """A `keras.InputSpec` holding later calls to the shape the layer was built for, on
    `axes` (Keras then raises a `ValueError` naming the expected and the given shape)."""
    return keras.InputSpec(
        ndim=len(built_shape), axes={axis: built_shape[axis] for axis in axes if built_shape[axis] is not None}
    )


def float_mask(mask, inputs):
    """Return `mask` as float32 of shape `(batch, time)`; all ones if `mask` is None."""
    if mask is None:
        return ops.ones(ops.shape(inputs)[:2], dtype="float32")
    return ops.cast(mask, "float32")


def call_unless_empty(sublayer, inputs, **kwargs):
    """`sublayer(inputs, **kwargs)`; for a batch known to hold no rows (static size 0), its empty
    output (`compute_output_shape`) without the call, as every other layer here returns. On
    TensorFlow, `Conv1D` returns such a batch with the input's channels (TensorFlow's oneDNN
    convolution; right with `TF_ENABLE_ONEDNN_OPTS=0`), and `LSTMCell` fails on one (Keras's
    `ops.add` takes its `(0, n)` recurrent term for a bias, since it skips dimensions of size 0)."""
    if inputs.shape[0] == 0:
        return ops.zeros(sublayer.compute_output_shape(tuple(inputs.shape)), dtype=sublayer.compute_dtype)
    return sublayer(inputs, **kwargs)


def zero_padding(inputs, mask):
    """Set padded time steps of `(batch, time, features)` inputs to exactly zero.

    `where` (not a product) so that even inf/NaN at padded steps cannot leak.
    """
    if mask is None:
        return inputs
    keep = ops.expand_dims(ops.cast(mask, "bool"), -1)
    return ops.where(keep, inputs, ops.zeros_like(inputs))


def normalise_real_steps(layer_norm, inputs, mask):
    """`layer_norm(inputs)` of `(batch, time, features)` inputs, padded steps exactly zero.

    Padded steps enter the normalisation as alternating +1 / -1 rather than as zeros. A
    zero row's variance is 0, and its 1 / sqrt(epsilon) (1,000 at 1e-6) would set the
    range in which an int8 export quantises the reciprocal square root of every row, in
    256 steps: the real rows' values would all round to 0 or one step. Each row is
    normalised on its own, so the real steps' results are unchanged.
    """
    if mask is None:
        return layer_norm(inputs)
    signs = ops.cast(1 - 2 * (ops.arange(inputs.shape[-1]) % 2), inputs.dtype)
    keep = ops.expand_dims(ops.cast(mask, "bool"), -1)
    return zero_padding(layer_norm(ops.where(keep, inputs, signs)), mask)


def masked_softmax(scores, key_mask=None, axis=-1):
    """Softmax over `axis` in float32, ignoring masked keys.

    Args:
        scores: scores of any float dtype.
        key_mask: float32 mask broadcastable to `scores`, 1 for real keys, or None.
        axis: the axis that is normalised (the keys' axis).

    Returns:
        float32 weights that sum to 1 over the real keys and are exactly 0 at
        masked keys; a row with no real key is all zeros (not NaN, not uniform).
        One key (a one-token text, a one-sentence document) gets
        `exp(s - s)`: the softmax's value (1) and gradient (0), still connected
        to the scores, without Keras's warning that a softmax over an axis of
        size 1 is likely a mistake.
    """
    scores = ops.cast(scores, "float32")
    if key_mask is not None:
        scores = ops.where(key_mask > 0, scores, ops.full_like(scores, _MASKED_SCORE))
    weights = ops.exp(scores - scores) if scores.shape[axis] == 1 else ops.softmax(scores, axis=axis)
    return weights if key_mask is None else weights * key_mask


@ops.custom_gradient
def softplus(x):
    """softplus as `relu(x) + log1p(exp(-|x|))`: it cannot overflow, also after TFLite
    conversion, where `ops.softplus` becomes `log(1 + exp(x))` and is inf from x ~ 89. Its
    gradient is given as `sigmoid(x)`, one op: differentiating the five ops of the formula
    made the backward pass over dual-axial's `(batch, N, N)` scores several times slower."""

    def gradient(*args, upstream=None):
        if upstream is None:
            (upstream,) = args
        return upstream * ops.sigmoid(x)

    return ops.relu(x) + ops.log1p(ops.exp(-ops.abs(x))), gradient


def masked_softplus(scores, key_mask=None):
    """softplus(scores) in float32, exactly 0 at masked keys."""
    weights = softplus(ops.cast(scores, "float32"))
    if key_mask is None:
        return weights
    return weights * key_mask


def clone_initializer(initializer):
    """A fresh copy of `initializer`, so that sublayers never share one instance."""
    return keras.initializers.get(keras.initializers.serialize(initializer))


def own_policy(layer):
    """`layer`'s own dtype policy: its entry in a `keras.dtype_policies.DTypePolicyMap` it was
    given (a parent's, see `with_quantized_sublayers`), else its policy."""
    policy = layer.dtype_policy
    return policy[layer.path] if isinstance(policy, keras.dtype_policies.DTypePolicyMap) else policy


def sublayer_dtype(layer, name):
    """The `dtype` to build `layer`'s sublayer `name` with: `layer`'s policy, except that where
    `layer` was given a map (`with_quantized_sublayers`) a sublayer the map names gets its own
    policy from it. Keras's Dense saves its int8 scale only where its `dtype_policy` is the
    quantized policy itself, not a map holding it (`Dense._get_kernel_with_merged_lora`, Keras
    3.15): given the map, a loaded model could not be saved again."""
    policy = layer.dtype_policy
    path = f"{layer.path}/{name}"
    if isinstance(policy, keras.dtype_policies.DTypePolicyMap) and path in policy:
        return policy[path]
    return policy


def with_quantized_sublayers(layer, config):
    """`layer`'s `get_config` result `config`, its `dtype` a `keras.dtype_policies.DTypePolicyMap`
    from path to policy where `model.quantize(...)` has quantized sublayers of `layer` (their
    paths as saved; the layer's own policy the default), else as given.

    The layers build their sublayers in `build()` with their own `dtype`, so a loaded `.keras`
    file of a quantized model rebuilt them float, and `load_model` refused its int8 weights.
    This is Keras's pattern (the docstring of `DTypePolicyMap`): the sublayers, given the map,
    find their policies in it by path."""
    quantized = {
        sub.path: own_policy(sub)
        for sub in layer._flatten_layers(include_self=False)
        if sub.quantization_mode is not None
    }
    if quantized:
        config["dtype"] = keras.dtype_policies.DTypePolicyMap(own_policy(layer), quantized)
    return config
