import csv
import dataclasses
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_textattn.datasets import DataError
from keras_textattn.datasets import load_labelled_data
from keras_textattn.datasets import make_batches
from keras_textattn.errors import UserError
from keras_textattn.models import get_spec
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import load_encoder
from keras_textattn.run_folder import load_run
from keras_textattn.text import TextEncoder
from keras_textattn.training import train
from keras_textattn.tuning import ConfigError
from keras_textattn.tuning import load_config
from keras_textattn.tuning import shipped_configs
from keras_textattn.tuning import tune
from keras_textattn_cli import main

CONFIGS = pathlib.Path(__file__).resolve().parents[2] / "tuner_configs"
TINY = """\
model: scalable_attention
tuner: {max_trials: 3, epochs: 1, batch_size: 64}
encoder: {max_tokens: 3000, sequence_length: 24}
fixed: {embedding_dim: 16}
hyperparameters:
  hidden_units: {type: choice, values: [[], [8], [16, 8]], default: []}
  fc_units: {type: choice, values: [8, 16, 32], default: 16}
"""


@pytest.fixture
def tiny_config(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def _trec_rows(shared_data):
    """TREC's training rows as {"label", "text"} dicts."""
    import csv
    import gzip

    with gzip.open(shared_data / "trec" / "train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        return [{"label": row["label"], "text": row["text"]} for row in csv.DictReader(handle)]


def _cli(*arguments):
    return [sys.executable, "-m", "keras_textattn_cli", *map(str, arguments)]


def test_shipped_configs_default_to_the_papers_values():
    configs = {name: load_config(name) for name in shipped_configs()}  # by name: no checkout needed
    assert set(configs) == {"scalable_attention", "dual_axial", "hcan", "lama", "cspan"}
    assert sorted(path.stem for path in CONFIGS.glob("*.yaml")) == shipped_configs()  # a checkout's tuner_configs/
    assert all(
        dataclasses.replace(load_config(path), path=configs[path.stem].path) == configs[path.stem]
        for path in CONFIGS.glob("*.yaml")
    )
    defaults = {name: {k: v["default"] for k, v in c.hyperparameters.items()} for name, c in configs.items()}
    assert defaults["lama"]["num_heads"] == 15  # Figure 5's peak
    assert (defaults["hcan"]["units"], defaults["hcan"]["num_heads"]) == (512, 8)
    assert (defaults["cspan"]["num_queries"], defaults["cspan"]["lstm_layers"]) == (16, 1)  # CSPAN base
    assert defaults["scalable_attention"]["hidden_units"] == []
    assert defaults["dual_axial"]["variant"] == "dual_axial"
    # The objective is left to the data: validation accuracy, or macro F1 for multi-label data.
    assert all(c.objective is None for c in configs.values())
    assert [(c.objective_for(False), c.objective_for(True)) for c in configs.values()] == [
        ("val_accuracy", "val_macro_f1")
    ] * 5
    assert {c.preset for c in configs.values()} == {"cpu"}  # sizes that finish on 2 cores, as train's default
    # Text lengths are left to the data, chosen as `train` chooses them: a fixed 15 sentences x 40 words
    # made HCAN's trials on one-sentence SST-2 texts 3x slower (86 s against 27 s for one epoch).
    assert not [name for name, c in configs.items() if {"sequence_length", "max_sentences"} & set(c.encoder)]


@pytest.mark.parametrize(
    "change, message",
    [
        ("learning_rat: 0.1\n", r"tiny.yaml: learning_rat: unknown key; allowed: model, objective"),
        ("model: lama\n", r"tiny.yaml: model: given twice \(line 2\); YAML would keep the last one silently"),
        (
            "  fc_units: {type: int, min: 32, max: 8, default: 16}\n",
            r"tiny.yaml: hyperparameters.fc_units: empty range",
        ),
        (
            "  fc_units: {type: int, min: 8, max: 32, default: 64}\n",
            r"tiny.yaml: hyperparameters.fc_units.default: 64 is outside the range; allowed: 8 to 32",
        ),
        (
            "  fc_units: {type: int, min: 8, max: '32', default: 16}\n",
            r"tiny.yaml: hyperparameters.fc_units.max: expected an integer, got '32'",
        ),
        (
            "  fc_units: {type: integer, min: 8, max: 32, default: 16}\n",
            r"tiny.yaml: hyperparameters.fc_units.type: unknown type 'integer'; allowed: int, float, choice, boolean",
        ),
        (
            "  fc_units: {type: choice, values: [8, 16], default: 12}\n",
            r"tiny.yaml: hyperparameters.fc_units.default: 12 is not one of the choices; allowed: 8, 16",
        ),
        (
            "  heads: {type: int, min: 1, max: 4, default: 2}\n",
            r"tiny.yaml: hyperparameters.heads: not an argument of the scalable_attention builder; allowed: "
            r"embedding_dim, "
            r"fc_units, hidden_units, attention_activation, learning_rate, freeze_embeddings, max_tokens, "
            r"sequence_length$",
        ),
        (
            "  learning_rate: {type: float, min: 0.0, max: 0.1, sampling: log, default: 0.01}\n",
            r"tiny.yaml: hyperparameters.learning_rate.min: log sampling needs min > 0",
        ),
        (
            "fixed: {embedding_dim: 16, learning_rate: -0.001}\n",
            r"tiny.yaml: fixed.learning_rate: learning rates are positive numbers; got \[-0.001\]",
        ),
        (
            "  learning_rate: {type: float, min: -0.01, max: 0.1, default: 0.01}\n",  # train refuses it too
            r"tiny.yaml: hyperparameters.learning_rate: learning rates are positive numbers; got \[-0.01, 0.1\]",
        ),
        (
            "  learning_rate: {type: choice, values: [0.01, 0.0], default: 0.01}\n",
            r"tiny.yaml: hyperparameters.learning_rate: learning rates are positive numbers; got \[0.01, 0.0\]",
        ),
        (
            "  max_tokens: {type: choice, values: [500, 5000], default: 500}\n",
            r"tiny.yaml: encoder.max_tokens: also searched under `hyperparameters`; the encoder is adapted with the "
            r"largest value searched, so remove it here",
        ),
        (
            "  max_tokens: {type: float, min: 500, max: 5000, default: 500}\n",
            r"tiny.yaml: hyperparameters.max_tokens.type: max_tokens is searched as int or choice, not float",
        ),
        (
            "  max_tokens: {type: choice, values: [2, 5000], default: 5000}\n",
            r"tiny.yaml: hyperparameters.max_tokens: max_tokens counts padding and OOV: expected integers of at "
            r"least 3",
        ),
        # The builder arguments the encoder's output shape decides (they failed every trial, or the search, with
        # "got multiple values for keyword argument" or "expects 2 named input(s)").
        (
            "fixed: {embedding_dim: 16, sequence_length: 8}\n",
            r"tiny.yaml: fixed.sequence_length: a fixed sequence_length is set under `encoder`",
        ),
        (
            "fixed: {embedding_dim: 16, bigram_buckets: 1000}\n",
            r"tiny.yaml: fixed.bigram_buckets: a fixed bigram_buckets is set under `encoder`",
        ),
        (
            "  bigram_buckets: {type: choice, values: [0, 1000], default: 0}\n",
            r"tiny.yaml: hyperparameters.bigram_buckets: bigram_buckets is set under `encoder`: the encoder is adapted "
            r"once, and its ids of every trial have the one shape it gives \(of these shapes, a search varies a flat "
            r"model's sequence_length\)",
        ),
        (
            "  sequence_length: {type: choice, values: [0, 8], default: 8}\n",
            r"tiny.yaml: hyperparameters.sequence_length: expected positive integers \(tokens per text\), got \[0, 8\]",
        ),
        (
            "  sequence_length: {type: int, min: 8, max: 64, default: 8}\n",
            r"tiny.yaml: encoder.sequence_length: also searched under `hyperparameters`; the encoder is adapted with "
            r"the largest value searched, so remove it here",
        ),
    ],
)
def test_bad_configs_are_rejected_before_training(tiny_config, change, message):
    text = TINY + change if change.startswith("  ") else change + TINY
    if change.startswith("fixed:"):
        text = TINY.replace("fixed: {embedding_dim: 16}\n", change)
    if "encoder.max_tokens" not in message:
        text = text.replace("max_tokens: 3000, ", "")
    if "sequence_length" in change and "encoder.sequence_length" not in message:
        text = text.replace("encoder: {sequence_length: 24}", "encoder: {}")
    if change.startswith("  fc_units"):
        text = TINY.replace("  fc_units: {type: choice, values: [8, 16, 32], default: 16}\n", change)
    tiny_config.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tiny_config)


@pytest.mark.parametrize(
    "model, encoder, message",
    [
        (
            "scalable_attention",
            "{split_long_sentences: true}",
            r"tiny.yaml: encoder.split_long_sentences: for hierarchical models; scalable_attention reads flat texts "
            r"here",
        ),
        (
            "scalable_attention",
            "{max_sentences: 4}",
            r"tiny.yaml: encoder.max_sentences: for hierarchical models; scalable_attention reads flat texts here",
        ),
        (
            "hcan",
            "{split_long_sentences: 'yes'}",
            r"tiny.yaml: encoder.split_long_sentences: expected true or false, "
            r"got 'yes'",
        ),
        ("hcan", "{split_long_sentences: true}", None),
    ],
)
def test_sentence_settings_are_for_models_that_read_sentences(tiny_config, model, encoder, message):
    """HCAN's encoder settings are refused for flat models; a valid one reaches the encoder."""
    tiny_config.write_text(
        TINY.replace("model: scalable_attention", f"model: {model}")
        .replace("encoder: {max_tokens: 3000, sequence_length: 24}", f"encoder: {encoder}")
        .replace("fixed: {embedding_dim: 16}\n", "")
        .replace(
            "hidden_units: {type: choice, values: [[], [8], [16, 8]], default: []}",
            "units: {type: choice, values: [8, 16], default: 8}",
        )
        .replace("  fc_units: {type: choice, values: [8, 16, 32], default: 16}\n", "")
    )
    if message:
        with pytest.raises(ConfigError, match=message):
            load_config(tiny_config)
        return
    config = load_config(tiny_config)
    options = get_spec(config.model).encoder_options(config.fixed, **config.encoder)
    assert TextEncoder(**{**options, "max_sentences": 3}).split_long_sentences


@pytest.mark.parametrize(
    "fixed, message",
    [
        (
            "{use_context: 'False'}",
            r"tiny.yaml: fixed.use_context: expected true or "
            r"false, got 'False'",
        ),
        ("{use_context: false}", None),
    ],
)
def test_a_fixed_flag_is_true_or_false(tiny_config, fixed, message):
    """A quoted 'False' under `fixed` was read as true: every trial built LAMA+ctx."""
    tiny_config.write_text(
        TINY.replace("model: scalable_attention", "model: lama")
        .replace("fixed: {embedding_dim: 16}", f"fixed: {fixed}")
        .replace("  hidden_units: {type: choice, values: [[], [8], [16, 8]], default: []}\n", "")
        .replace("fc_units", "mlp_units")
    )
    if message:
        with pytest.raises(ConfigError, match=message):
            load_config(tiny_config)
    else:
        assert load_config(tiny_config).fixed == {"use_context": False}


@pytest.mark.parametrize(
    "preset, expected",
    [
        (None, {"embedding_dim": 64, "gru_units": 32, "mlp_units": 64}),
        ("paper", {"embedding_dim": 100, "gru_units": 50, "mlp_units": 512}),
    ],
)
def test_a_trial_takes_the_presets_sizes_where_the_config_is_silent(preset, expected, tmp_path, capsys):
    """Builder arguments a config neither fixes nor searches come from its preset, as for `train`:
    "cpu" by default (the paper's LAMA, at 512 MLP units and 100-d embeddings, is what made a
    search slow on 2 cores), "paper" for the builder's own defaults; `fixed` and searched values win."""
    import keras_tuner

    from keras_textattn.tuning.search import TextAttentionHyperModel

    text = (
        "".join(
            line
            for line in (CONFIGS / "lama.yaml").read_text().splitlines(keepends=True)
            if not line.startswith("preset:")
        )
        + "fixed: {gru_units: 40}\n"
    )
    path = tmp_path / "lama.yaml"
    path.write_text(text if preset is None else f"preset: {preset}\n{text}")
    config = load_config(path)
    assert config.preset == (preset or "cpu")
    encoder = TextEncoder(max_tokens=50, sequence_length=12)
    encoder.adapt(["a film worth seeing", "not worth the ticket"])
    model = TextAttentionHyperModel(config, 2, encoder).build(keras_tuner.HyperParameters())
    assert model.get_layer("embedding").output_dim == expected["embedding_dim"]
    assert model.get_layer("bigru").forward_layer.units == 40  # fixed, over the preset's 32
    assert model.get_layer("mlp").units == expected["mlp_units"]
    with pytest.raises(DataError, match="Data file not found"):
        tune(path, str(tmp_path / "no-such.csv"), tmp_path / "search")  # says what the trials take, then fails
    said = capsys.readouterr().out
    assert (
        "Every trial's lama has the cpu preset's embedding_dim 64, mlp_units 64 (neither fixed nor searched" in said
    ) == (preset is None)
    with pytest.raises(RunError, match=r"unknown preset 'laptop' \(--preset\); choose one of cpu, fast, paper"):
        tune(path, str(tmp_path / "no-such.csv"), tmp_path / "search", preset="laptop")  # before the data is read
    (tmp_path / "a-file").write_text("mine")  # it was "[Errno 17] File exists" once the data had been read
    with pytest.raises(RunError, match=r"a-file is a file; give the folder of the search as --directory"):
        tune(path, str(tmp_path / "no-such.csv"), tmp_path / "a-file")
    for name, value in (("max_trials", 0), ("epochs", 0), ("max_trials", -1), ("epochs", 1.5)):
        # 0 ran the config's number (10 trials), -1 none ("no trial of the search finished")
        with pytest.raises(UserError, match=f"{name.replace('_', '-')} must be a positive whole number; got {value}"):
            tune(path, str(tmp_path / "no-such.csv"), tmp_path / "search", **{name: value})
    # Each failed inside: a list of class weights was read as class names, an int as a vectors file (a
    # TypeError), verbose="x" in Keras's fit.
    for name, value, message in (
        (
            "class_weight",
            [5],
            r"class_weight \(--class-weight\) must be 'balanced' or a "
            r"mapping of class name to weight; got \[5\]$",
        ),
        ("embeddings", 3, r"embeddings \(--embeddings\) must be .* 3 is none of them$"),
        ("verbose", "x", r"verbose must be 0 \(silent\), .* or 'auto'; got 'x'$"),
    ):
        with pytest.raises(UserError, match=message):
            tune(path, str(tmp_path / "no-such.csv"), tmp_path / "search", **{name: value})
    path.write_text(f"preset: laptop\n{text}")
    with pytest.raises(ConfigError, match=r"lama.yaml: preset: unknown preset 'laptop'; allowed: cpu, fast, paper"):
        load_config(path)


def test_invalid_yaml_says_what_and_where(tiny_config):
    """YAML's own problem and its line (it showed only YAML's context line, "while scanning for the
    next token")."""
    tiny_config.write_text(TINY.replace("  fc_units", "\tfc_units"))
    with pytest.raises(
        ConfigError,
        match=r"tiny.yaml: not valid YAML \(line 7, column 1\): found character '\\t' that "
        r"cannot start any token$",
    ):
        load_config(tiny_config)


def test_tuner_seed_zero_is_a_seed(tiny_config):
    """0 is the default seed, so a config may say it; a negative seed, or one above what Keras
    and NumPy take, is refused."""
    tiny_config.write_text(TINY.replace("batch_size: 64}", "batch_size: 64, seed: 0}"))
    assert load_config(tiny_config).seed == 0
    for seed in (-1, 2**32):
        tiny_config.write_text(TINY.replace("batch_size: 64}", f"batch_size: 64, seed: {seed}}}"))
        with pytest.raises(
            ConfigError,
            match=rf"tiny.yaml: tuner.seed: expected an integer from 0 to 4294967295, "
            rf"got {seed}",
        ):
            load_config(tiny_config)


def test_trials_train_with_the_schedule_train_would_use(tiny_config, tmp_path, capsys):
    """Scalable attention's cpu preset trains with the cosine schedule (`train`'s default for it),
    so its trials do, from each trial's own rate (searched or fixed); `tuner.lr_schedule` changes it, and a schedule
    that is not a function of the epoch (the plateau) is refused."""
    import keras_tuner

    from keras_textattn.tuning.search import TextAttentionHyperModel

    with pytest.raises(DataError, match="Data file not found"):
        tune(tiny_config, str(tmp_path / "no-such.csv"), tmp_path / "search")  # says the schedule, then fails
    assert (
        "Every trial trains with the cosine learning-rate schedule, the cpu preset's for scalable_attention"
        in capsys.readouterr().out
    )
    config = load_config(tiny_config)
    assert config.lr_schedule is None  # until `tune` sets the preset's
    config.lr_schedule = "cosine"
    texts, labels = ["a film worth seeing", "not worth the ticket"] * 8, np.array([1, 0] * 8)
    encoder = TextEncoder(max_tokens=50, sequence_length=12)
    encoder.adapt(texts)
    hypermodel = TextAttentionHyperModel(config, 2, encoder)
    hp = keras_tuner.HyperParameters()
    hp.Fixed("learning_rate", 0.01)
    history = hypermodel.fit(hp, hypermodel.build(hp), encoder(texts), labels, epochs=4, verbose=0)
    np.testing.assert_allclose(
        history.history["learning_rate"], 0.01 * (1 + np.cos(np.pi * np.arange(4) / 4)) / 2, rtol=1e-6
    )
    # A rate the config fixes is the one the schedule starts from (it started from 1e-3, ignoring it).
    config.fixed["learning_rate"] = 0.02
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    assert float(model.optimizer.learning_rate) == pytest.approx(0.02)
    history = hypermodel.fit(hp, model, encoder(texts), labels, epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["learning_rate"], [0.02, 0.01], rtol=1e-6)
    tiny_config.write_text(TINY.replace("batch_size: 64}", "batch_size: 64, lr_schedule: constant}"))
    assert load_config(tiny_config).lr_schedule == "constant"
    tiny_config.write_text(TINY.replace("batch_size: 64}", "batch_size: 64, lr_schedule: plateau}"))
    with pytest.raises(
        ConfigError,
        match=r"tiny.yaml: tuner.lr_schedule: expected a schedule that is a function of "
        r"the epoch, got 'plateau'; allowed: constant, cosine, step:E1,E2,...",
    ):
        load_config(tiny_config)


def test_fixed_vocabulary_belongs_under_encoder(tiny_config):
    tiny_config.write_text(TINY.replace("fixed: {embedding_dim: 16}", "fixed: {embedding_dim: 16, max_tokens: 500}"))
    with pytest.raises(ConfigError, match=r"tiny.yaml: fixed.max_tokens: a fixed max_tokens is set under `encoder`"):
        load_config(tiny_config)


def test_a_config_file_wins_over_the_shipped_config_of_its_name(tiny_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lama").write_text(tiny_config.read_text())
    assert load_config("lama").model == "scalable_attention" and load_config("lama").path == "lama"
    with pytest.raises(
        ConfigError,
        match=r"^lamma: no such tuner config \(a YAML file, or the name of one shipped with "
        r"keras-textattn: cspan, dual_axial, hcan, lama, scalable_attention\)$",
    ):
        load_config("lamma")


def test_the_wheel_ships_the_configs(tmp_path):
    """Installed from a wheel (no checkout), the package holds the configs and reads them by name."""
    root, source = CONFIGS.parent, tmp_path / "source"
    for package in ("keras_textattn", "keras_textattn_cli", "keras_textattn_config"):
        shutil.copytree(root / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.cfg", "README.md"):
        shutil.copy(root / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path / "wheel"),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    shipped = tmp_path / "site" / "keras_textattn" / "tuning" / "configs"
    assert {path.name: path.read_bytes() for path in shipped.iterdir()} == {
        path.name: path.read_bytes() for path in CONFIGS.glob("*.yaml")
    }
    run = subprocess.run(
        [sys.executable, "-c", "from keras_textattn.tuning import load_config; print(load_config('lama').path)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        timeout=300,
    )
    assert run.stdout.strip() == str(shipped / "lama.yaml"), run.stderr[-2000:]


def test_cli_reports_a_bad_config_in_one_line(tiny_config, tmp_path, capsys):
    tiny_config.write_text(TINY.replace("model: scalable_attention", "model: bert"))
    code = main(["tune", "--config", str(tiny_config), "--data", "x.csv", "--directory", str(tmp_path / "t")])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        (
            f"keras-textattn: error: {tiny_config}: model: unknown model 'bert'; allowed: bigru, cspan, dual_axial, "
            "hcan, "
            "kim_cnn, lama, scalable_attention, transformer"
        )
    ]
    assert not (tmp_path / "t").exists()


def test_texts_of_no_words_end_the_search_in_one_line(tiny_config, tmp_path, capsys):
    """No vocabulary to learn (blank texts) is one line and records nothing (it was TextEncoder's
    ValueError with a traceback)."""
    data = tmp_path / "blank.csv"
    data.write_text("label,text\n" + "pos,  \nneg,\n" * 20)
    assert main(["tune", "--config", str(tiny_config), "--data", str(data), "--directory", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "keras-textattn: error: TextEncoder.adapt: the texts hold no tokens (each is empty or blank); no vocabulary "
        "can be learned from them"
    ]
    assert not (tmp_path / "t").exists()


def test_a_range_the_model_refuses_is_one_line_before_any_trial(tiny_config, shared_data, tmp_path, capsys):
    """A range that reaches a value the model refuses (LAMA with 0 heads, only at the range's end)
    ends `tune` in one line before training, naming it, and records nothing: the mended config
    then starts a search in the same directory."""
    lama = (
        "model: lama\ntuner: {max_trials: 1, epochs: 1}\nencoder: {max_tokens: 500, sequence_length: 16}\n"
        "fixed: {embedding_dim: 8, gru_units: 4, mlp_units: 8}\n"
        "hyperparameters:\n  num_heads: {type: int, min: 0, max: 2, default: 2}\n"
    )
    tiny_config.write_text(lama)
    arguments = [
        "tune",
        "--config",
        str(tiny_config),
        "--data",
        str(shared_data / "trec" / "test.csv.gz"),
        "--directory",
        str(tmp_path / "search"),
    ]
    assert main(arguments) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"keras-textattn: error: {tiny_config}: lama cannot be built with embedding_dim 8 (fixed), gru_units 4 "
        "(fixed), "
        "mlp_units 8 (fixed), num_heads 0: LAMA: `num_heads` must be a positive integer. Received: num_heads=0 "
        "(narrow the config's ranges or fixed values)"
    ]
    assert not (tmp_path / "search").exists()
    tiny_config.write_text(lama.replace("min: 0", "min: 1"))
    assert main(arguments) == 0 and (tmp_path / "search" / "best" / "model.keras").exists()


def test_values_refused_only_together_end_the_search(tmp_path):
    """HCAN's heads must divide its width: 100 units with 4 heads and 128 with 8 build, so the
    ends pass; a trial that draws 100 with 8 stops the search (keras-tuner's FatalError, where
    another error would fail trials until three had) with a one-line `UserError`."""
    import keras_tuner

    from keras_textattn.errors import UserError
    from keras_textattn.tuning.search import TextAttentionHyperModel

    path = tmp_path / "hcan.yaml"
    path.write_text(
        "model: hcan\nencoder: {max_tokens: 100, sequence_length: 8, max_sentences: 2}\n"
        "hyperparameters:\n  units: {type: choice, values: [100, 128], default: 128}\n"
        "  num_heads: {type: choice, values: [4, 8], default: 4}\n"
    )
    config = load_config(path)
    encoder = TextEncoder(max_tokens=100, sequence_length=8, hierarchical=True, max_sentences=2)
    encoder.adapt(tf.data.Dataset.from_tensor_slices(["one two. three four."] * 4))
    hypermodel = TextAttentionHyperModel(config, 2, encoder)
    hypermodel.check_space()
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    hp.values.update(units=100, num_heads=8)
    with pytest.raises(keras_tuner.errors.FatalError) as refused:
        hypermodel.build(hp)
    assert isinstance(refused.value, UserError) and str(refused.value).startswith(
        f"{path}: hcan cannot be built with units 100, num_heads 8: ConvMultiheadSelfAttention: the model size d "
        "(units) must be divisible by num_heads. Received: d=100, num_heads=8"
    )


def test_a_trial_that_diverges_fails_and_is_never_the_best(tiny_config, tmp_path, capsys):
    """A trial whose loss turns NaN fails, saying why in one line (it was scored at chance, and
    its model of NaN weights was saved as the best when every trial had diverged); a search
    whose trials all diverge stops with one error, not keras-tuner's traceback."""
    data = tmp_path / "reviews.csv"
    data.write_text("text,label\n" + "a film worth seeing,pos\nnot worth the ticket,neg\n" * 64)
    searched = "hyperparameters:\n  learning_rate: {type: choice, values: [1.0e+37, 0.001], default: 0.001}\n"
    tiny_config.write_text(TINY.split("hyperparameters:")[0].replace("max_trials: 3", "max_trials: 2") + searched)
    rows = tune(tiny_config, str(data), tmp_path / "search")
    diverged = (
        r"training diverged in epoch 1: its loss is (nan|inf); a lower learning_rate \(this trial's: 1e\+37\) "
        r"trains stably"
    )
    assert re.search(f"^This trial failed: {diverged}$", capsys.readouterr().out, re.M)
    assert [row["learning_rate"] for row in rows] == [0.001]
    # The tables keep the failed trial, after the finished ones, with why and no score.
    with open(tmp_path / "search" / "trials.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert [(row["learning_rate"], row["score"] == "") for row in table] == [("0.001", False), ("1e+37", True)]
    assert table[0]["failed"] == "" and re.fullmatch(diverged, table[1]["failed"])
    assert re.search(
        rf"^\| \d \| 1e\+37 \|  \|  \|  \| {diverged} \|$", (tmp_path / "search" / "trials.md").read_text(), re.M
    )
    model, _, _ = load_run(tmp_path / "search" / "best")
    assert all(np.isfinite(weight).all() for weight in model.get_weights())
    tiny_config.write_text(
        TINY.replace("fixed: {embedding_dim: 16}", "fixed: {embedding_dim: 16, learning_rate: 1.0e+37}")
    )
    with pytest.raises(RunError) as stopped:
        tune(tiny_config, str(data), tmp_path / "diverging", verbose=0)
    assert re.fullmatch(
        f"the search in {re.escape(str(tmp_path / 'diverging'))} stopped: 3 trials in a row failed, "
        f"the last with: {diverged}",
        str(stopped.value),
    )
    assert not (tmp_path / "diverging" / "best").exists()
    # A search folder given where a run folder goes says where its best model is, or that it has none.
    with pytest.raises(
        RunError,
        match=f"^{re.escape(str(tmp_path / 'search'))} is a search folder \\(keras-textattn "
        f"tune\\); its best model is the run folder {re.escape(str(tmp_path / 'search' / 'best'))}$",
    ):
        load_run(tmp_path / "search")
    with pytest.raises(
        RunError,
        match="is a search folder .*; it holds no best model: the search has not finished, or no trial of it has$",
    ):
        load_run(tmp_path / "diverging")


def test_a_run_folder_or_an_unrecorded_search_is_not_a_search_directory(tiny_config, tmp_path):
    """A training run's folder given as --directory is refused before anything is written (the
    search read the run's encoder.keras, adapted with other settings, as its own, and mixed its
    files into the run's), as is a folder holding an encoder.keras that no search.json records."""
    data = tmp_path / "reviews.csv"
    data.write_text("text,label\n" + "a film worth seeing,pos\nnot worth the ticket,neg\n" * 8)
    run = tmp_path / "run"
    run.mkdir()
    for name in ("run.json", "model.keras", "encoder.keras", "labels.json", "metrics.json"):
        (run / name).write_text("{}")
    with pytest.raises(
        RunError,
        match=f"^{re.escape(str(run))} is a run folder \\(keras-textattn train\\): a search "
        "would read its encoder.keras as its own; give a new folder, or an earlier "
        "search's, as --directory$",
    ):
        tune(tiny_config, str(data), run, verbose=0)
    assert sorted(os.listdir(run)) == ["encoder.keras", "labels.json", "metrics.json", "model.keras", "run.json"]
    for name in ("run.json", "model.keras", "labels.json", "metrics.json"):
        (run / name).unlink()
    with pytest.raises(RunError, match="holds a search without a record of its config"):
        tune(tiny_config, str(data), run, verbose=0)
    assert os.listdir(run) == ["encoder.keras"]


def test_three_trials_table_and_best_model(tiny_config, shared_data, tmp_path, monkeypatch):
    from keras_textattn.training import model_setup

    monkeypatch.setattr(model_setup, "TRAINING_ROWS_SCORED", 1000)  # best/ scores a sample of the training split
    data = str(shared_data / "trec" / "train.csv.gz")
    rows = tune(tiny_config, data, tmp_path / "search", class_weight="balanced", verbose=0)  # TREC is imbalanced
    assert len(rows) == 3
    assert len({(r["hidden_units"], r["fc_units"]) for r in rows}) == 3  # distinct hyperparameters
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    assert all(r["epochs"] == 1 and r["seconds"] > 0 for r in rows)
    table = (tmp_path / "search" / "trials.csv").read_text().splitlines()
    assert table[0] == "trial,hidden_units,fc_units,score,epochs,seconds" and len(table) == 4
    assert (tmp_path / "search" / "trials.md").read_text().count("\n") == 5

    # The best model is a run folder; it reloads and scores what the table says on the same validation split.
    model, encoder, _ = load_run(tmp_path / "search" / "best")
    splits = load_labelled_data(data, validation_fraction=0.1, seed=0)[0]
    _, accuracy = model.evaluate(make_batches(splits["validation"], encoder, 64), verbose=0)
    np.testing.assert_allclose(accuracy, rows[0]["score"], rtol=1e-6)
    metrics = json.loads((tmp_path / "search" / "best" / "metrics.json").read_text())
    # The training split's score: every 5th of its rows (4,001 to 5,000 of them), as `train` reads it.
    count = splits["train"].reduce(0, lambda n, _: n + 1).numpy()
    _, accuracy = model.evaluate(make_batches(splits["train"].shard(5, 0), encoder, 64), verbose=0)
    assert 4000 < count <= 5000 and metrics["training_rows_scored"] == -(-count // 5)
    np.testing.assert_allclose(metrics["accuracy"]["train"], accuracy, rtol=1e-6)
    assert metrics["model_kwargs"]["hidden_units"] == json.loads(rows[0]["hidden_units"])
    # The whole model: searched, fixed (over the cpu preset's 64) and the preset's own sizes.
    assert metrics["preset"] == "cpu" and metrics["model_kwargs"]["embedding_dim"] == 16
    assert metrics["lr_schedule"] == "cosine"  # scalable attention's cpu preset trains with it, as `train` does
    assert model.get_layer("embedding").output_dim == 16
    # Its trials would mix with these (the paper preset also trains with a constant rate).
    with pytest.raises(RunError, match=r"holds a search of another config \(it differs in lr_schedule, preset\)"):
        tune(tiny_config, data, tmp_path / "search", preset="paper", verbose=0)
    weights = metrics["class_weight"]
    assert sorted(weights) == sorted(metrics["label_names"]) and max(weights.values()) > 2 * min(weights.values())
    # The best model starts a fine-tuning run (`train(init_from=...)`) with its searched sizes and encoder.
    tuned = train(
        data=str(shared_data / "sst2" / "dev.csv.gz"),
        output=str(tmp_path / "tuned"),
        init_from=str(tmp_path / "search" / "best"),
        epochs=1,
        verbose=0,
    )
    assert (tuned["model"], tuned["model_kwargs"], tuned["encoder"]) == (
        "scalable_attention",
        metrics["model_kwargs"],
        metrics["encoder"],
    )


def test_hyperband_continues_trials_and_says_which(tiny_config, shared_data, tmp_path, capsys, recwarn):
    """Hyperband trains trials for 1 to `epochs` epochs and continues the better ones from their
    weights (at 3 epochs, 6 trials): trials.md names the trial each continued and counts its model's
    epochs from the first (it counted only its own), and Keras's warning about the parent's optimizer
    state is not shown. `max_trials`, which keras-tuner's Hyperband has not, is refused (it was
    ignored: one trial at 1 epoch), and so is resuming the folder with another tuner (the trials mixed)."""
    data = str(shared_data / "trec" / "train.csv.gz")
    with pytest.raises(
        RunError,
        match=r"max_trials \(--max-trials\) is for the random and bayesian tuners; "
        r"hyperband's number of trials follows from epochs \(--epochs\)",
    ):
        tune(tiny_config, data, tmp_path / "search", tuner="hyperband", max_trials=4, verbose=0)
    rows = tune(tiny_config, data, tmp_path / "search", tuner="hyperband", epochs=3, verbose=1)
    assert "hyperband trains its trials for 1 to 3 epochs, the better ones continued" in capsys.readouterr().out
    assert not [str(w.message) for w in recwarn if "Skipping variable loading" in str(w.message)]
    assert len(rows) == 6
    by_id = {row["trial"]: row for row in rows}
    (continued,) = [row for row in rows if row["continues"]]  # the best of the second bracket's three 1-epoch trials
    parent = by_id[continued["continues"]]
    assert (parent["epochs"], continued["epochs"]) == (1, 3)
    assert (continued["hidden_units"], continued["fc_units"]) == (parent["hidden_units"], parent["fc_units"])
    assert sorted(row["epochs"] for row in rows if not row["continues"]) == [1, 1, 1, 3, 3]
    assert (tmp_path / "search" / "trials.csv").read_text().splitlines()[
        0
    ] == "trial,hidden_units,fc_units,score,epochs,seconds,continues"
    with pytest.raises(RunError, match="holds a hyperband search; resume it with --tuner hyperband"):
        tune(tiny_config, data, tmp_path / "search", tuner="random", verbose=0)


@pytest.mark.parametrize(
    "model, sizes, buckets",
    [
        ("scalable_attention", "embedding_dim: 16", None),
        ("dual_axial", "embedding_dim: 8, fc_units: 8", None),  # token and bigram ids
        ("hcan", "units: 8, num_heads: 2", 1000),  # (sentences, words) ids, chosen count, and bigram ids of that shape
    ],
)
def test_search_over_the_vocabulary(tiny_config, shared_data, tmp_path, recwarn, model, sizes, buckets):
    """`max_tokens` as a hyperparameter: the encoder is adapted once with the largest value, each trial
    reads the ids beyond its own vocabulary as OOV (a 3-token trial would fail on larger ids), and the
    best run folder carries the encoder cut to the best trial's vocabulary, scoring what the table says."""
    tiny_config.write_text(
        TINY.replace("max_tokens: 3000, ", "")
        .replace("model: scalable_attention", f"model: {model}")
        .replace("embedding_dim: 16", sizes)
        .replace(
            "  hidden_units: {type: choice, values: [[], [8], [16, 8]], default: []}\n"
            "  fc_units: {type: choice, values: [8, 16, 32], default: 16}\n",
            "  max_tokens: {type: choice, values: [3, 2000], default: 2000}\n",
        )
        .replace("max_trials: 3", "max_trials: 2")
        .replace("sequence_length: 24}", "sequence_length: 24" + (f", bigram_buckets: {buckets}}}" if buckets else "}"))
    )
    data = str(shared_data / "trec" / "train.csv.gz")
    rows = tune(tiny_config, data, tmp_path / "search", verbose=0)
    assert [row["max_tokens"] for row in rows] == [2000, 3]  # both ran; all words beat none
    assert not [w for w in recwarn if "shuffle" in str(w.message)]  # make_batches shuffles; Keras is not asked to
    assert rows[0]["score"] > rows[1]["score"]
    searched = keras.models.load_model(tmp_path / "search" / "encoder.keras").layers[-1]
    assert searched.vocabulary_size() == 2000

    model, encoder, _ = load_run(tmp_path / "search" / "best")
    assert encoder.vocabulary_size() == 2000 and encoder.get_vocabulary() == searched.get_vocabulary()
    if buckets:
        assert encoder.bigram_buckets == buckets and model.get_layer("bigram_embedding").input_dim == buckets + 1
    validation = load_labelled_data(data, validation_fraction=0.1, seed=0)[0]["validation"]
    _, accuracy = model.evaluate(make_batches(validation, encoder, 64), verbose=0)
    np.testing.assert_allclose(accuracy, rows[0]["score"], rtol=1e-6)
    metrics = json.loads((tmp_path / "search" / "best" / "metrics.json").read_text())
    assert metrics["hyperparameters"]["max_tokens"] == 2000 and "max_tokens" not in metrics["model_kwargs"]
    assert metrics["encoder"]["max_tokens"] == 2000


@pytest.mark.parametrize(
    "model, sizes", [("scalable_attention", "embedding_dim: 16"), ("dual_axial", "embedding_dim: 8, fc_units: 8")]
)  # token and bigram ids
def test_search_over_the_length(tiny_config, shared_data, tmp_path, model, sizes):
    """A flat model's `sequence_length` as a hyperparameter: the encoder is adapted and encodes once at
    the longest length, each trial reads its first columns, and the best run folder carries the encoder
    cut to the best trial's length, scoring what the table says. Before, every trial failed to build."""
    tiny_config.write_text(
        TINY.replace("max_tokens: 3000, sequence_length: 24", "max_tokens: 2000")
        .replace("model: scalable_attention", f"model: {model}")
        .replace("embedding_dim: 16", sizes)
        .replace(
            "  hidden_units: {type: choice, values: [[], [8], [16, 8]], default: []}\n"
            "  fc_units: {type: choice, values: [8, 16, 32], default: 16}\n",
            "  sequence_length: {type: choice, values: [1, 24], default: 1}\n",
        )
        .replace("max_trials: 3", "max_trials: 2")
    )
    data = str(shared_data / "trec" / "train.csv.gz")
    rows = tune(tiny_config, data, tmp_path / "search", verbose=0)
    # Both ran (a 1-token model given the 24 columns fails) and learned differently. Which wins is TREC's to
    # say: after one epoch a question's first word ("what", "who", "how") is most of its class.
    assert sorted(row["sequence_length"] for row in rows) == [1, 24] and rows[0]["score"] != rows[1]["score"]
    assert keras.models.load_model(tmp_path / "search" / "encoder.keras").layers[-1].sequence_length == 24

    best = rows[0]["sequence_length"]
    model, encoder, _ = load_run(tmp_path / "search" / "best")
    assert encoder.sequence_length == best and model.inputs[0].shape == (None, best)
    validation = load_labelled_data(data, validation_fraction=0.1, seed=0)[0]["validation"]
    _, accuracy = model.evaluate(make_batches(validation, encoder, 64), verbose=0)
    np.testing.assert_allclose(accuracy, rows[0]["score"], rtol=1e-6)
    metrics = json.loads((tmp_path / "search" / "best" / "metrics.json").read_text())
    assert metrics["hyperparameters"]["sequence_length"] == best and metrics["encoder"]["sequence_length"] == best


def test_hierarchical_shapes_are_not_searched(tmp_path):
    """HCAN's words per sentence, its sentence count and `hierarchical` decide the one encoder's ids."""
    base = "model: hcan\nencoder: {max_tokens: 100}\nhyperparameters:\n"
    for space, message in (
        (
            "  sequence_length: {type: choice, values: [4, 8], default: 8}\n",
            r"hyperparameters.sequence_length: hcan reads sentences here: its words per sentence are set under "
            r"`encoder` \(a search varies a flat model's sequence_length\)",
        ),
        (
            "  max_sentences: {type: choice, values: [2, 4], default: 2}\n",
            r"hyperparameters.max_sentences: max_sentences is set under `encoder`",
        ),
        (
            "  hierarchical: {type: boolean, default: true}\n",
            r"hyperparameters.hierarchical: hierarchical decides what the encoder gives \(sentences of words, or one "
            r"row of words\), which every trial reads: fix it under `fixed`",
        ),
    ):
        (tmp_path / "h.yaml").write_text(base + space)
        with pytest.raises(ConfigError, match=message):
            load_config(tmp_path / "h.yaml")
    (tmp_path / "h.yaml").write_text(
        base.replace("hyperparameters", "fixed: {hierarchical: false}\nhyperparameters")
        + "  sequence_length: {type: choice, values: [4, 8], default: 8}\n"
    )
    assert load_config(tmp_path / "h.yaml").hyperparameters["sequence_length"]["values"] == [
        4,
        8,
    ]  # flat HCAN: searched


def test_a_config_given_as_a_dict(tiny_config, shared_data, tmp_path):
    """A dict of a config's keys is checked as a file is (named "config" in the errors) and searches as
    the same YAML file does, without being changed; anything else is one clear error (it was os.fspath's
    TypeError)."""
    import yaml

    text = TINY.replace("max_trials: 3", "max_trials: 1")
    tiny_config.write_text(text)
    as_dict = yaml.safe_load(text)
    given = json.dumps(as_dict)
    data = str(shared_data / "trec" / "train.csv.gz")
    (from_dict,), (from_file,) = (
        tune(config, data, tmp_path / name, verbose=0) for config, name in ((as_dict, "dict"), (tiny_config, "file"))
    )
    assert {k: v for k, v in from_dict.items() if k != "seconds"} == pytest.approx(
        {k: v for k, v in from_file.items() if k != "seconds"}
    )
    assert json.dumps(as_dict) == given
    with pytest.raises(ConfigError, match=r"^config: hyperparameters.fc_units.default: 12 is not one of the choices"):
        load_config({**as_dict, "hyperparameters": {"fc_units": {"type": "choice", "values": [8, 16], "default": 12}}})
    with pytest.raises(
        ConfigError, match="a tuner config is a YAML file, the name of a shipped one or a dict of its keys; got int"
    ):
        tune(3, data, tmp_path / "none", verbose=0)


def test_a_search_on_streamed_jsonl_says_nothing_it_need_not(tiny_config, shared_data, tmp_path, recwarn):
    """A JSONL training file is streamed (rows counted first): neither Keras's "ran out of data"
    (the batches' length was known and not passed on) nor the best trial's optimizer-state notice."""
    tiny_config.write_text(TINY.replace("max_trials: 3", "max_trials: 1"))
    rows = _trec_rows(shared_data)
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    tune(tiny_config, str(tmp_path / "train.jsonl"), tmp_path / "search", verbose=0)
    said = [str(w.message) for w in recwarn]
    assert not [m for m in said if "ran out of data" in m or "Skipping variable loading" in m], said
    metrics = json.loads((tmp_path / "search" / "best" / "metrics.json").read_text())
    assert sorted(metrics["accuracy"]) == ["train", "validation"] and metrics["accuracy"]["validation"] > 0.3


def test_killed_search_resumes_without_repeating_finished_trials(tiny_config, shared_data, tmp_path, capsys):
    """Killed after its first trial, and (as a kill in keras-tuner's in-place writes leaves it) with
    its state file cut short: the rerun resumes from the first trial's state."""
    directory = tmp_path / "search"
    command = _cli(
        "tune",
        "--config",
        tiny_config,
        "--data",
        shared_data / "trec" / "train.csv.gz",
        "--directory",
        directory,
        "--quiet",
    )
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    project = directory / "scalable_attention"
    first = project / "trial_0" / "trial.json"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (project / "oracle.json.good").exists():
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished_before = json.loads(first.read_text())
    (project / "oracle.json").write_text('{"ongoing_tri')

    capsys.readouterr()
    assert main(command[3:]) == 0, capsys.readouterr().err[-2000:]  # the same command, in this process
    assert "Reloading Tuner" in "".join(capsys.readouterr())
    assert json.loads(first.read_text()) == finished_before  # not run again (its seconds and score kept)
    assert len((directory / "trials.csv").read_text().splitlines()) == 4  # 3 trials in all


def test_a_full_disk_ends_the_search_in_one_line_and_the_same_command_resumes(
    tiny_config, shared_data, small_disk, capsys
):
    """A trial's checkpoint that does not fit ends the search (exit 2, one line saying where and
    what next), where keras-tuner failed every trial in turn and HDF5's half-written file made
    Python segfault as it exited; with room again, the same command finishes the search."""
    disk, remount = small_disk
    command = _cli(
        "tune",
        "--config",
        tiny_config,
        "--data",
        shared_data / "trec" / "train.csv.gz",
        "--directory",
        disk / "search",
        "--quiet",
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        "keras-textattn: error: no space left on the device that holds "
        f"{disk / 'search' / 'scalable_attention' / 'trial_0'}"
        ": free some space there, then run the same command again: the search resumes"
    )
    remount("size=8m")
    assert main(command[3:]) == 0, capsys.readouterr().err[-2000:]  # the same command, in this process
    assert len((disk / "search" / "trials.csv").read_text().splitlines()) == 4  # 3 trials in all


def test_a_used_up_disk_quota_ends_the_search_in_one_line(tiny_config, shared_data, tmp_path, capsys, used_up_quota):
    """EDQUOT (a disk quota used up, although the disk has room) ends the search as a full disk
    does, where keras-tuner would fail every trial in turn."""
    command = _cli(
        "tune",
        "--config",
        tiny_config,
        "--data",
        shared_data / "trec" / "train.csv.gz",
        "--directory",
        tmp_path / "search",
        "--quiet",
    )
    assert main(command[3:]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "keras-textattn: error: your disk quota is used up on the device that holds "
        f"{tmp_path / 'search' / 'scalable_attention' / 'trial_0'}: free some of your space there, then run the same "
        "command again: the search resumes"
    )


def test_the_oracles_good_copy_is_written_last(tmp_path, monkeypatch):
    """oracle.json.good, by which a rerun knows a trial finished, is copied after the tuner's state
    file: a kill between the two copies (the oracle's was first) left a search whose rerun did not
    reload the oracle and repeated the finished trials (keras-tuner reloads only with the tuner's)."""
    from keras_textattn.tuning import search

    for name in ("oracle.json", "tuner0.json"):
        (tmp_path / name).write_text("{}")
    copied = []
    monkeypatch.setattr(search, "write_text", lambda path, text: copied.append(os.path.basename(path)))
    search._keep_good_state(str(tmp_path))
    assert copied == ["tuner0.json.good", "oracle.json.good"]


def _free_port():
    with socket.socket() as handle:
        handle.bind(("127.0.0.1", 0))
        return handle.getsockname()[1]


def test_chief_and_worker_finish_a_search_together(tiny_config, shared_data, tmp_path):
    """keras-tuner's distributed mode: the chief serves the oracle, a worker trains."""
    tiny_config.write_text(TINY.replace("max_trials: 3", "max_trials: 2"))
    port = str(_free_port())
    command = _cli(
        "tune",
        "--config",
        tiny_config,
        "--data",
        shared_data / "trec" / "train.csv.gz",
        "--directory",
        tmp_path / "search",
        "--quiet",
    )
    processes = {}
    for tuner_id in ("chief", "tuner0"):
        env = {
            **os.environ,
            "KERASTUNER_TUNER_ID": tuner_id,
            "KERASTUNER_ORACLE_IP": "127.0.0.1",
            "KERASTUNER_ORACLE_PORT": port,
        }
        processes[tuner_id] = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        time.sleep(2 if tuner_id == "chief" else 0)
    try:
        outputs = {name: p.communicate(timeout=300)[0] for name, p in processes.items()}
    finally:
        for p in processes.values():
            p.kill()
    assert processes["tuner0"].returncode == 0, outputs["tuner0"][-2000:]
    assert processes["chief"].returncode == 0, outputs["chief"][-2000:]
    assert "Finished 2 trials" in outputs["chief"]
    assert len((tmp_path / "search" / "trials.csv").read_text().splitlines()) == 3
    assert load_run(tmp_path / "search" / "best")[0].count_params() > 0
    keras.backend.clear_session()


def _random_vectors_file(path, texts, dimension, seed=0):
    """A gzip word2vec text file of random vectors for two thirds of the 1,500 most frequent
    lower-case words of `texts` (split at anything but letters); returns {word: vector}."""
    import collections
    import gzip
    import re

    counts = collections.Counter(word for text in texts for word in re.findall(r"[a-z]+", text.lower()))
    words = [word for index, (word, _) in enumerate(counts.most_common(1500)) if index % 3]
    vectors = dict(zip(words, np.random.default_rng(seed).normal(0, 1, (len(words), dimension)).astype("float32")))
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(f"{len(words)} {dimension}\n")
        handle.writelines(f"{word} {' '.join(f'{x:.6f}' for x in vector)}\n" for word, vector in vectors.items())
    return {word: np.round(vector, 6) for word, vector in vectors.items()}


def test_search_from_a_vectors_file_frozen(tiny_config, shared_data, tmp_path):
    """`tune --embeddings FILE --freeze-embeddings` with the vocabulary searched: every trial starts
    from the file's vectors for its own vocabulary, frozen, so the best model's rows are the file's
    vectors rescaled to a standard deviation of 0.05 (measured over the searched vocabulary's
    vectors, as `train` does); the coverage recorded is the best vocabulary's. The embedding file
    is made once: a rerun reuses it; a rerun without the vectors is another search, refused."""
    vectors = _random_vectors_file(tmp_path / "vectors.txt.gz", [row["text"] for row in _trec_rows(shared_data)], 16)
    tiny_config.write_text(
        TINY.replace("max_tokens: 3000, ", "")
        .replace("max_trials: 3", "max_trials: 2")
        .replace(
            "  hidden_units: {type: choice, values: [[], [8], [16, 8]], default: []}\n"
            "  fc_units: {type: choice, values: [8, 16, 32], default: 16}\n",
            "  max_tokens: {type: choice, values: [300, 2000], default: 2000}\n",
        )
    )
    directory = tmp_path / "search"
    command = [
        "tune",
        "--config",
        tiny_config,
        "--data",
        shared_data / "trec" / "train.csv.gz",
        "--directory",
        directory,
        "--embeddings",
        tmp_path / "vectors.txt.gz",
        "--freeze-embeddings",
        "--quiet",
    ]
    assert main(list(map(str, command))) == 0

    model, encoder, _ = load_run(directory / "best")
    metrics = json.loads((directory / "best" / "metrics.json").read_text())
    words = encoder.get_vocabulary()[2:]  # padding and OOV first
    full = keras.models.load_model(directory / "encoder.keras").layers[-1].get_vocabulary()[2:]
    assert metrics["embeddings"] == {
        "source": str(tmp_path / "vectors.txt.gz"),
        "dimension": 16,
        "frozen": True,
        "coverage": pytest.approx(np.mean([w in vectors for w in words])),
        "words_added": 0,
    }
    assert 0.3 < metrics["embeddings"]["coverage"] < 0.9
    scale = 0.05 / np.std([vectors[w] for w in full if w in vectors])
    rows = model.get_layer("embedding").get_weights()[0]
    assert rows.shape == (len(words) + 2, 16)
    covered = [i for i, w in enumerate(words, start=2) if w in vectors]
    np.testing.assert_allclose(
        rows[covered], [vectors[w] * scale for w in np.array(words)[np.array(covered) - 2]], atol=1e-6
    )

    made = (directory / "embeddings-16.npz").stat().st_mtime_ns
    assert main(list(map(str, command))) == 0
    assert (directory / "embeddings-16.npz").stat().st_mtime_ns == made
    with pytest.raises(RunError, match="search of another config .*differs in embeddings"):
        tune(tiny_config, str(shared_data / "trec" / "train.csv.gz"), directory, verbose=0)


def test_search_from_packaged_glove(tiny_config, shared_data, glove_package, tmp_path):
    """`tune --embeddings glove-6b-50d`: the name is kept as the source (not read as a path), and a
    config whose embedding is not 50-d is refused before any data is read. With `--vectors-vocabulary`
    the one encoder gets GloVe's words that TREC's questions lack, and so does the best run folder."""
    command = [
        "tune",
        "--config",
        tiny_config,
        "--data",
        shared_data / "trec" / "train.csv.gz",
        "--directory",
        tmp_path / "search",
        "--embeddings",
        "glove-6b-50d",
        "--vectors-vocabulary",
        "5000",
        "--quiet",
    ]
    with pytest.raises(
        RunError, match="glove-6b-50d has 50-dimensional vectors; the scalable_attention embedding has 16"
    ):
        tune(tiny_config, str(shared_data / "trec" / "train.csv.gz"), tmp_path / "refused", embeddings="glove-6b-50d")
    tiny_config.write_text(
        TINY.replace("max_tokens: 3000, ", "").replace("embedding_dim: 16", "embedding_dim: 50")
        + "  max_tokens: {type: choice, values: [3, 2000], default: 2000}\n"
    )
    with pytest.raises(
        RunError,
        match="hyperparameters.max_tokens: a search over the vocabulary cuts it, which would cut "
        "the words that --vectors-vocabulary adds",
    ):
        tune(
            tiny_config,
            str(shared_data / "trec" / "train.csv.gz"),
            tmp_path / "refused",
            embeddings="glove-6b-50d",
            vectors_vocabulary=10,
        )
    tiny_config.write_text(
        TINY.replace("max_trials: 3", "max_trials: 1").replace("embedding_dim: 16", "embedding_dim: 50")
    )
    assert main(list(map(str, command))) == 0
    metrics = json.loads((tmp_path / "search" / "best" / "metrics.json").read_text())
    assert metrics["embeddings"]["source"] == "glove-6b-50d" and metrics["embeddings"]["coverage"] > 0.9
    _, encoder, _ = load_run(tmp_path / "search" / "best")
    assert metrics["embeddings"]["words_added"] == encoder.added_tokens > 1000
    assert encoder.get_vocabulary() == load_encoder(tmp_path / "search" / "encoder.keras").get_vocabulary()


def test_search_word2vec_sizes_and_whether_to_freeze(tiny_config, shared_data, tmp_path):
    """`embeddings="word2vec"` with the embedding size and `freeze_embeddings` searched: word2vec
    is trained once per size, every combination is tried (the table has the columns),
    metrics.json says which the best model has, and its embedding still points where its
    size's word2vec vectors did (a random start would not: cosine ~0)."""
    tiny_config.write_text(
        TINY.replace("max_trials: 3", "max_trials: 4")
        .replace("fixed: {embedding_dim: 16}", "fixed: {}")
        .replace(
            "  hidden_units: {type: choice, values: [[], [8], [16, 8]], default: []}\n"
            "  fc_units: {type: choice, values: [8, 16, 32], default: 16}\n",
            "  embedding_dim: {type: choice, values: [8, 16], default: 16}\n"
            "  freeze_embeddings: {type: boolean, default: false}\n",
        )
    )
    rows = tune(
        tiny_config, str(shared_data / "trec" / "train.csv.gz"), tmp_path / "search", embeddings="word2vec", verbose=0
    )
    assert sorted((row["embedding_dim"], row["freeze_embeddings"]) for row in rows) == [
        (8, False),
        (8, True),
        (16, False),
        (16, True),
    ]
    best = rows[0]
    metrics = json.loads((tmp_path / "search" / "best" / "metrics.json").read_text())
    assert metrics["embeddings"]["source"] == "word2vec" and 0.2 < metrics["embeddings"]["coverage"] < 1
    assert (metrics["embeddings"]["dimension"], metrics["embeddings"]["frozen"]) == (
        best["embedding_dim"],
        best["freeze_embeddings"],
    )
    starts = {}
    for size in (8, 16):
        with np.load(tmp_path / "search" / f"embeddings-{size}.npz") as stored:
            starts[size] = stored["rows"], stored["covered"]
    assert starts[8][0].shape[1] == 8 and np.array_equal(starts[8][1], starts[16][1])  # min count 5 for both
    start, covered = starts[best["embedding_dim"]]
    trained = load_run(tmp_path / "search" / "best")[0].get_layer("embedding").get_weights()[0]
    start, trained = start[covered], trained[covered]  # the rows of words without a vector may be zeros
    cosine = np.sum(start * trained, axis=1) / np.linalg.norm(start, axis=1) / np.linalg.norm(trained, axis=1)
    assert np.median(cosine) > (0.999 if best["freeze_embeddings"] else 0.5)


@pytest.mark.parametrize(
    "change, options, message",
    [
        (
            "",
            {"embeddings": "nowhere.vec"},
            r"must be 'random', 'word2vec', 'glove-6b-50d' or a vectors file; 'nowhere.vec' is none of them",
        ),
        (
            "",
            {"embeddings": "{vectors}"},
            r"vectors.txt has 8-dimensional vectors; the scalable_attention embedding has "
            r"16 \(set it to match in .*tiny.yaml: fixed: \{embedding_dim: 8\}\)",
        ),
        (
            "  embedding_dim: {type: choice, values: [8, 16], default: 8}\n",
            {"embeddings": "{vectors}"},
            r"tiny.yaml: hyperparameters.embedding_dim: the embedding size cannot be searched with a vectors file "
            r"\(--embeddings .*vectors.txt\), whose vectors have one size",
        ),
        (
            "  freeze_embeddings: {type: boolean, default: false}\n",
            {},
            r"tiny.yaml: hyperparameters.freeze_embeddings: there is nothing to freeze without embeddings",
        ),
        (
            "  freeze_embeddings: {type: boolean, default: false}\n",
            {"embeddings": "word2vec", "freeze_embeddings": True},
            r"freeze_embeddings \(--freeze-embeddings\) fixes what .*tiny.yaml searches .*; give one of them",
        ),
        (
            "  freeze_embeddings: {type: choice, values: [0, 1], default: 0}\n",
            {"embeddings": "word2vec"},
            r"tiny.yaml: hyperparameters.freeze_embeddings.type: freeze_embeddings is searched as boolean, not choice",
        ),
        (
            "",
            {"embeddings": "word2vec", "vectors_vocabulary": 10},
            r"adds words of pretrained vectors to the vocabulary",
        ),
    ],
)
def test_embeddings_a_search_cannot_use_are_refused_before_reading_data(
    tiny_config, tmp_path, change, options, message
):
    (tmp_path / "vectors.txt").write_text("the " + " ".join(["0.5"] * 8) + "\n")
    tiny_config.write_text(
        TINY.replace(
            "fixed: {embedding_dim: 16}", "fixed: {}" if "embedding_dim" in change else "fixed: {embedding_dim: 16}"
        )
        + change
    )
    options = {k: v.format(vectors=tmp_path / "vectors.txt") if isinstance(v, str) else v for k, v in options.items()}
    with pytest.raises((RunError, ConfigError), match=message):
        tune(tiny_config, str(tmp_path / "no_such_data.csv"), tmp_path / "search", verbose=0, **options)
    assert not (tmp_path / "search").exists()


def test_a_search_without_a_directory_or_with_an_unknown_option_is_one_error(tiny_config, tmp_path, monkeypatch):
    """'' or None as the directory, and a misspelt data option, are named before any data is read
    (were FileNotFoundError '', a TypeError of stat, and load_labelled_data()'s TypeError)."""
    monkeypatch.chdir(tmp_path)
    for directory in ("", None):
        with pytest.raises(
            ValueError, match=re.escape(f"directory (--directory) must be a path to write to; got {directory!r}")
        ):
            tune(tiny_config, "no_such_data.csv", directory, verbose=0)
    with pytest.raises(
        RunError, match=r"^tune\(\) takes no sequence_lenght; its data options are data_dir, delimiter, "
    ):
        tune(tiny_config, "no_such_data.csv", tmp_path / "search", verbose=0, sequence_lenght=8)
    assert os.listdir(tmp_path) == ["tiny.yaml"]


def test_fixed_frozen_embeddings_are_a_flag_not_a_config_entry(tiny_config):
    tiny_config.write_text(
        TINY.replace("fixed: {embedding_dim: 16}", "fixed: {embedding_dim: 16, freeze_embeddings: true}")
    )
    with pytest.raises(
        ConfigError,
        match=r"fixed.freeze_embeddings: fixed frozen embeddings are asked for with "
        r"--freeze-embeddings",
    ):
        load_config(tiny_config)
