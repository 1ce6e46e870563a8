"""Each paper's classifier must learn: the tests that catch a layer that runs but does not learn.

Train on the AG News 5,000-row training sample (../shared/data/ag_news), evaluate on the
official 7,600-row test set, and require test accuracy >= 0.80 (chance: 0.25). One epoch
here; LAMA and HCAN are the trained runs that tests/conftest.py shares with the explain and
export tests (trained through `train()`, which carves 10% of the sample for validation; their
epochs, learning rates and measured accuracies are in tests/conftest.py).
The attention must also earn its place: the scalable attention classifier beats the same
classifier with a masked mean in place of its attention.

Calibration, measured on this setup (same encoder: 10,000 tokens, 64 tokens per text;
HCAN 6 sentences x 24 words), 2 CPU cores, test accuracy after epochs 1 / 2 / 3:
    scalable attention 0.868 / 0.866 / 0.859, dual-axial 0.843 / 0.857 / 0.858,
    LAMA 0.855 / 0.863 / 0.844, CSPAN 0.835 / 0.838 / 0.829, HCAN 0.699 / 0.806 / 0.835
    the scalable attention classifier with a masked mean instead, 1 epoch   0.829
    TF-IDF uni+bigram + logistic regression (scikit-learn, C=10)   0.877
A model whose attention is broken (padding leaking in, NaNs, constant weights that
drown the text) stays far below the bar; a working one clears it with a margin.
"""

import json

import keras
import pytest

from keras_textattn.datasets import load_dataset
from keras_textattn.datasets import make_batches
from keras_textattn.layers import MaskedGlobalAveragePooling1D
from keras_textattn.models import build_model
from keras_textattn.models import get_spec
from keras_textattn.text import TextEncoder
from tests.conftest import ag_news_files

PASS_MARK = 0.80

CASES = {
    "scalable_attention": {"embedding_dim": 64, "fc_units": 64},
    "dual_axial": {"embedding_dim": 32, "fc_units": 64},
    "cspan": {"embedding_dim": 64, "num_queries": 4},
}


@pytest.fixture(scope="module")
def ag_news(shared_data):
    return load_dataset(ag_news_files())


_ACCURACY = {}  # per worker: the scalable attention model serves two tests


def _test_accuracy(name, ag_news, build=None):
    """Test accuracy after one epoch on the sample (seeded); `build(vocabulary_size)` replaces the builder."""
    if name in _ACCURACY:
        return _ACCURACY[name]
    keras.utils.set_random_seed(0)
    spec = get_spec(name if build is None else "scalable_attention")  # the mean-pooling model reads its ids
    encoder = TextEncoder(
        **spec.encoder_options(None, max_tokens=10000, sequence_length=64, bigram_buckets=20000 if spec.bigrams else 0)
    )
    encoder.adapt(ag_news["train"])
    if build is None:
        model = build_model(
            name, 4, vocabulary_size=encoder.vocabulary_size(), **spec.shape_arguments(encoder), **CASES[name]
        )
    else:
        model = build(encoder.vocabulary_size())
    model.compile(keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(
        make_batches(ag_news["train"], encoder, 32, shuffle=True), epochs=1, verbose=0, shuffle=False
    )  # make_batches shuffles; Keras cannot shuffle a dataset (and warns)
    _, _ACCURACY[name] = model.evaluate(make_batches(ag_news["test"], encoder, 128), verbose=0)
    return _ACCURACY[name]


@pytest.mark.xdist_group("learning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_paper_model_learns_ag_news(name, ag_news):
    accuracy = _test_accuracy(name, ag_news)
    assert accuracy >= PASS_MARK, f"{name}: test accuracy {accuracy:.3f} < {PASS_MARK}"


def _mean_pooling_classifier(vocabulary_size):
    """The scalable attention classifier of CASES with its attention replaced by a masked mean."""
    ids = keras.Input((64,), dtype="int32")
    x = keras.layers.Embedding(vocabulary_size, CASES["scalable_attention"]["embedding_dim"])(ids)
    x = MaskedGlobalAveragePooling1D()(x, mask=keras.ops.not_equal(ids, 0))
    x = keras.layers.Dense(CASES["scalable_attention"]["fc_units"], activation="relu")(x)
    return keras.Model(ids, keras.layers.Dense(4, activation="softmax")(x))


@pytest.mark.xdist_group("learning")
def test_attention_beats_mean_pooling(ag_news):
    """The attention earns its place: the same classifier with a masked mean instead of
    `ScalableAttention`, trained alike, is less accurate."""
    attention = _test_accuracy("scalable_attention", ag_news)
    pooling = _test_accuracy("mean_pooling", ag_news, build=_mean_pooling_classifier)
    assert attention > pooling + 0.005, f"attention {attention:.3f}, mean pooling {pooling:.3f}"


def test_trained_runs_are_grouped_on_one_worker(request, lama_run):
    """Under the README's `-n 2 --dist loadgroup`, pytest-xdist runs every test of a trained run
    (tests/conftest.py) in that run's group, on one worker; without it each worker trains the run."""
    if getattr(request.config.option, "loadgroup", False):
        assert request.node.nodeid.endswith("@lama_run"), request.node.nodeid


def _accuracy_on_test(run):
    with open(run / "metrics.json") as handle:
        return json.load(handle)["accuracy"]["test"]


def test_trained_lama_run_learns_ag_news(lama_run):
    assert _accuracy_on_test(lama_run) >= PASS_MARK


def test_trained_hcan_run_learns_ag_news(hcan_run):
    assert _accuracy_on_test(hcan_run) >= PASS_MARK
