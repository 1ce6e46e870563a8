"""The layer contract, checked the same way for every layer of keras_textattn.layers.

Modelled on Keras's `TestCase.run_layer_test`. `run_layer_contract` checks:
shapes and dtypes symbolically and eagerly, the same weights from a direct `build()`
as from a call, the symbolic shapes of the attention scores, the config round trip,
`.keras` save/load without `custom_objects` (also of a model quantized by Keras's
`quantize("int8")`), training steps in compiled models (float32 under XLA, and
mixed_float16), mixed precision, and how the padding mask is consumed or propagated.
`check_save_and_load` (also used alone, for configurations the contract does not run),
`check_padding_invariance` and `check_finite_on_extremes` are the per-layer save/load,
masking and numerics checks, shared here too.
"""

import inspect
import os
import re
import warnings

import keras
import numpy as np
import pytest

VOCAB = 20


def _token_ids(batch, time, seed, real_lengths=None):
    """Random ids in [1, VOCAB) with zero padding after `real_lengths` tokens."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, size=(batch, time)).astype("int32")
    if real_lengths is None:
        real_lengths = [time] + [max(1, time - 2 - i) for i in range(batch - 1)]
    for row, length in enumerate(real_lengths):
        ids[row, length:] = 0
    return ids


def _embedding_model(layer, time, features, static_time, dtype=None):
    """ids -> Embedding(mask_zero=True) -> layer; the way users feed our layers."""
    ids = keras.Input(shape=(time if static_time else None,), dtype="int32")
    embedded = keras.layers.Embedding(VOCAB, features, mask_zero=True, dtype=dtype)(ids)
    return keras.Model(ids, layer(embedded))


def _first(outputs):
    return outputs[0] if isinstance(outputs, (tuple, list)) else outputs


def set_random_weights(layer, rng, scale):
    """Give every weight of a built layer values from N(0, scale^2), for reference checks."""
    layer.set_weights([scale * rng.normal(size=w.shape).astype("float32") for w in layer.weights])


def to_numpy(outputs):
    """Layer outputs (any backend, any nesting) as NumPy arrays."""
    return keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)


def run_layer_contract(
    layer_cls,
    init_kwargs,
    expected_output_shape,
    *,
    propagates_mask,
    static_time=False,
    time=7,
    features=8,
    batch=3,
    expected_num_losses=0,
    tmp_path,
):
    """Run the contract checks on `layer_cls(**init_kwargs)`.

    Args:
        expected_output_shape: the output shape without the batch axis, for
            inputs of shape `(batch, time, features)`.
        propagates_mask: True if the output keeps the input's padding mask,
            False if the layer consumes it (pooling layers).
        static_time: the layer needs a static time length.
        expected_num_losses: losses the layer adds in one call (`add_loss`).
        tmp_path: a pytest temporary folder for the `.keras` file.
    """
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(batch, time, features)).astype("float32")
    mask = _token_ids(batch, time, seed=1) > 0

    # Symbolic shape and dtype, also with a dynamic time axis where allowed.
    layer = layer_cls(**init_kwargs)
    symbolic = layer(keras.Input(shape=(time, features)))
    assert tuple(symbolic.shape) == (None,) + tuple(expected_output_shape)
    assert symbolic.dtype == "float32"
    if not static_time:
        dynamic = layer_cls(**init_kwargs)(keras.Input(shape=(None, features)))
        assert dynamic.shape[0] is None and len(dynamic.shape) == 1 + len(expected_output_shape)

    # Eager shape and dtype; output mask propagated or consumed as declared.
    layer = layer_cls(**init_kwargs)
    outputs = layer(inputs, mask=mask)
    assert tuple(outputs.shape) == (batch,) + tuple(expected_output_shape)
    assert keras.backend.standardize_dtype(outputs.dtype) == "float32"
    assert np.isfinite(keras.ops.convert_to_numpy(outputs)).all()
    assert layer.supports_masking
    output_mask = layer.compute_mask(inputs, keras.ops.convert_to_tensor(mask))
    if propagates_mask:
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(output_mask), mask)
    else:
        assert output_mask is None
    assert len(layer.losses) == expected_num_losses
    assert layer.compute_output_shape((batch, time, features)) == (batch,) + tuple(expected_output_shape)

    # A one-token text (at HCAN's sentence level: a one-sentence document, the shape `train()`
    # chooses for single sentences) and an empty one: no Keras warning about a softmax over an
    # axis of size 1 (attention over one key is that key, not a mistake), finite outputs and scores.
    scores = (
        {"return_attention_scores": True}
        if "return_attention_scores" in inspect.signature(layer.call).parameters
        else {}
    )
    one_token = mask[:, :1].copy()
    one_token[-1] = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one = layer_cls(**init_kwargs)(inputs[:, :1], mask=one_token, **scores)
    assert not [str(w.message) for w in caught if "has size 1" in str(w.message)]
    assert all(np.isfinite(keras.ops.convert_to_numpy(o)).all() for o in keras.tree.flatten(one))
    # A batch of no rows (a filter that kept none): outputs of no rows, eagerly, where the shape
    # has the 0 (on TensorFlow, Keras's LSTM and Conv1D fail there: `utils.call_unless_empty`).
    empty = layer(inputs[:0], mask=mask[:0], **scores)
    assert tuple(_first(empty).shape) == (0,) + tuple(expected_output_shape)
    assert all(o.shape[0] == 0 for o in keras.tree.flatten(empty))

    # Inputs it cannot use: a ValueError naming the layer and what it got, from the layer (not
    # a backend's own error deep inside, and not silence for token ids fed without an embedding).
    name = layer_cls.__name__
    bad_calls = [
        (
            inputs.astype("int32"),
            mask,
            f"{name} expects floating-point features (batch, time, features), "
            "e.g. from an Embedding layer. Received: inputs of dtype int32",
        ),
        (
            inputs,
            mask[:, :-1],
            f"{name} expects a padding mask of shape (batch, time) = ({batch}, {time}), "
            f"the first two axes of its inputs. Received: mask shape ({batch}, {time - 1})",
        ),
        (inputs, mask[..., None], f"Received: mask shape ({batch}, {time}, 1)"),
    ]
    for bad_inputs, bad_mask, message in bad_calls:
        with pytest.raises(ValueError, match=re.escape(message)):
            layer(bad_inputs, mask=bad_mask)
    # A wrong rank, at a fresh layer's first call (the pooling layers pooled (batch, time) to (batch,)).
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{name} expects inputs of shape (batch, time, features), a rank-3 "
            f"tensor. Received: input shape ({batch}, {time}) (rank 2)"
        ),
    ):
        layer_cls(**init_kwargs)(inputs[..., 0])
    # No features, or (for a layer with weights per position) no positions: the layer says so, not
    # a Keras Dense (`units=0`) or initializer (`scale=0.0`) deep inside.
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{name} needs a known, positive feature size (last axis). Received: input shape ({batch}, {time}, 0)"
        ),
    ):
        layer_cls(**init_kwargs)(inputs[..., :0])
    if static_time:
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"{name} has weights for every position, so it needs a time "
                f"length of at least 1. Received: input shape ({batch}, 0, "
            ),
        ):
            layer_cls(**init_kwargs)(inputs[:, :0])

    # Weights: all created in build(), none in call(). A direct `build()` makes the same
    # weights (names and shapes) as the first call; every weight is named once; trainable
    # and non-trainable weights partition them; with the called layer's values it gives the
    # same outputs.
    direct = layer_cls(**init_kwargs)
    direct.build((batch, time, features))
    assert direct.built
    assert [(w.path.split("/", 1)[-1], tuple(w.shape)) for w in direct.weights] == [
        (w.path.split("/", 1)[-1], tuple(w.shape)) for w in layer.weights
    ]
    assert len({w.path for w in layer.weights}) == len(layer.weights)
    assert len(layer.trainable_weights) + len(layer.non_trainable_weights) == len(layer.weights)
    direct.set_weights(layer.get_weights())
    np.testing.assert_allclose(to_numpy(direct(inputs, mask=mask)), to_numpy(outputs), rtol=1e-6, atol=1e-6)

    # Attention scores, where the layer returns them: symbolic shapes and dtypes (its
    # compute_output_spec) equal the eager ones.
    if "return_attention_scores" in inspect.signature(layer.call).parameters:
        eager = layer(inputs, mask=mask, return_attention_scores=True)
        symbolic = layer_cls(**init_kwargs)(keras.Input(shape=(time, features)), return_attention_scores=True)
        keras.tree.assert_same_structure(symbolic, eager)
        for s, e in zip(keras.tree.flatten(symbolic), keras.tree.flatten(eager)):
            assert tuple(s.shape[1:]) == tuple(e.shape[1:]) and s.dtype == keras.backend.standardize_dtype(e.dtype)

    # Config round trip: same config, and the same outputs with the same weights.
    config = layer.get_config()
    revived = layer_cls.from_config(config)
    assert revived.get_config() == config
    revived(inputs, mask=mask)
    revived.set_weights(layer.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(revived(inputs, mask=mask)),
        keras.ops.convert_to_numpy(outputs),
        rtol=1e-6,
        atol=1e-6,
    )

    check_save_and_load(
        layer_cls(**init_kwargs), tmp_path, batch=batch, time=time, features=features, static_time=static_time
    )
    check_save_and_load(
        layer_cls(**init_kwargs),
        tmp_path,
        batch=batch,
        time=time,
        features=features,
        static_time=static_time,
        quantize=True,
    )

    # Training steps inside compiled models, one fit each: float32 with XLA where the backend
    # has it (TensorFlow, JAX; Keras's "auto" picks it there), where every trainable weight
    # must move; on TensorFlow (the backend our training runs on) also mixed_float16 (its
    # narrow range is where overflow shows first) without XLA, where the loss must stay finite
    # (dynamic loss scaling may skip a step, and tiny gradients may underflow to zero, so
    # weights need not all move); on JAX and torch the mixed forward passes below stand for
    # it. torch's `jit_compile` means torch.compile, minutes per model on a CPU, and is not
    # part of the promise.
    ids = _token_ids(batch, time, seed=2)
    targets = rng.normal(size=(batch,) + tuple(expected_output_shape)).astype("float32")
    backend = keras.backend.backend()
    fits = [("float32", backend in ("tensorflow", "jax"))] + (
        [("mixed_float16", False)] if backend == "tensorflow" else []
    )
    for policy, jit_compile in fits:
        model = _embedding_model(layer_cls(**init_kwargs, dtype=policy), time, features, static_time, policy)
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", jit_compile=jit_compile)
        before = [keras.ops.convert_to_numpy(w).copy() for w in model.layers[-1].trainable_weights]
        history = model.fit(ids, targets, batch_size=batch, epochs=2, verbose=0)
        assert np.isfinite(history.history["loss"]).all(), policy
        if policy == "float32":
            after = [keras.ops.convert_to_numpy(w) for w in model.layers[-1].trainable_weights]
            changed = sum(not np.array_equal(a, b) for a, b in zip(before, after))
            assert changed == len(before), f"{changed} of {len(before)} weights moved (jit_compile={jit_compile})"

    # Mixed precision forward passes: finite outputs in the compute dtype, float32 weights
    # (bfloat16 has float32's range, so its training step is not repeated).
    for policy, compute_dtype in (("mixed_float16", "float16"), ("mixed_bfloat16", "bfloat16")):
        layer = layer_cls(**init_kwargs, dtype=policy)
        mixed = _first(layer(inputs.astype(compute_dtype), mask=mask))
        assert keras.backend.standardize_dtype(mixed.dtype) == compute_dtype
        assert np.isfinite(keras.ops.convert_to_numpy(keras.ops.cast(mixed, "float32"))).all()
        assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in layer.weights)


def check_save_and_load(layer, tmp_path, *, batch=3, time=7, features=8, static_time=False, quantize=False):
    """A model using `layer` saves to `.keras` and loads, with no custom_objects and
    safe mode on, into the same layer class giving the same outputs. With `quantize`, the
    model quantized by Keras (`model.quantize("int8")`, its Dense sublayers too) does, and
    the loaded model saves and loads again: its sublayers' int8 policies are in the layer's
    config (`with_quantized_sublayers`)."""
    ids = _token_ids(batch, time, seed=2)
    model = _embedding_model(layer, time, features, static_time)
    if quantize:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Layer .* does not have a `quantize` method implemented")
            model.quantize("int8")
    expected = to_numpy(model(ids))
    for copy in range(2 if quantize else 1):
        path = os.path.join(str(tmp_path), f"model_{copy}.keras")
        model.save(path)
        model = keras.models.load_model(path)
        assert type(model.layers[-1]) is type(layer)
        keras.tree.map_structure(
            lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6),
            to_numpy(model(ids)),
            expected,
        )


def check_padding_invariance(layer, inputs, real_length, *, static_time=False, call_kwargs=None):
    """Padding must never change the outputs of real positions.

    Dynamic time: `inputs[:, :real_length]` unmasked, against the same tokens
    with 50 extra padded steps of random content. Static time: the same tokens
    with zeros, against random content, in the padded steps.
    Outputs with a time axis are compared on the real steps only.
    """
    call_kwargs = call_kwargs or {}
    rng = np.random.default_rng(3)
    batch, time, features = inputs.shape
    if static_time:
        reference_inputs = inputs.copy()
        reference_inputs[:, real_length:] = 0.0
        mask = np.zeros((batch, time), bool)
        mask[:, :real_length] = True
        reference = layer(reference_inputs, mask=mask, **call_kwargs)
    else:
        reference_inputs = inputs[:, :real_length]
        reference = layer(reference_inputs, **call_kwargs)
        time = real_length + 50
        mask = np.zeros((batch, time), bool)
        mask[:, :real_length] = True
    padded = 100.0 * rng.normal(size=(batch, time, features)).astype("float32")
    padded[:, :real_length] = inputs[:, :real_length]
    result = layer(padded, mask=mask, **call_kwargs)

    def compare(expected, actual):
        expected = keras.ops.convert_to_numpy(expected)
        actual = keras.ops.convert_to_numpy(actual)
        # Axes that the extra padding made longer are compared on the real steps.
        real = tuple(slice(0, real_length) if e != a else slice(None) for e, a in zip(expected.shape, actual.shape))
        np.testing.assert_allclose(actual[real], expected, rtol=1e-5, atol=1e-5)

    keras.tree.map_structure(compare, reference, result)
    return reference, result


def check_finite_on_extremes(layer, features, time=6, call_kwargs=None):
    """An all-padding row and very large activations give finite outputs."""
    call_kwargs = call_kwargs or {}
    rng = np.random.default_rng(4)
    inputs = rng.normal(size=(3, time, features)).astype("float32")
    inputs[2] *= 1e4
    mask = np.ones((3, time), bool)
    mask[1] = False
    outputs = layer(inputs, mask=mask, return_attention_scores=True, **call_kwargs)
    for value in keras.tree.flatten(outputs):
        assert np.isfinite(keras.ops.convert_to_numpy(value)).all()
    return outputs
