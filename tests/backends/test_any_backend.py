"""The promise that the layers and the models fed with ids work on every Keras 3 backend.

CI runs this module under KERAS_BACKEND=tensorflow, jax and torch.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_textattn.models import build_model
from keras_textattn.models import logits_model

from ._tensorflow_only import refusals

PAPER_MODELS = {
    "scalable_attention": ({"sequence_length": 10, "embedding_dim": 8, "fc_units": 8}, (10,)),
    "dual_axial": ({"sequence_length": 10, "embedding_dim": 8, "fc_units": 8}, (10,)),
    "hcan": ({"max_sentences": 3, "sequence_length": 5, "units": 8, "num_heads": 2}, (3, 5)),
    "lama": ({"embedding_dim": 8, "gru_units": 4, "num_heads": 3, "mlp_units": 8, "use_context": True}, (10,)),
    "cspan": ({"embedding_dim": 8, "num_queries": 2}, (10,)),
}
BACKENDS = ["tensorflow", "jax", "torch"]
MISSING_BACKENDS = [b for b in BACKENDS if importlib.util.find_spec(b) is None]
NOT_ALL_BACKENDS = pytest.mark.skipif(
    bool(MISSING_BACKENDS), reason=f"backends not installed: {MISSING_BACKENDS} (CI installs them; see .ci/run)"
)


def _ids(shape, batch=4, seed=0):
    ids = np.random.default_rng(seed).integers(1, 40, (batch,) + shape).astype("int32")
    ids[1, ..., shape[-1] // 2 :] = 0  # some padding
    return ids


def _model(name):
    keras.utils.set_random_seed(0)
    kwargs, shape = PAPER_MODELS[name]
    return build_model(name, 3, vocabulary_size=40, **kwargs), shape


@pytest.mark.parametrize("name", sorted(PAPER_MODELS))
def test_paper_model_trains_from_numpy_and_a_generator(name):
    model, shape = _model(name)
    model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
    ids, labels = _ids(shape, batch=16), np.arange(16) % 3
    first = model.evaluate(ids, labels, verbose=0)[0]
    model.fit(ids, labels, batch_size=8, epochs=5, verbose=0)

    def batches():
        while True:
            yield ids[:8], labels[:8]

    model.fit(batches(), steps_per_epoch=2, epochs=1, verbose=0, shuffle=False)  # a generator cannot be (Keras warns)
    assert model.evaluate(ids, labels, verbose=0)[0] < first  # it learns the toy labels


def test_saturated_classifier_learns_again_through_its_logits_model():
    """Every prediction saturated (class 0 at probability 1.0 in float32, where JAX's and
    PyTorch's cross-entropy on probabilities has no gradient): trained through
    `logits_model`, the classifier learns again: its loss falls from ~13 to well below chance
    (ln 3 = 1.10; 0.46-0.48 measured on each backend), and it serves probabilities."""
    model, shape = _model("scalable_attention")
    ids, labels = _ids(shape, batch=15), np.arange(15) % 3
    head = model.get_layer("logits")
    kernel, _ = head.get_weights()
    head.set_weights([np.zeros_like(kernel), np.array([20.0, 0.0, 0.0], "float32")])
    assert np.all(model.predict(ids, verbose=0)[:, 0] == 1.0)
    trainable = logits_model(model)
    # Called as the classifier is (setup.cfg makes Keras's warning of another inputs' structure an error).
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(keras.ops.softmax(trainable(ids))), keras.ops.convert_to_numpy(model(ids)), atol=1e-6
    )
    trainable.compile(keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert trainable.evaluate(ids, labels, verbose=0) > 10
    trainable.fit(ids, labels, batch_size=15, epochs=150, verbose=0)
    assert trainable.evaluate(ids, labels, verbose=0) < 0.8
    assert keras.losses.SparseCategoricalCrossentropy()(labels, model.predict(ids, verbose=0)) < 0.8


def test_smoothed_cross_entropy_matches_numpy_and_loads_without_custom_objects(tmp_path):
    """`SmoothedSparseCategoricalCrossentropy`, `train(label_smoothing=...)`'s loss: the mean over
    examples of -sum_k q_k log p_k with q = (1 - e) one_hot(y) + e / K; 0 is Keras's sparse
    cross-entropy; labels of shape (batch, 1) as (batch,); a model compiled with it trains under
    `jit_compile` where the backend has it, and loads with its smoothing and no custom objects."""
    from keras_textattn.losses import SmoothedSparseCategoricalCrossentropy

    rng = np.random.default_rng(0)
    probabilities, labels = rng.dirichlet(np.ones(4), size=6).astype("float32"), np.array([0, 3, 1, 2, 2, 0])
    targets = np.full((6, 4), 0.2 / 4)
    targets[np.arange(6), labels] += 0.8
    expected = -(targets * np.log(probabilities)).sum(-1)
    np.testing.assert_allclose(
        SmoothedSparseCategoricalCrossentropy(0.2)(labels, probabilities), expected.mean(), rtol=1e-5
    )
    each = SmoothedSparseCategoricalCrossentropy(0.2, reduction=None)(labels[:, None], probabilities)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(each), expected, rtol=1e-5)
    np.testing.assert_allclose(
        SmoothedSparseCategoricalCrossentropy(0.0)(labels, probabilities),
        keras.losses.SparseCategoricalCrossentropy()(labels, probabilities),
        rtol=1e-6,
    )
    for bad in (1.0, -0.1, True, "0.1"):
        with pytest.raises(ValueError, match=re.escape(f"label_smoothing must be a number in [0, 1); got {bad!r}")):
            SmoothedSparseCategoricalCrossentropy(bad)

    model, shape = _model("scalable_attention")
    model.compile(
        keras.optimizers.Adam(0.01),
        SmoothedSparseCategoricalCrossentropy(0.1),
        jit_compile=keras.backend.backend() != "torch",
    )
    ids, labels = _ids(shape, batch=16), np.arange(16) % 3
    history = model.fit(ids, labels, batch_size=8, epochs=3, verbose=0).history
    assert np.isfinite(history["loss"]).all() and history["loss"][-1] < history["loss"][0]
    model.save(tmp_path / "smoothed.keras")
    loaded = keras.models.load_model(tmp_path / "smoothed.keras")
    assert isinstance(loaded.loss, SmoothedSparseCategoricalCrossentropy) and loaded.loss.label_smoothing == 0.1
    np.testing.assert_allclose(
        loaded.evaluate(ids, labels, verbose=0), model.evaluate(ids, labels, verbose=0), rtol=1e-5
    )


@NOT_ALL_BACKENDS
def test_tensorflow_only_parts_say_so_on_another_backend():
    """On JAX and torch in this process; the TensorFlow run asks a JAX process."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        backend = "jax"
        script = os.path.join(os.path.dirname(__file__), "_tensorflow_only.py")
        result = subprocess.run(
            [sys.executable, script],
            env=dict(os.environ, KERAS_BACKEND=backend),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        messages = json.loads(result.stdout.strip().splitlines()[-1])
    else:
        messages = refusals()
    assert len(messages) == 4 and messages[3].startswith("The TextEncoder of run/encoder.keras runs TensorFlow ops")
    assert all("needs the TensorFlow backend" in message and repr(backend) in message for message in messages)


@pytest.mark.skipif(
    importlib.util.find_spec("jax") is None and keras.backend.backend() == "tensorflow",
    reason="JAX not installed (CI installs it; see .ci/run)",
)
def test_layers_and_models_need_no_tensorflow(tmp_path):
    """A JAX or PyTorch user without TensorFlow imports the package, builds every paper model and
    saves and loads it (this run's backend, or JAX in the TensorFlow run)."""
    backend = "jax" if keras.backend.backend() == "tensorflow" else keras.backend.backend()
    script = os.path.join(os.path.dirname(__file__), "_without_tensorflow.py")
    result = subprocess.run(
        [sys.executable, script, str(tmp_path), json.dumps(PAPER_MODELS)],
        env=dict(os.environ, KERAS_BACKEND=backend),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert sorted(os.listdir(tmp_path)) == sorted(f"{name}.keras" for name in PAPER_MODELS)


@NOT_ALL_BACKENDS
@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the chain starts on TensorFlow; run once, in the TensorFlow run"
)
def test_keras_files_round_trip_across_all_backends(tmp_path):
    """Saved here, loaded by each other backend, re-saved there and loaded by the next: same outputs."""
    here = keras.backend.backend()
    expected = {}
    for name in PAPER_MODELS:
        model, shape = _model(name)
        ids = _ids(shape)
        np.save(tmp_path / f"{name}_inputs.npy", ids)
        expected[name] = keras.ops.convert_to_numpy(model(ids, training=False))
        model.save(tmp_path / f"{name}.keras")
    script = os.path.join(os.path.dirname(__file__), "_roundtrip.py")
    chain = [b for b in BACKENDS if b != here]
    for step, backend in enumerate(chain):
        names = list(PAPER_MODELS)
        if step:  # load what the previous backend saved
            for name in names:
                os.replace(tmp_path / f"{name}_saved_by_{chain[step - 1]}.keras", tmp_path / f"{name}.keras")
        result = subprocess.run(
            [sys.executable, script, str(tmp_path), *names],
            env=dict(os.environ, KERAS_BACKEND=backend),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        for name in names:
            np.testing.assert_allclose(
                np.load(tmp_path / f"{name}_{backend}.npy"),
                expected[name],
                rtol=1e-5,
                atol=1e-6,
                err_msg=f"{name} saved on {here} differs on {backend}",
            )
