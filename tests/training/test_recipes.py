"""The papers' training recipes in `train()`: pretrained embeddings, learning-rate schedules,
gradient clipping, hashed bigrams for any model, and the "paper" preset that sets them."""

import csv
import gzip
import json
import math
import os
import re

import keras
import numpy as np
import pytest

from keras_textattn.models import get_spec
from keras_textattn.run_folder import FINISHED_MARKER
from keras_textattn.run_folder import load_run
from keras_textattn.text import TextEncoder
from keras_textattn.training import train
from keras_textattn.training.model_setup import cuts_padding
from keras_textattn.training.model_setup import left_to_rows
from keras_textattn.training.model_setup import with_fallbacks
from keras_textattn.training.model_setup import with_fast_training
from keras_textattn.training.schedules import ResumablePlateau
from keras_textattn.training.schedules import schedule_callbacks
from keras_textattn_cli import main
from keras_textattn_config.train_config import BATCH_SIZES
from keras_textattn_config.train_config import FAST_ROWS
from keras_textattn_config.train_config import FAST_TRAINING
from keras_textattn_config.train_config import MODELS
from keras_textattn_config.train_config import MULTI_LABEL_TRAINING
from keras_textattn_config.train_config import SPARSE_TABLE_ROWS
from keras_textattn_config.train_config import STEPS_PER_EPOCH
from keras_textattn_config.train_config import TrainConfig

SMALL = dict(model_kwargs={"embedding_dim": 8, "fc_units": 8}, sequence_length=24, max_tokens=2000, verbose=0)
LAMA_SMALL = dict(
    model_kwargs={"embedding_dim": 8, "gru_units": 4, "num_heads": 2, "mlp_units": 8},
    sequence_length=24,
    max_tokens=2000,
    embeddings="random",
    verbose=0,
)


@pytest.fixture
def sst2_dev(shared_data):
    return str(shared_data / "sst2" / "dev.csv.gz")


def test_runs_cut_the_padding_of_models_that_read_any_length_and_of_hierarchical_ones_on_large_data():
    """A run cuts its batches' padding for a model that reads any length, from the command line
    (whose --distribute none is train()'s None) as from Python, never with a strategy, unshuffled
    rows (file order) nor for dual-axial; HCAN's hierarchical ids from `FAST_ROWS` training rows on,
    its flat variant always."""
    flat = TextEncoder(sequence_length=8)
    hierarchical = TextEncoder(sequence_length=8, hierarchical=True, max_sentences=2)
    from_the_command_line = TrainConfig(distribute="none")
    assert cuts_padding(get_spec("scalable_attention"), flat, from_the_command_line, 100)
    assert not cuts_padding(get_spec("scalable_attention"), flat, TrainConfig(distribute="mirrored"), 100)
    assert not cuts_padding(get_spec("scalable_attention"), flat, TrainConfig(shuffle=False), 100)
    assert not cuts_padding(get_spec("dual_axial"), flat, from_the_command_line, 10 * FAST_ROWS)
    hcan = get_spec("hcan")
    assert [cuts_padding(hcan, hierarchical, from_the_command_line, rows) for rows in (FAST_ROWS - 1, FAST_ROWS)] == [
        False,
        True,
    ]
    assert cuts_padding(hcan, flat, from_the_command_line, 100)


def test_vectors_file_initialises_and_freezes_the_embedding(sst2_dev, tmp_path):
    """GloVe-format vectors (gzip) for some words: after training with them frozen, those words'
    rows are the file's vectors (rescaled together, `embedding_matrix`), padding's row zeros,
    and metrics.json reports the coverage."""
    rng = np.random.default_rng(0)
    words = ["the", "film", "good", "bad", "movie", "it", "best", "not"]
    vectors = {word: rng.normal(0, 1, 8).round(4) for word in words}
    path = tmp_path / "vectors.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("".join(f"{w.upper()} {' '.join(map(str, v))}\n" for w, v in vectors.items()))
    metrics = train(
        "scalable_attention",
        sst2_dev,
        str(tmp_path / "run"),
        epochs=1,
        embeddings=str(path),
        freeze_embeddings=True,
        **SMALL,
    )
    model, encoder, _ = load_run(tmp_path / "run")
    table = keras.ops.convert_to_numpy(model.get_layer("embedding").embeddings)
    vocabulary = encoder.get_vocabulary()
    factor = 0.05 / np.std(np.stack(list(vectors.values())))
    for word, vector in vectors.items():
        np.testing.assert_allclose(table[vocabulary.index(word)], vector * factor, rtol=1e-5)
    np.testing.assert_array_equal(table[0], 0.0)
    assert metrics["embeddings"] == {
        "source": str(path),
        "dimension": 8,
        "coverage": 8 / (len(vocabulary) - 2),
        "words_added": 0,
        "frozen": True,
    }
    assert not model.get_layer("embedding").trainable


def test_a_vectors_file_of_another_size_is_one_line(sst2_dev, tmp_path, capsys):
    path = tmp_path / "glove.txt"
    path.write_text("the 0.1 0.2 0.3\n")
    code = main(
        [
            "train",
            "--model",
            "lama",
            "--data",
            sst2_dev,
            "--output",
            str(tmp_path / "run"),
            "--quiet",
            "--embeddings",
            str(path),
        ]
    )
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(error) == 1
    assert (
        "has 3-dimensional vectors; the lama embedding has 64 (set its size to match: --set embedding_dim=3)"
        in error[0]
    )
    assert not os.path.exists(tmp_path / "run")


def test_glove_from_its_package_initialises_the_embedding(sst2_dev, glove_package, tmp_path):
    """`--embeddings glove-6b-50d`: every covered word's row points where its GloVe vector does,
    one factor for all (read here from the package's own files), and metrics.json names the source."""
    import pyarrow.parquet

    code = main(
        [
            "train",
            "--model",
            "scalable_attention",
            "--data",
            sst2_dev,
            "--output",
            str(tmp_path / "run"),
            "--quiet",
            "--epochs",
            "1",
            "--sequence-length",
            "24",
            "--max-tokens",
            "2000",
            "--set",
            "embedding_dim=50",
            "--set",
            "fc_units=8",
            "--embeddings",
            "glove-6b-50d",
            "--freeze-embeddings",
        ]
    )
    assert code == 0
    model, encoder, _ = load_run(tmp_path / "run")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["embeddings"]["source"] == "glove-6b-50d" and metrics["embeddings"]["coverage"] > 0.95
    table = keras.ops.convert_to_numpy(model.get_layer("embedding").embeddings)
    words = pyarrow.parquet.read_table(glove_package / "glove_6B_index.parquet").column(0).to_pylist()
    glove = np.load(glove_package / "glove_6B_50d_emb.npy", mmap_mode="r")
    vocabulary = encoder.get_vocabulary()
    ratios = [table[vocabulary.index(word)] / glove[words.index(word)] for word in ("good", "film", "the", "dull")]
    np.testing.assert_allclose(ratios, np.full_like(ratios, ratios[0][0]), rtol=1e-4)


def test_words_only_the_vectors_know_join_the_vocabulary_with_their_vectors(sst2_dev, glove_package, tmp_path, capsys):
    """`--vectors-vocabulary N`: GloVe's most frequent words that SST-2's dev sentences never hold
    get ids after theirs. After training (embeddings not frozen) their rows are still their GloVe
    vectors, all times one factor (no gradient reaches a word that no training text holds), a text
    holding one encodes it to its id, and metrics.json counts them. Without vectors it is refused."""
    import pyarrow.parquet

    from keras_textattn.text import TextEncoder

    run = tmp_path / "run"
    common = [
        "train",
        "--model",
        "scalable_attention",
        "--data",
        sst2_dev,
        "--quiet",
        "--epochs",
        "1",
        "--validation-data",
        sst2_dev.replace("dev.csv", "test.csv"),  # all of the dev sentences train
        "--sequence-length",
        "24",
        "--set",
        "embedding_dim=50",
        "--set",
        "fc_units=8",
        "--vectors-vocabulary",
        "3000",
    ]
    assert main([*common, "--output", str(run), "--embeddings", "glove-6b-50d"]) == 0
    model, encoder, _ = load_run(run)
    metrics = json.loads((run / "metrics.json").read_text())
    added = encoder.get_vocabulary()[-encoder.added_tokens :]
    assert metrics["embeddings"]["words_added"] == len(added) > 500 and metrics["embeddings"]["coverage"] > 0.95
    with gzip.open(sst2_dev, "rt", encoding="utf-8", newline="") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    held = {token.decode() for row in TextEncoder().tokenize(texts).to_list() for token in row}
    assert not held & set(added) and {"government", "president"} <= set(added)
    table = keras.ops.convert_to_numpy(model.get_layer("embedding").embeddings)
    words = pyarrow.parquet.read_table(glove_package / "glove_6B_index.parquet").column(0).to_pylist()
    glove = np.load(glove_package / "glove_6B_50d_emb.npy", mmap_mode="r")
    ids = [encoder.get_vocabulary().index(word) for word in added[::50]]
    ratios = np.stack([table[i] / glove[words.index(word)] for i, word in zip(ids, added[::50])])
    np.testing.assert_allclose(ratios, np.full_like(ratios, ratios[0, 0]), rtol=1e-4)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(encoder(["The government"]))[0, :3],
        [encoder.get_vocabulary().index("the"), encoder.get_vocabulary().index("government"), 0],
    )
    capsys.readouterr()
    for options, message in (
        ([], "adds words of pretrained vectors"),
        (["--embeddings", "word2vec"], "adds words of pretrained vectors"),
        (
            ["--embeddings", "glove-6b-50d", "--vectors-vocabulary", "0"],
            "vectors-vocabulary must be a positive number; got 0",
        ),
    ):
        code = main([*common, "--output", str(tmp_path / "refused"), *options])
        error = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(error) == 1 and message in error[0], error
        assert not os.path.exists(tmp_path / "refused")


def test_a_missing_vectors_package_is_one_line_before_any_data_is_read(sst2_dev, tmp_path, capsys, monkeypatch):
    from keras_textattn.text import vectors

    monkeypatch.setitem(vectors.PACKAGED_VECTORS, "glove-6b-50d", ("no_such_module", "no-such-package", "w", "m"))
    code = main(
        [
            "train",
            "--model",
            "scalable_attention",
            "--data",
            sst2_dev,
            "--output",
            str(tmp_path / "run"),
            "--quiet",
            "--embeddings",
            "glove-6b-50d",
        ]
    )
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(error) == 1 and "pip install no-such-package" in error[0]
    assert not os.path.exists(tmp_path / "run")


def test_paper_preset_trains_lama_with_its_recipe(sst2_dev, tmp_path):
    """`preset="paper"`: LAMA's word2vec embeddings (trained on the training split only), a
    vocabulary of the words seen at least 5 times (each of which word2vec gives a vector), early
    stopping with patience 5 and SGD (momentum 0.9, 0.05, weight decay 1e-4), unless given; run.json
    keeps only what was given, so repeating the command on an unfinished paper run is accepted
    (it was refused for the recipe's values)."""
    run = tmp_path / "run"
    arguments = dict(
        preset="paper",
        sequence_length=24,
        verbose=0,
        model_kwargs={"embedding_dim": 8, "gru_units": 4, "num_heads": 2, "mlp_units": 8},
    )
    metrics = train("lama", sst2_dev, str(run), epochs=1, **arguments)
    assert metrics["embeddings"]["source"] == "word2vec" and metrics["embeddings"]["coverage"] == 1
    assert metrics["encoder"]["min_frequency"] == 5 and 100 < load_run(run)[1].vocabulary_size() < 1000
    assert metrics["early_stopping"] == 5 and metrics["best_epoch"] == 0
    assert (metrics["optimizer"], metrics["learning_rate"], metrics["weight_decay"], metrics["batch_size"]) == (
        "sgd",
        0.05,
        1e-4,
        32,
    )
    # LAMA+ctx, the paper's best (the context is the mean embedding: a layer without weights,
    # where LAMA learns a context vector), recorded so that a run started from this one builds it too.
    assert metrics["model_kwargs"]["use_context"] is True
    assert "context" in [layer.name for layer in load_run(run)[0].layers]
    optimizer = keras.models.load_model(run / "model.keras").optimizer
    assert isinstance(optimizer, keras.optimizers.SGD) and optimizer.momentum == 0.9
    assert optimizer.weight_decay == 1e-4 and np.isclose(float(optimizer.learning_rate), 0.05)
    stored = json.loads((run / "run.json").read_text())
    assert stored["early_stopping"] is None and stored["embeddings"] is None and stored["preset"] == "paper"
    assert stored["min_frequency"] is None
    (run / FINISHED_MARKER).unlink()  # unfinished (its backup is gone: it trains again from the start)
    resumed = train("lama", sst2_dev, str(run), epochs=2, **arguments)
    assert len(resumed["history"]["loss"]) == 2 and resumed["early_stopping"] == 5
    assert get_spec("lama").training_defaults("cpu") == {}


def test_paper_preset_trains_cspan_with_adams_weight_decay(sst2_dev, tmp_path):
    """CSPAN's paper recipe: Adam at 1e-3 with weight decay 1e-4, batches of 64, the rate divided
    by 10 at epochs 20 and 25; a given option wins over it."""
    metrics = train(
        "cspan",
        sst2_dev,
        str(tmp_path / "run"),
        preset="paper",
        epochs=1,
        sequence_length=16,
        model_kwargs={"embedding_dim": 8, "num_queries": 2},
        lr_schedule="cosine",
        verbose=0,
    )
    assert (metrics["optimizer"], metrics["learning_rate"], metrics["weight_decay"], metrics["batch_size"]) == (
        "adam",
        0.001,
        1e-4,
        64,
    )
    assert get_spec("cspan").training_defaults("paper")["lr_schedule"] == "step:20,25"
    assert metrics["lr_schedule"] == "cosine"  # given, so the recipe's step schedule is not used
    # At the cpu preset, the schedule held-out data preferred (BENCHMARKS.md); a constant rate where it did not.
    assert get_spec("cspan").training_defaults("cpu") == {"lr_schedule": "cosine"}
    assert get_spec("hcan").training_defaults("cpu") == get_spec("lama").training_defaults("cpu") == {}
    optimizer = keras.models.load_model(tmp_path / "run" / "model.keras").optimizer
    assert isinstance(optimizer, keras.optimizers.Adam) and optimizer.weight_decay == 1e-4


def test_step_schedule_clipping_and_label_smoothing(sst2_dev, tmp_path):
    """ "step:2,3" trains epoch 1 at the rate, 2 at a tenth, 3 at a hundredth (history.csv logs
    them); the saved optimizer clips to the given global norm; the saved model's loss is the
    smoothed cross-entropy of the run (its loss on some texts is that of its predictions)."""
    metrics = train(
        "scalable_attention",
        sst2_dev,
        str(tmp_path / "run"),
        epochs=3,
        learning_rate=0.01,
        lr_schedule="step:2,3",
        clip_norm=0.5,
        label_smoothing=0.2,
        **SMALL,
    )
    np.testing.assert_allclose(metrics["history"]["learning_rate"], [0.01, 0.001, 0.0001], rtol=1e-6)
    model = keras.models.load_model(tmp_path / "run" / "model.keras")
    assert model.optimizer.global_clipnorm == 0.5 and metrics["clip_norm"] == 0.5
    assert metrics["label_smoothing"] == 0.2 and model.loss.get_config()["label_smoothing"] == 0.2
    ids = load_run(tmp_path / "run")[1](np.array(["a gripping film", "dull and far too long", "i loved it"]))
    labels = np.array([1, 0, 1])
    probabilities = model.predict(ids, verbose=0).astype("float64")
    targets = np.full(probabilities.shape, 0.2 / 2)
    targets[np.arange(3), labels] += 0.8
    smoothed = -(targets * np.log(probabilities)).sum(-1).mean()
    assert model.evaluate(ids, labels, verbose=0)[0] == pytest.approx(smoothed, rel=1e-4)


def test_gradients_clipped_by_value_from_the_command_line_to_the_saved_optimizer(sst2_dev, tmp_path, capsys):
    """--clip-value reaches the run's optimizer (saved with the model, so that training it further
    clips too), run.json records it, and a resume with another value is refused by name; it is
    refused beside --clip-norm, which Keras's optimizers cannot take with it."""

    def command(value, *extra):
        return [
            "train",
            "--model",
            "scalable_attention",
            "--data",
            str(sst2_dev),
            "--output",
            str(tmp_path / "run"),
            "--epochs",
            "1",
            "--clip-value",
            value,
            "--max-tokens",
            "2000",
            "--sequence-length",
            "16",
            "--set",
            "embedding_dim=16",
            "--set",
            "fc_units=16",
            "--quiet",
            *extra,
        ]

    assert main(command("0.01")) == 0
    assert keras.models.load_model(tmp_path / "run" / "model.keras").optimizer.clipvalue == 0.01
    assert json.loads((tmp_path / "run" / "run.json").read_text())["clip_value"] == 0.01
    (tmp_path / "run" / "metrics.json").unlink()  # an unfinished run, to resume
    capsys.readouterr()
    assert main(command("0.02")) == 2
    assert "started with other arguments (clip_value 0.01 -> 0.02)" in capsys.readouterr().err
    assert main(command("0.01", "--clip-norm", "1")) == 2
    assert capsys.readouterr().err.strip() == (
        "keras-textattn: error: clip_value (--clip-value) and clip_norm (--clip-norm) cannot go together; give one"
    )


def test_scalable_attention_trains_with_its_cpu_presets_cosine_schedule(sst2_dev, tmp_path, capsys):
    """Held-out data preferred the cosine schedule for scalable attention (BENCHMARKS.md): its cpu
    preset trains with it unless a schedule is given, says so, and records it; the paper preset
    keeps a constant rate (the paper names no schedule), as do models without such a default."""
    metrics = train("scalable_attention", sst2_dev, str(tmp_path / "cosine"), epochs=3, **{**SMALL, "verbose": 1})
    assert (
        "The scalable_attention cpu preset's training (give the option to change it): lr_schedule cosine"
        in capsys.readouterr().out
    )
    assert metrics["lr_schedule"] == "cosine"
    np.testing.assert_allclose(
        metrics["history"]["learning_rate"], 1e-3 * (1 + np.cos(np.pi * np.arange(3) / 3)) / 2, rtol=1e-6
    )
    assert json.loads((tmp_path / "cosine" / "run.json").read_text())["lr_schedule"] is None  # only what was given
    constant = train(
        "scalable_attention", sst2_dev, str(tmp_path / "constant"), epochs=2, lr_schedule="constant", **SMALL
    )
    assert constant["lr_schedule"] == "constant" and "learning_rate" not in constant["history"]
    optimizer = keras.models.load_model(tmp_path / "constant" / "model.keras").optimizer
    assert np.isclose(float(optimizer.learning_rate), 1e-3)  # cosine would have left 5e-4 after 2 epochs
    assert get_spec("scalable_attention").training_defaults("paper") == {}
    assert get_spec("dual_axial").training_defaults("cpu") == {}


def test_hashed_bigrams_for_a_flat_model_and_what_they_pair(sst2_dev, tmp_path):
    """`bigram_buckets` gives scalable attention a bigram input; the run folder's encoder pairs
    the vocabulary's tokens by default and the tokens as written with `bigrams_of="tokens"`."""
    for bigrams_of, expected in ((None, "vocabulary"), ("tokens", "tokens")):
        folder = tmp_path / expected
        train("scalable_attention", sst2_dev, str(folder), epochs=1, bigram_buckets=500, bigrams_of=bigrams_of, **SMALL)
        model, encoder, _ = load_run(str(folder))
        assert (encoder.bigram_buckets, encoder.bigrams_of) == (500, expected)
        assert sorted(tensor.name for tensor in model.inputs) == ["bigram_ids", "token_ids"]
        with open(folder / "run.json") as handle:
            assert json.load(handle)["bigrams_of"] == bigrams_of


class _RatesOfBatches(keras.callbacks.Callback):
    """Records the optimizer's rate each batch trains with (placed after the schedule)."""

    def __init__(self):
        super().__init__()
        self.rates = []

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))


def test_cosine_schedule_lowers_the_rate_every_batch_to_near_zero(tmp_path):
    """Cosine as Keras's `CosineDecay` over all the steps: 4 epochs of 4 batches train at
    0.01 (1 + cos(pi k / 16)) / 2 for step k, the last at 1% of the rate; the history
    records each epoch's first rate, and a run resumed at epoch 2 trains at the same rates."""

    def fit(initial_epoch=0):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, activation="softmax")])
        model.compile(keras.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
        rates = _RatesOfBatches()
        history = model.fit(
            np.zeros((16, 2)),
            np.zeros(16),
            batch_size=4,
            epochs=4,
            initial_epoch=initial_epoch,
            verbose=0,
            callbacks=[*schedule_callbacks("cosine", 0.01, 4, str(tmp_path)), rates],
        )
        return rates.rates, history.history["learning_rate"]

    expected = 0.01 * (1 + np.cos(np.pi * np.arange(16) / 16)) / 2
    rates, by_epoch = fit()
    np.testing.assert_allclose(rates, expected, rtol=1e-6)
    assert rates[-1] < 0.0002
    np.testing.assert_allclose(by_epoch, expected[::4], rtol=1e-6)
    np.testing.assert_allclose(fit(initial_epoch=2)[0], expected[8:], rtol=1e-6)


def test_plateau_state_survives_a_restart(tmp_path):
    """A resumed `fit` (new callback, `initial_epoch`) continues with the counters saved after the
    epoch before it: the same learning rates as one uninterrupted fit."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 4)), rng.integers(0, 2, 64)
    x_val, y_val = rng.normal(size=(32, 4)), rng.integers(0, 2, 32)

    def fit(folder, epochs, initial_epoch=0, model=None):
        if model is None:
            keras.utils.set_random_seed(0)
            model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
            model.compile(keras.optimizers.Adam(0.5), "sparse_categorical_crossentropy")
        history = model.fit(
            x,
            y,
            validation_data=(x_val, y_val),
            epochs=epochs,
            initial_epoch=initial_epoch,
            verbose=0,
            callbacks=[ResumablePlateau(str(folder), factor=0.5, patience=1, min_lr=0.001)],
        )
        return model, history.history["learning_rate"]

    _, whole = fit(tmp_path / "whole", 8)
    assert len(set(whole)) > 2  # the rate was halved more than once
    model, first = fit(tmp_path / "parts", 4)
    model.optimizer.learning_rate.assign(first[-1])  # as the checkpoint restores it ...
    _, rest = fit(tmp_path / "parts", 8, initial_epoch=4, model=model)
    np.testing.assert_allclose(first + rest, whole)


def test_balanced_class_weights_are_scikit_learns_on_r8(shared_data):
    """R8's training split is imbalanced (largest class ~50x the smallest): "balanced" gives
    scikit-learn's weights; a mapping names classes, the others weigh 1; unknown classes are refused."""
    from sklearn.utils.class_weight import compute_class_weight

    from keras_textattn.datasets import DataError
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets import load_dataset
    from keras_textattn.datasets import weigh_classes

    data = load_dataset({"train": LocalFile(str(shared_data / "r8" / "train.csv.gz"))}, ("train",))
    labels = np.array([int(label) for _, label in data["train"].as_numpy_iterator()])
    by_id, by_name = weigh_classes("balanced", data["train"], data.label_names)
    expected = compute_class_weight("balanced", classes=np.arange(len(data.label_names)), y=labels)
    np.testing.assert_allclose([by_id[i] for i in range(len(expected))], expected)
    assert max(expected) / min(expected) > 30 and by_name[data.label_names[0]] == by_id[0]
    for four in (4, np.float32(4), np.int64(4)):  # NumPy's numbers too (scikit-learn's weights are NumPy's)
        named = weigh_classes({data.label_names[1]: four}, data["train"], data.label_names)[0]
        assert named == {i: 4.0 if i == 1 else 1.0 for i in range(len(data.label_names))}
    with pytest.raises(DataError, match="names classes the data does not have"):
        weigh_classes({"weather": 2}, data["train"], data.label_names)
    # JSON's 1e400 is inf (and 1e39 is in float32): it weighed every other class as nothing.
    for weight in (float("inf"), 1e39, float("nan"), 0, True):
        with pytest.raises(
            DataError,
            match=re.escape(
                "class weights must be positive numbers (finite in float32); got "
                f"{{{data.label_names[1]!r}: {weight!r}}}"
            ),
        ):
            weigh_classes({data.label_names[1]: weight}, data["train"], data.label_names)


def test_class_weight_reaches_the_training_loss(sst2_dev, tmp_path):
    """Same seed and data: weighing class "1" three times changes the training loss; metrics.json
    records the weights by class name, and macro F1 per split."""
    plain = train("scalable_attention", sst2_dev, str(tmp_path / "plain"), epochs=1, **SMALL)
    weighted = train(
        "scalable_attention", sst2_dev, str(tmp_path / "weighted"), epochs=1, class_weight={"1": 3}, **SMALL
    )
    assert weighted["history"]["loss"][0] > 1.3 * plain["history"]["loss"][0]
    assert weighted["class_weight"] == {"0": 1.0, "1": 3.0} and plain["class_weight"] is None
    assert set(weighted["macro_f1"]) == {"train", "validation"} and 0 < weighted["macro_f1"]["validation"] <= 1


def test_early_stopping_on_accuracy_keeps_the_most_accurate_epoch(tmp_path):
    """`monitor="accuracy"`: the kept epoch is the first with the highest validation accuracy,
    and training stops `patience` epochs after it."""
    from keras_textattn.training.backup import BestEpoch

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 4)), rng.integers(0, 2, 64)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.3), "sparse_categorical_crossentropy", metrics=["accuracy"])
    best = BestEpoch(str(tmp_path), patience=2, monitor="accuracy")
    history = model.fit(
        x, y, validation_data=(rng.normal(size=(32, 4)), rng.integers(0, 2, 32)), epochs=30, verbose=0, callbacks=[best]
    ).history
    accuracy = history["val_accuracy"]
    top = int(np.argmax(accuracy))
    assert best.best["epoch"] == top and best.best["val_accuracy"] == pytest.approx(accuracy[top])
    assert len(accuracy) == top + 3 or (len(accuracy) == 30 and not best.stopped)


def test_mixed_precision_trains_and_ships(shared_data, sst2_dev, tmp_path, recwarn):
    """`--dtype-policy mixed_float16` (GPU training): the model computes in float16 with float32
    weights (Keras scales the loss), learns, leaves Keras's global policy as it was; its model.keras
    loads under the float32 global policy with its loss-scale optimizer and that optimizer's state
    (without Keras's warning that the optimizer does not load back), and the run folder predicts
    and converts to TFLite (computing in float32)."""
    from keras_textattn import export
    from keras_textattn.inference import predict

    sst2_train = str(shared_data / "sst2" / "train.csv.gz")
    assert (
        main(
            [
                "train",
                "--model",
                "scalable_attention",
                "--data",
                sst2_train,
                "--output",
                str(tmp_path / "run"),
                "--quiet",
                "--epochs",
                "2",
                "--set",
                "embedding_dim=8",
                "--set",
                "fc_units=8",
                "--sequence-length",
                "24",
                "--max-tokens",
                "2000",
                "--dtype-policy",
                "mixed_float16",
            ]
        )
        == 0
    )
    assert keras.config.dtype_policy().name == "float32"
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["dtype_policy"] == "mixed_float16" and metrics["accuracy"]["validation"] > 0.7
    model = load_run(tmp_path / "run")[0]
    attention = model.get_layer("attention")
    assert attention.compute_dtype == "float16" and all(w.dtype == "float32" for w in attention.weights)
    reloaded = keras.models.load_model(tmp_path / "run" / "model.keras")  # as a user training it further would
    assert isinstance(reloaded.optimizer, keras.optimizers.LossScaleOptimizer)
    steps = 2 * math.ceil(metrics["rows"]["train"] / metrics["batch_size"])  # two epochs' batches (those that
    assert 0 < int(reloaded.optimizer.iterations) <= steps  # overflowed in float16 are skipped); 0 if not loaded
    assert [
        row["label"]
        for row in predict(tmp_path / "run", ["a masterpiece , moving and funny .", "dull , tedious and badly acted ."])
    ] == ["1", "0"]
    assert not [w for w in recwarn if "optimizer" in str(w.message)]
    lite = export.tflite(tmp_path / "run", tmp_path / "tflite")
    assert lite["max_abs_difference"] <= 1e-4 and lite["argmax_agreement"] == 1
    with pytest.raises(Exception, match="dtype_policy .* must be one of float32, mixed_float16, mixed_bfloat16"):
        train("scalable_attention", sst2_dev, str(tmp_path / "bad"), dtype_policy="float16", **SMALL)
    from keras_textattn.models import build_model

    with pytest.raises(ValueError, match="dtype_policy .* must be one of float32, mixed_float16, mixed_bfloat16"):
        build_model("lama", 2, dtype_policy="float16", vocabulary_size=10, sequence_length=8)
    assert (
        build_model("lama", 2, dtype_policy="mixed_bfloat16", vocabulary_size=10, sequence_length=8)
        .get_layer("attention")
        .compute_dtype
        == "bfloat16"
    )
    assert keras.config.dtype_policy().name == "float32"


def test_embedding_updates_sparse_dense_and_the_auto_rule(sst2_dev, tmp_path, capsys):
    """`embedding_updates="sparse"` trains with `LazyAdam`: an embedding row moves only in the steps
    whose batch used it, so rows no training text uses stay as initialised (as with Keras's Adam,
    whose moments of them stay zero), and the rows used end elsewhere than Keras's Adam ("dense")
    leaves them. "auto" (the default) is dense for a small table and sparse, said, from
    `SPARSE_TABLE_ROWS` rows on; metrics.json records which."""
    runs = {}
    for updates in ("sparse", "dense"):
        output = tmp_path / updates
        metrics = train("scalable_attention", sst2_dev, str(output), epochs=1, embedding_updates=updates, **SMALL)
        runs[updates], encoder, _ = load_run(str(output))
        assert metrics["embedding_updates"] == updates
        assert json.loads((output / "run.json").read_text())["embedding_updates"] == updates
    assert type(runs["sparse"].optimizer).__name__ == "LazyAdam"
    assert type(runs["dense"].optimizer) is keras.optimizers.Adam
    with gzip.open(sst2_dev, "rt", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    used = np.unique(np.asarray(encoder(texts)))
    unused = np.setdiff1d(np.arange(encoder.vocabulary_size()), used)
    assert len(unused) > 0
    lazy, dense = (runs[updates].get_layer("embedding").get_weights()[0] for updates in ("sparse", "dense"))
    np.testing.assert_array_equal(lazy[unused], dense[unused])
    assert np.abs(lazy[used] - dense[used]).max() > 1e-3

    small = train("scalable_attention", sst2_dev, str(tmp_path / "auto_small"), epochs=1, **SMALL)
    large = train(
        "scalable_attention",
        sst2_dev,
        str(tmp_path / "auto_large"),
        epochs=1,
        bigram_buckets=SPARSE_TABLE_ROWS,
        **{**SMALL, "verbose": 1},
    )
    assert (small["embedding_updates"], large["embedding_updates"]) == ("dense", "sparse")
    assert f"The embedding tables hold {SPARSE_TABLE_ROWS:,} rows or more" in capsys.readouterr().out


def test_batch_for_rows_is_the_largest_that_keeps_an_epoch_of_enough_steps():
    from keras_textattn.training.model_setup import batch_for_rows

    assert STEPS_PER_EPOCH == 100 and BATCH_SIZES == (32, 64, 128, 256)
    rows = (0, 10, 6_399, 6_400, 12_799, 12_800, 25_599, 25_600, 10**7)
    assert [batch_for_rows(count) for count in rows] == [32, 32, 32, 64, 64, 128, 128, 256, 256]


def test_cpu_preset_chooses_the_batch_from_the_training_rows_and_grows_the_rate(shared_data, tmp_path, capsys):
    """SST-2's 6,920 training rows (its dev file validates) take batch 64 and Adam's rate times
    sqrt(2) (SGD's times 2), said and recorded, and the fit takes that many steps. A given rate is
    kept beside the chosen batch; a given batch and the paper preset's keep the rate too."""
    from keras_textattn.datasets import LocalFile

    files = {
        "train": LocalFile(str(shared_data / "sst2" / "train.csv.gz")),
        "validation": LocalFile(str(shared_data / "sst2" / "dev.csv.gz")),
    }

    def run(name, **options):
        metrics = train("scalable_attention", files, str(tmp_path / name), epochs=1, **{**SMALL, **options})
        steps = int(keras.models.load_model(tmp_path / name / "model.keras").optimizer.iterations)
        return metrics["batch_size"], metrics["learning_rate"], steps

    chosen = run("chosen", verbose=1, lr_schedule="constant")
    assert chosen == (64, pytest.approx(1e-3 * math.sqrt(2)), math.ceil(6920 / 64))
    assert (
        "Chosen from the 6,920 training rows (an epoch of 100 steps or more; give --batch-size / --learning-rate "
        "to set): batch_size 64, learning_rate 0.00141421" in capsys.readouterr().out
    )
    assert json.loads((tmp_path / "chosen" / "run.json").read_text())["batch_size"] is None  # only what was given
    assert run("rate given", learning_rate=5e-4) == (64, 5e-4, math.ceil(6920 / 64))
    assert run("sgd", optimizer="sgd", lr_schedule="constant")[:2] == (64, pytest.approx(0.02))
    assert run("batch given", batch_size=32, verbose=1) == (32, 1e-3, math.ceil(6920 / 32))
    assert run("paper", preset="paper", model_kwargs={})[:2] == (32, 1e-3)
    assert "Chosen from" not in capsys.readouterr().out


def test_fast_training_is_chosen_from_enough_training_rows_for_the_options_left_to_it():
    config = with_fallbacks(TrainConfig(preset="fast"))
    assert with_fast_training(config, FAST_ROWS - 1, set(FAST_TRAINING)) == (config, {})
    fast, chosen = with_fast_training(config, FAST_ROWS, {"epochs", "bigram_buckets"})
    assert chosen == {"epochs": 1, "bigram_buckets": 200_000}
    assert (fast.epochs, fast.bigram_buckets, fast.lr_schedule) == (1, 200_000, None)
    assert with_fast_training(with_fallbacks(TrainConfig(lr_schedule="cosine")), FAST_ROWS, {"lr_schedule"})[1] == {}
    given = TrainConfig(preset="fast", batch_size=64, bigram_buckets=0)
    assert left_to_rows(given, {"lr_schedule": "cosine"}, {}) == {"learning_rate", "epochs"}
    assert left_to_rows(given, {}, MULTI_LABEL_TRAINING) == {"learning_rate", "lr_schedule"}  # its epochs rule wins
    assert left_to_rows(TrainConfig(), {}, {}) == {"batch_size", "learning_rate"}
    assert left_to_rows(TrainConfig(preset="paper"), {}, {}) == set()


def test_fast_preset_trains_one_pass_with_bigrams_on_many_rows_and_is_the_cpu_preset_on_few(
    sst2_dev, tmp_path, capsys, monkeypatch
):
    """From `FAST_ROWS` training rows on (lowered here below the 778 rows SST-2's dev file leaves after
    its held-out tenth) the fast preset trains one epoch, decaying the rate to near zero, with hashed
    bigrams: said, and recorded in metrics.json but not run.json (the options as given). What the
    user gives is kept; on fewer rows it trains as the cpu preset (its sizes, 3 epochs, no bigrams)."""
    from keras_textattn.training import model_setup
    from keras_textattn.training import run as run_module

    def fast(name, rows_needed, **options):
        monkeypatch.setattr(model_setup, "FAST_ROWS", rows_needed)
        monkeypatch.setattr(run_module, "FAST_ROWS", rows_needed)
        metrics = train("lama", sst2_dev, str(tmp_path / name), preset="fast", **{**LAMA_SMALL, **options})
        return len(metrics["history"]["loss"]), metrics["lr_schedule"], metrics["encoder"]["bigram_buckets"]

    assert fast("many", 700, verbose=1) == (1, "cosine", 200_000)
    assert (
        "The fast preset on 778 training rows (700 or more; give the option to set it): epochs 1, lr_schedule "
        "cosine, bigram_buckets 200000" in capsys.readouterr().out
    )
    assert json.loads((tmp_path / "many" / "run.json").read_text())["bigram_buckets"] is None
    assert fast("given", 700, epochs=2, bigram_buckets=0, lr_schedule="constant") == (2, "constant", 0)
    assert fast("few", 779) == (3, "constant", 0)
    for spec in map(get_spec, MODELS):
        assert spec.preset_arguments("fast") == spec.preset_arguments("cpu")
        assert spec.training_defaults("fast") == spec.training_defaults("cpu")
