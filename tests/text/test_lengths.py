"""Sequence shapes chosen from the training texts when a run does not give them."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_textattn.datasets import LocalFile
from keras_textattn.datasets import load_dataset
from keras_textattn.models import get_spec
from keras_textattn.text import TextEncoder
from keras_textattn.text import choose_lengths
from keras_textattn.text import choose_open_lengths


def test_count_tokens_agrees_with_the_encoder():
    texts = ["A great film. Loved it!", "", "One. . Two words here? Three", "word " * 300]
    encoder = TextEncoder()
    assert encoder.count_tokens(texts).tolist() == [len(encoder.token_spans(t)) for t in texts]
    hierarchical = TextEncoder(hierarchical=True)
    sentences, words = hierarchical.count_tokens(texts)
    spans = [hierarchical.token_spans(t) for t in texts]
    assert sentences.tolist() == [len({p[0] for p, *_ in s}) for s in spans] == [2, 0, 3, 1]
    per_sentence = [sum(p[0] == k for p, *_ in s) for s in spans for k in sorted({p[0] for p, *_ in s})]
    assert words.tolist() == per_sentence and words[-1] == 300


def test_lengths_cover_95_percent_of_real_texts(shared_data):
    train = load_dataset(LocalFile(str(shared_data / "sst2" / "train.csv.gz")), splits=("train",))["train"]
    texts = [t.decode() for t, _ in train.take(2000).as_numpy_iterator()]
    counts = TextEncoder().count_tokens(texts)
    chosen = choose_lengths(train)["sequence_length"]
    assert chosen % 8 == 0 and chosen - 8 < np.percentile(counts, 95) <= chosen
    assert 0.95 <= np.mean(counts <= chosen) < 1.0  # SST-2: 40 tokens; its longest sentence has 56
    shape = choose_lengths(train, hierarchical=True)
    assert shape["max_sentences"] == 2 and shape["sequence_length"] == chosen  # mostly one sentence each
    # Only what is left open is chosen; limits hold for tiny and huge texts.
    assert choose_open_lengths({"sequence_length": 12}, train) == {}
    assert choose_open_lengths({"hierarchical": True, "sequence_length": 12, "max_sentences": None}, train) == {
        "max_sentences": 2
    }
    tiny = tf.data.Dataset.from_tensor_slices(["a"] * 10)
    assert choose_lengths(tiny) == {"sequence_length": 8}
    huge = tf.data.Dataset.from_tensor_slices(["word " * 5000 + ". "] * 3)
    assert choose_lengths(huge, hierarchical=True) == {"sequence_length": 64, "max_sentences": 1}
    assert choose_lengths(huge, hierarchical=True, split_long_sentences=True) == {
        "sequence_length": 64,
        "max_sentences": 30,
    }  # rows of 64 words
    assert choose_lengths(huge) == {"sequence_length": 256}
    assert choose_lengths(huge, longest=1024) == {"sequence_length": 1024}


def test_hierarchical_lengths_read_unpunctuated_texts_whole(shared_data):
    """R8 is lower-cased without punctuation, so each text is one "sentence" (95th percentile 355
    words): with `split_long_sentences` the rows chosen hold 95% of the texts whole, where one row
    of 64 words holds 48%."""
    r8 = load_dataset(LocalFile(str(shared_data / "r8" / "train.csv.gz")), splits=("train",))["train"]
    texts = [t.decode() for t, _ in r8.take(2000).as_numpy_iterator()]
    sentences, _ = TextEncoder(hierarchical=True).count_tokens(texts)
    assert (sentences == 1).all()
    assert choose_lengths(r8, hierarchical=True) == {"sequence_length": 64, "max_sentences": 1}
    shape = choose_lengths(r8, hierarchical=True, split_long_sentences=True)
    assert shape == {"sequence_length": 64, "max_sentences": 6}
    # `train` and `tune` choose through the encoder's options, which carry the option.
    options = get_spec("hcan").encoder_options(split_long_sentences=True)
    assert options["split_long_sentences"] and choose_open_lengths(options, r8) == shape
    encoder = TextEncoder(hierarchical=True, split_long_sentences=True, **shape)
    encoder.adapt(texts)
    read = (keras.ops.convert_to_numpy(encoder(texts)) > 0).sum(axis=(1, 2))
    whole = read == TextEncoder().count_tokens(texts)
    assert 0.95 <= whole.mean() < 1.0


def test_each_model_takes_long_texts_up_to_its_longest():
    """Scalable attention and CSPAN (linear in length) read reviews of 600 tokens whole; LAMA
    (chosen at 256) and the models whose cost grows faster are cut at 256 tokens."""
    reviews = tf.data.Dataset.from_tensor_slices(["word " * 600] * 20)
    for name, expected in (("scalable_attention", 600), ("cspan", 600), ("lama", 256), ("transformer", 256)):
        spec = get_spec(name)
        assert choose_open_lengths(spec.encoder_options(), reviews, longest=spec.longest_text) == {
            "sequence_length": expected
        }, name


@pytest.mark.parametrize("empty", [[], [""]])
def test_no_tokens_gives_the_smallest_shape(empty):
    texts = tf.data.Dataset.from_tensor_slices(tf.constant(empty, tf.string))
    assert choose_lengths(texts) == {"sequence_length": 8}
    assert choose_lengths(texts, hierarchical=True) == {"sequence_length": 8, "max_sentences": 1}


def test_a_run_says_when_its_chosen_length_cuts_many_texts(shared_data, tmp_path, capsys):
    """IMDB's reviews are longer than the 256 tokens LAMA reads by default: the share cut and the
    length that holds 95% whole are measured on the texts (and printed by `train` and `tune`)."""
    from keras_textattn.text.lengths import texts_cut

    imdb = load_dataset(LocalFile(str(shared_data / "imdb" / "train.csv.gz")), splits=("train",))["train"]
    counts = TextEncoder().count_tokens([t.decode() for t, _ in imdb.take(2000).as_numpy_iterator()])
    share, whole = texts_cut(imdb, 256)
    assert share == pytest.approx(np.mean(counts > 256)) and 0.2 < share < 0.6
    assert whole % 8 == 0 and whole - 8 < np.percentile(counts, 95) <= whole
    sst2 = load_dataset(LocalFile(str(shared_data / "sst2" / "train.csv.gz")), splits=("train",))["train"]
    assert texts_cut(sst2, 256)[0] == 0.0
    assert texts_cut(tf.data.Dataset.from_tensor_slices(tf.constant([], tf.string)), 8) == (0.0, 8)
    # What a run prints, on 200 of the reviews (the length is left to the data).
    from keras_textattn.training import train

    rows = [(label, text.decode()) for text, label in imdb.shuffle(25000, seed=0).take(200).as_numpy_iterator()]
    path = tmp_path / "reviews.csv"
    path.write_text("label,text\n" + "".join(f'{label},"{text.replace(chr(34), chr(39))}"\n' for label, text in rows))
    train(
        "lama",
        str(path),
        str(tmp_path / "run"),
        epochs=1,
        max_tokens=500,
        verbose=1,
        model_kwargs={"embedding_dim": 8, "gru_units": 4, "num_heads": 2, "mlp_units": 8},
    )
    printed = {"train": capsys.readouterr().out}
    # A search whose config leaves the length open says the same, naming the config's setting (tune has no flag).
    from keras_textattn.tuning import tune

    config = tmp_path / "lama.yaml"
    config.write_text(
        "model: lama\ntuner: {max_trials: 1, epochs: 1}\nencoder: {max_tokens: 500}\n"
        "fixed: {embedding_dim: 8, gru_units: 4, mlp_units: 8}\n"
        "hyperparameters:\n  num_heads: {type: int, min: 1, max: 2, default: 2}\n"
    )
    tune(config, str(path), tmp_path / "search", verbose=1)
    printed["tune"] = capsys.readouterr().out
    settings = {
        "train": ("--sequence-length", "--sequence-length "),
        "tune": ("encoder.sequence_length in the config", "encoder.sequence_length: "),
    }
    for command, lines in printed.items():
        give, set_to = settings[command]
        assert f"Chosen from the training texts (95th percentile; give {give} to set): sequence_length 256" in lines, (
            command
        )
        assert re.search(
            "of the training texts are longer than the 256 tokens lama reads by default and are cut; "
            + re.escape(set_to)
            + r"\d+ (in the config )?reads 95% of them whole",
            lines,
        ), command


def test_a_run_says_when_its_given_length_is_far_past_the_texts(tmp_path, capsys):
    """A given length over 4x the one that reads 95% of the texts whole (and over 512 tokens) pads
    every text for nothing, a typo's extra zero say: `train` says so (LAMA at 100,000 tokens on
    TREC's questions took 18 GB). A length near the texts' is not questioned."""
    from keras_textattn.training import train

    path = tmp_path / "short.csv"
    path.write_text("label,text\n" + "".join(f"{i % 2},word{i} and a few more\n" for i in range(40)))
    for length, said in ((4096, True), (64, False)):
        train(
            "scalable_attention",
            str(path),
            str(tmp_path / f"run{length}"),
            epochs=1,
            sequence_length=length,
            verbose=1,
            model_kwargs={"embedding_dim": 8, "fc_units": 8},
        )
        printed = capsys.readouterr().out
        assert (
            "--sequence-length 4096 is over 4x the 8 tokens that read 95% of the training texts whole: every "
            "text is padded to it" in printed
        ) == said, printed[:500]
