"""Each paper's classifier must learn: the tests that catch a layer that runs but does not learn.

Train on the AG News 5,000-row training sample (../shared/data/ag_news), evaluate on the
official 7,600-row test set, and require test accuracy >= 0.80 (chance: 0.25). Two epochs;
HCAN three (its hierarchy starts slower: 0.70 after one epoch, 0.81 after two, 0.84 after
three). LAMA and HCAN are the trained runs that tests/conftest.py shares with the explain and
export tests (trained through `train()`, which carves 10% of the sample for validation).

Calibration, measured on this setup (same encoder: 10,000 tokens, 64 tokens per text;
HCAN 6 sentences x 24 words), 2 CPU cores, test accuracy after epochs 1 / 2 / 3:
    scalable attention 0.868 / 0.866 / 0.859, dual-axial 0.843 / 0.857 / 0.858,
    LAMA 0.855 / 0.863 / 0.844, CSPAN 0.835 / 0.838 / 0.829, HCAN 0.699 / 0.806 / 0.835
    TF-IDF uni+bigram + logistic regression (scikit-learn, C=10)   0.877
    embedding + masked mean pooling (no attention), 3 epochs          0.847
A model whose attention is broken (padding leaking in, NaNs, constant weights that
drown the text) stays far below the bar; a working one clears it with a margin.
"""

import json

import keras
import pytest

from keras_textattn.datasets import load_dataset
from keras_textattn.datasets import make_batches
from keras_textattn.models import build_model
from keras_textattn.text import TextEncoder
from keras_textattn.models import get_spec
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


@pytest.mark.parametrize("name", sorted(CASES))
def test_paper_model_learns_ag_news(name, ag_news):
    keras.utils.set_random_seed(0)
    encoder = TextEncoder(**get_spec(name).encoder_options(
        None, max_tokens=10000, sequence_length=64, bigram_buckets=20000 if get_spec(name).bigrams else 0))
    encoder.adapt(ag_news["train"])
    model = build_model(name, 4, vocabulary_size=encoder.vocabulary_size(), **get_spec(name).shape_arguments(encoder),
                        **CASES[name])
    model.compile(keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(make_batches(ag_news["train"], encoder, 32, shuffle=True), epochs=2, verbose=0)
    _, accuracy = model.evaluate(make_batches(ag_news["test"], encoder, 128), verbose=0)
    assert accuracy >= PASS_MARK, f"{name}: test accuracy {accuracy:.3f} < {PASS_MARK}"


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
