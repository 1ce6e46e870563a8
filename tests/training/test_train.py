"""The training command: bad input, resuming a killed run, tf.distribute (real processes)."""

import csv
import dataclasses
import gzip
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text

import keras_textattn
from keras_textattn_cli import main

# A small, fast configuration: the point here is the machinery, not accuracy.
SMALL_SCALABLE = [
    "--model",
    "scalable_attention",
    "--set",
    "embedding_dim=16",
    "--set",
    "fc_units=16",
    "--sequence-length",
    "24",
    "--max-tokens",
    "3000",
    "--quiet",
]
TIMEOUT = 240


def _command(*args):
    return [sys.executable, "-m", "keras_textattn_cli", "train", *args]


def _run(args, env=None, timeout=TIMEOUT):
    return subprocess.run(_command(*args), capture_output=True, text=True, timeout=timeout, env=env)


def _run_here(args, capsys):
    """`keras-textattn train ARGS` in this process (no TensorFlow import of its own): its exit
    status and what it wrote on stderr. For runs that need no process of their own: not one to
    kill, nor one whose CPU is split into devices."""
    status = main(["train", *args])
    return status, capsys.readouterr().err


def _metrics(folder):
    with open(os.path.join(folder, "metrics.json")) as handle:
        return json.load(handle)


def _assert_tensorboard_draws_the_history(folder, history=None):
    """TensorBoard, reading `folder/logs` with its own reader, draws one point an epoch for each column
    of the history (the run's, in metrics.json, unless given), each the epoch's value: the losses, the
    accuracies, the learning rate and the seconds."""
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer
    from tensorboard.util.tensor_util import make_ndarray

    logs = EventMultiplexer().AddRunsFromDirectory(os.path.join(folder, "logs"))
    logs.Reload()
    history = history or _metrics(folder)["history"]
    assert "learning_rate" in history and "loss" in history
    for column in set(history) - {"epoch"}:
        run = "validation" if column.startswith("val_") else "train"
        points = logs.Tensors(run, "epoch_" + column.removeprefix("val_"))
        assert [point.step for point in points] == list(range(len(history[column]))), (run, column)
        values = [float(make_ndarray(point.tensor_proto)) for point in points]
        assert values == pytest.approx(history[column]), column


@pytest.fixture
def sst2(shared_data):
    return [
        "--data",
        str(shared_data / "sst2" / "train.csv.gz"),
        "--test-data",
        str(shared_data / "sst2" / "test.csv.gz"),
    ]


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--model", "gpt"], "unknown model 'gpt' (--model); choose one of bigru, cspan, dual_axial"),
        (["--data", "no/such/file.csv"], "Data file not found: 'no/such/file.csv'"),
        (["--label-column", "sentiment"], "no column 'sentiment'"),
        (["--distribute", "multi-worker"], "--distribute multi-worker needs TF_CONFIG"),
        (
            ["--set", "num_head=4"],
            "model_kwargs (--set) num_head: not an argument of the lama builder that a run sets; "
            "it takes: embedding_dim, gru_units, num_heads,",
        ),
        # Those the encoder gives the builder (a TypeError "got multiple values for keyword argument", or for bigram
        # buckets a model whose inputs the encoder does not give, failing inside Keras).
        (
            ["--set", "sequence_length=8"],
            "model_kwargs (--set) sequence_length: the encoder gives the model its "
            "sequence_length; give sequence_length (--sequence-length) instead",
        ),
        (
            ["--set", "bigram_buckets=100"],
            "model_kwargs (--set) bigram_buckets: the encoder gives the model its "
            "bigram_buckets; give bigram_buckets (--bigram-buckets) instead",
        ),
        (["--set", "vocabulary_size=50"], "give max_tokens (--max-tokens) instead"),
        (["--set", "encoder=1"], "model_kwargs (--set) encoder: not an argument of the lama builder that a run sets"),
        (["--set", "regularization=l2"], "lama cannot be built with {'regularization': 'l2'}"),
        # A string was read as true: "False" trained LAMA+ctx.
        # dual-axial's feature-axial weights are length x length (360 GB here): TensorFlow's OOM traceback before.
        (
            ["--model", "dual_axial", "--sequence-length", "300000"],
            "dual_axial ran out of memory (OOM when allocating tensor with shape[300000,300000]",
        ),
        (
            ["--set", "use_context=False"],
            "model_kwargs (--set) use_context must be True or False (--set "
            "use_context=true or use_context=false); got 'False'",
        ),
        (["--max-sentences", "3"], "max_sentences (--max-sentences) is for hierarchical models; lama reads flat texts"),
        (
            ["--split-long-sentences"],
            "split_long_sentences (--split-long-sentences) is for hierarchical models; lama reads flat texts",
        ),
        (["--model", "hcan", "--bigram-buckets", "-1"], "bigram-buckets must be a whole number >= 0; got -1"),
        (["--bigrams-of", "tokens"], "bigrams_of (--bigrams-of) is for a run with bigrams; lama has none here"),
        (
            ["--embeddings", "no/such.vec"],
            "embeddings (--embeddings) must be 'random', 'word2vec', 'glove-6b-50d' or a vectors "
            "file; 'no/such.vec' is none of them",
        ),
        (["--freeze-embeddings"], "freeze_embeddings (--freeze-embeddings) needs embeddings (--embeddings)"),
        (["--lr-schedule", "step:25,20"], "unknown learning-rate schedule 'step:25,20' (--lr-schedule)"),
        (["--clip-norm", "0"], "clip-norm must be a positive number; got 0"),
        (
            ["--adversarial", "0"],
            "adversarial epsilon must be a number in (0, 1] (a length relative to the "
            "embeddings'); got 0.0 (--adversarial)",
        ),
        (["--weight-decay", "1.5"], "weight-decay must be a number in [0, 1); got 1.5"),
        (["--label-smoothing", "1"], "label_smoothing must be a number in [0, 1); got 1.0 (--label-smoothing)"),
        (["--learning-rate", "-1"], "learning-rate must be a positive number; got -1.0"),
        (["--learning-rate", "nan"], "learning-rate must be a positive number; got nan"),  # it trained a model of nans
        (["--seed", "-1"], "seed must be a whole number from 0 to 4294967295; got -1"),  # was NumPy's traceback
        # TFDS names with a config or a version are names, not missing files.
        (
            ["--data", "no_such_dataset/config:1.0.0"],
            "Unknown dataset 'no_such_dataset/config:1.0.0': not a TFDS dataset",
        ),
        (
            ["--data", "imdb_reviews", "--validation-data", "dev.csv"],
            "a validation file (--validation-data) goes with a local training file; 'imdb_reviews' is a TFDS name",
        ),
        (["--distribute", "ray"], "--distribute ray takes --workers N (N >= 1)"),
        (["--workers", "2"], "--workers only goes with it; got distribute 'none', workers 2"),
        (["--skip-bad-rows"], "skip_bad_rows (--skip-bad-rows) is for streamed data"),
        (["--data", "no/such/train-*.csv"], "No data files found at 'no/such/train-*.csv'"),
        (["--adapt-rows", "0"], "adapt-rows must be a positive number; got 0"),
        (
            ["--data-dir", "tfds"],
            "`data_dir` (--data-dir) is where TFDS keeps its datasets; the data here are local "
            "files. Received: data_dir='tfds'",
        ),  # ignored before
        # Ignored before: the run trained without early stopping, or on the validation file alone.
        (
            ["--early-stopping-monitor", "accuracy"],
            "early_stopping_monitor (--early-stopping-monitor) is what early "
            "stopping watches; give its patience too (--early-stopping N)",
        ),
        (
            ["--validation-data", "dev.csv", "--validation-fraction", "0.3"],
            "validation_fraction (--validation-fraction) is the share of the training rows held out when there is no "
            "validation file; got 0.3 with one (--validation-data)",
        ),
    ],
)
def test_bad_arguments_exit_2_with_one_line(shared_data, tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    args = [
        "train",
        "--model",
        "lama",
        "--data",
        str(shared_data / "sst2" / "dev.csv.gz"),
        "--output",
        str(tmp_path / "run"),
    ]
    code = main(args + extra)
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(error) == 1 and error[0].startswith("keras-textattn: error:") and message in error[0]


@pytest.mark.parametrize(
    "extra, refused, per_unit",
    [
        # The command: it segfaulted inside fit (rc 139) and left run.json, a lock and a folder
        # that refused the corrected command.
        (["--sequence-length", "1000000000"], "--sequence-length: a batch of 32 rows of 1,000,000,000 tokens", 32 * 80),
        (["--batch-size", "1000000000000"], "--batch-size: a batch of 1,000,000,000,000 rows of 8 tokens", None),
        (["--max-tokens", "1000000000000"], "an embedding table of 1,000,000,000,000 tokens", 16 * 12),
    ],
    ids=["length", "batch", "vocabulary"],
)
def test_sizes_that_cannot_fit_in_memory_are_refused_before_anything_is_written(
    shared_data, tmp_path, capsys, extra, refused, per_unit
):
    """One line saying the largest that fits, before the data is read or the folder made."""
    args = [
        "train",
        "--model",
        "lama",
        "--epochs",
        "1",
        "--set",
        "embedding_dim=16",
        "--data",
        str(shared_data / "sst2" / "dev.csv.gz"),
        "--output",
        str(tmp_path / "runs" / "a"),
        *extra,
    ]
    assert main(args) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"keras-textattn: error: {refused}") and "more than this machine's" in line
    assert not (tmp_path / "runs").exists()
    if per_unit:  # the largest said fits, and one more does not
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        largest = int(re.search(r"at most ([\d,]+) (?:tokens|rows) fit", line)[1].replace(",", ""))
        assert largest * per_unit <= memory < (largest + 1) * per_unit


def test_out_of_memory_in_a_traced_step_names_the_allocation():
    """Inside a traced training step TensorFlow's message starts "Graph execution error:" and names the
    allocation lines later (this one is HCAN's at 40,000 words a sentence, which takes 52 s and 12 GB
    to reach: too much for the suite; the building case runs above, dual-axial at 300,000 tokens)."""
    from keras_textattn.run_folder import RunError
    from keras_textattn.training.run_state import out_of_memory_said as _out_of_memory_said

    message = (
        "Graph execution error:\n\nDetected at node StatefulPartitionedCall/hcan_1/word_self_attention_1/"
        "elu_branch_1/MatMul defined at (most recent call last):\n<stack traces unavailable>\nOOM when "
        "allocating tensor with shape[81,4,40000,40000] and type float on /job:localhost/replica:0/task:0/"
        "device:CPU:0 by allocator mklcpu\n\t [[{{node StatefulPartitionedCall/hcan_1/MatMul}}]]\n"
        " [Op:__inference_multi_step_on_iterator_14140]"
    )
    with pytest.raises(
        RunError,
        match=re.escape(
            "hcan ran out of memory (OOM when allocating tensor with shape"
            "[81,4,40000,40000] and type float on /job:localhost/replica:0/"
            "task:0/device:CPU:0 by allocator mklcpu); a shorter sequence "
            "length (--sequence-length; HCAN: --max-sentences too), a smaller "
            "--batch-size, or smaller weights (--set embedding_dim=..., "
            "--max-tokens) need less"
        ),
    ):
        with _out_of_memory_said("hcan"):
            raise tf.errors.ResourceExhaustedError(None, None, message)


@pytest.mark.parametrize(
    "argument, value, wanted",
    [
        ("epochs", 1.5, "a whole number"),
        ("sequence_length", 16.0, "a whole number"),
        ("early_stopping", 2.0, "a whole number"),
        ("batch_size", "32", "a positive number"),
        ("max_tokens", True, "a positive number"),
    ],
)
def test_python_counts_are_whole_numbers(tmp_path, argument, value, wanted):
    """Each count named as the command line names it, with the value given (the epochs' message
    named the batch size too; a float length reached the encoder's own check)."""
    from keras_textattn.run_folder import RunError
    from keras_textattn.training import train

    with pytest.raises(RunError, match=f"^{argument.replace('_', '-')} must be {wanted}; got {value!r}$"):
        train("lama", str(tmp_path / "none.csv"), str(tmp_path / "run"), **{argument: value})
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"output": ""}, "output (--output) must be a path to write to; got ''"),  # FileNotFoundError
        ({"output": None}, "output (--output) must be a path to write to; got None"),
        (
            {"model_kwargs": [("num_heads", 4)]},
            "model_kwargs (--set) must be a dict of builder argument to value "
            "(e.g. {'num_heads': 4}); got [('num_heads', 4)]",
        ),  # dict() accepted it
        ({"model_kwargs": "num_heads=4"}, "model_kwargs (--set) must be a dict"),  # a TypeError from dict()
        ({"init_from": 3}, "init_from (--init-from) must be the path of a run folder; got 3"),  # a TypeError
        ({"validation_fraction": "0.1"}, "`validation_fraction` must be in (0, 1). Received: '0.1'"),  # a TypeError
        (
            {"embeddings": 3},
            "embeddings (--embeddings) must be 'random', 'word2vec', 'glove-6b-50d' or a vectors file; 3 is none "
            "of them",
        ),  # a TypeError
        ({"verbose": "x"}, "verbose must be 0 (silent), 1 (progress bars), 2 (a line an epoch) or 'auto'; got 'x'"),
    ],
)
def test_python_output_and_model_kwargs_are_checked(tmp_path, monkeypatch, arguments, message):
    from keras_textattn.errors import UserError
    from keras_textattn.training import train

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=re.escape(message)):
        train("lama", str(tmp_path / "none.csv"), **{"output": str(tmp_path / "run"), **arguments})
    assert os.listdir(tmp_path) == []


def test_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert exit_.value.code == 0
    for default in (
        "the most, with early stopping (default: 3; --preset fast from 20,000 training rows: 1; multi-label "
        "data: 20, with early stopping, patience 2)",
        "global batch size (default: with --preset paper the paper's, else 32; with --preset cpu or fast the "
        "largest of 32, 64, 128, 256 that gives an epoch of 100 steps or more)",
        "else 1e-3 (adam) or 0.01 (sgd); where --preset cpu or fast chose a batch size B, times sqrt(B / 32) "
        "(adam) or B / 32 (sgd)",
        "fast (the cpu preset, and from 20,000 training rows on, where not given: epochs 1, lr_schedule cosine, "
        "bigram_buckets 200000)",
        "(default: cpu)",
    ):
        assert default in shown, default


def test_help_and_argument_errors_answer_without_tensorflow():
    """`--help` and a bad argument answer before TensorFlow is imported (it takes seconds and
    prints C++ log lines); a command that runs prints none of those lines unless --verbose."""
    probe = (
        "import sys\nfrom keras_textattn_cli import main\n"
        "for argv in (['train', '--help'], ['predict', '--top-k', 'x'], ['--version']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('imported:', 'tensorflow' in sys.modules, 'keras' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "imported: False False" in result.stdout and "invalid int value: 'x'" in result.stderr
    # --version from the installed packages' metadata: the versions that import.
    versions = (
        f"keras-textattn {keras_textattn.__version__} (keras {keras.__version__}, tensorflow {tf.__version__}, "
        f"tensorflow-text {tensorflow_text.__version__})"
    )
    assert versions in result.stdout.splitlines(), result.stdout[-2000:]
    quiet = subprocess.run(
        [sys.executable, "-m", "keras_textattn_cli", "predict", "--run", "no/such/run", "text"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quiet.returncode == 2 and quiet.stderr.strip().splitlines() == [
        "keras-textattn: error: no/such/run is neither a run folder nor an exported SavedModel, TFLite or ONNX folder"
    ]
    # A KERAS_BACKEND set for one's own JAX work: the command line says it runs on TensorFlow, and runs.
    other = subprocess.run(
        [sys.executable, "-m", "keras_textattn_cli", "predict", "--run", "no/such/run", "text"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KERAS_BACKEND": "jax"},
    )
    assert other.returncode == 2 and other.stderr.strip().splitlines() == [
        "keras-textattn: note: the command line runs on TensorFlow; KERAS_BACKEND=jax is not used here",
        "keras-textattn: error: no/such/run is neither a run folder nor an exported SavedModel, TFLite or ONNX folder",
    ]


def test_an_internal_error_keeps_its_traceback(monkeypatch, tmp_path):
    """Only a user's mistakes become one line: a bug of ours raises, traceback and all."""
    import keras_textattn.training

    def broken(**kwargs):
        raise ValueError("Incompatible shapes: [32,64] vs. [32,48]")

    monkeypatch.setattr(keras_textattn.training, "train", broken)
    with pytest.raises(ValueError, match="Incompatible shapes"):
        main(["train", "--model", "lama", "--data", "x.csv", "--output", str(tmp_path / "run")])


def test_single_class_dataset_is_refused(tmp_path, capsys):
    path = tmp_path / "one.csv"
    path.write_text("label,text\npos,good\npos,great\n")
    assert main(["train", "--model", "bigru", "--data", str(path), "--output", str(tmp_path / "run")]) == 2
    assert "at least 2 classes" in capsys.readouterr().err


def test_texts_of_no_words_are_one_line(tmp_path, capsys):
    """Blank texts, or a --min-frequency no word reaches, leave no vocabulary: one line, no run
    folder (it was TextEncoder's ValueError with a traceback)."""
    path = tmp_path / "data.csv"
    for extra, reason in (
        ([], "the texts hold no tokens"),
        (["--min-frequency", "1000"], "no token of the texts occurs"),
    ):
        path.write_text("label,text\n" + ("pos,  \nneg,\n" if not extra else "pos,good film\nneg,bad film\n") * 20)
        assert main(["train", *SMALL_SCALABLE, "--data", str(path), "--output", str(tmp_path / "run"), *extra]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and error[0].startswith(f"keras-textattn: error: TextEncoder.adapt: {reason}"), error
        assert not (tmp_path / "run").exists()


def test_finished_run_refused_unless_overwrite(shared_data, tmp_path, capsys):
    output = str(tmp_path / "run")
    args = [
        "train",
        *SMALL_SCALABLE,
        "--data",
        str(shared_data / "sst2" / "dev.csv.gz"),
        "--output",
        output,
        "--epochs",
        "1",
    ]
    assert main(args) == 0
    # The batches have a known length: Keras neither shows "Unknown" steps nor warns that the data ran out.
    assert "ran out of data" not in capsys.readouterr().err
    first = _metrics(output)
    assert sorted(os.listdir(output)) == sorted(
        [
            "encoder.keras",
            "history.csv",
            "labels.json",
            "logs",
            "metrics.json",
            "model.keras",
            "run.json",
            "vocabulary.txt",
        ]
    )
    assert first["parameters"] > 0 and first["examples_per_second"] > 0 and len(first["seconds_per_epoch"]) == 1
    # What wrote the folder (a bug report, or a resume refused by another version, can say).
    assert first["versions"] == {
        "keras_textattn": keras_textattn.__version__,
        "keras": keras.__version__,
        "tensorflow": tf.__version__,
    }
    capsys.readouterr()
    assert main(args) == 2
    assert (
        f"already holds a finished run; pass overwrite=True (--overwrite) to replace it, or choose another output "
        f"(with init_from={output!r}, --init-from, to train it further)"
    ) in capsys.readouterr().err
    assert main(args + ["--overwrite", "--seed", "1"]) == 0
    # Seeds make a run reproducible; another seed is another run.
    assert _metrics(output)["history"]["loss"] != first["history"]["loss"]
    assert main(args + ["--overwrite", "--seed", "0"]) == 0
    assert _metrics(output)["history"]["loss"] == first["history"]["loss"]
    assert _metrics(output)["history"]["accuracy"] == first["history"]["accuracy"]
    # The saved model and encoder reload and reproduce the test accuracy.
    model = keras.models.load_model(os.path.join(output, "model.keras"))
    encoder = keras.models.load_model(os.path.join(output, "encoder.keras"))
    texts = tf.constant(["a gripping , beautiful film", "dull and lifeless"])
    assert model(encoder(texts)).shape == (2, 2)


def test_progress_written_to_a_file_is_one_line_per_epoch(shared_data, tmp_path, capsys):
    """Captured here as in a log file or a pipe (not a terminal): no progress bar redrawn per step."""
    args = [
        "train",
        *[a for a in SMALL_SCALABLE if a != "--quiet"],
        "--data",
        str(shared_data / "sst2" / "dev.csv.gz"),
        "--output",
        str(tmp_path / "run"),
        "--epochs",
        "2",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "━" not in printed and "\r" not in printed
    epochs = [line for line in printed.splitlines() if " - accuracy: " in line]
    assert len(epochs) == 2 and all("val_accuracy: " in line for line in epochs), printed
    assert "Epoch 1/2" in printed and "Epoch 2/2" in printed and len(printed.splitlines()) < 12, printed
    # The cosine (scalable attention's): the rate of each epoch's first batch, as history.csv says.
    _assert_tensorboard_draws_the_history(tmp_path / "run")


def test_validation_file_instead_of_a_carve(shared_data, tmp_path, monkeypatch):
    """SST-2's own dev file validates; then every training row trains (none is held out). The
    optimizer options reach the saved model and metrics.json. The training split's accuracy is
    that of every k-th of its rows (here every 4th, for at most 500), as the saved run scores them."""
    from keras_textattn.datasets.formats import LocalFile
    from keras_textattn.datasets.formats import read_labelled_texts
    from keras_textattn.inference import Classifier
    from keras_textattn.training import model_setup

    monkeypatch.setattr(model_setup, "TRAINING_ROWS_SCORED", 500)
    output = tmp_path / "run"
    args = [
        "train",
        *SMALL_SCALABLE,
        "--data",
        str(shared_data / "sst2" / "test.csv.gz"),
        "--output",
        str(output),
        "--validation-data",
        str(shared_data / "sst2" / "dev.csv.gz"),
        "--epochs",
        "1",
    ]
    assert main([*args, "--group-column", "text"]) == 2 and not output.exists()  # no carve to group
    assert main([*args, "--optimizer", "sgd", "--weight-decay", "0.001"]) == 0
    metrics = _metrics(output)
    assert metrics["rows"] == {"train": 1821, "validation": 872} and metrics["training_rows_scored"] == 456
    texts, labels = read_labelled_texts(LocalFile(shared_data / "sst2" / "test.csv.gz"))[:2]
    predicted = Classifier(output).probabilities(texts[::4]).argmax(-1)
    truth = [metrics["label_names"].index(str(label)) for label in labels[::4]]
    assert metrics["accuracy"]["train"] == pytest.approx(np.mean(predicted == truth), abs=1e-6)
    assert metrics["data"]["validation"].endswith("dev.csv.gz")
    assert (metrics["optimizer"], metrics["learning_rate"], metrics["weight_decay"]) == ("sgd", 0.01, 0.001)
    optimizer = keras.models.load_model(output / "model.keras").optimizer
    assert isinstance(optimizer, keras.optimizers.SGD) and optimizer.weight_decay == 0.001


def test_a_file_of_semicolons_trains_predicts_and_evaluates_with_a_delimiter(shared_data, tmp_path, capsys):
    """`--delimiter ';'` (Excel's CSV where the decimal mark is a comma) for train, its test file,
    predict and evaluate; a resume must repeat it (run.json); without it, the hint says it."""
    with gzip.open(shared_data / "sst2" / "dev.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    for name in ("train.csv", "test.csv"):
        with open(tmp_path / name, "w", encoding="utf-8", newline="") as handle:
            csv.writer(handle, delimiter=";").writerows(rows)  # texts with ; and , quoted as Excel would
    output = tmp_path / "run"
    args = [
        "train",
        *SMALL_SCALABLE,
        "--data",
        str(tmp_path / "train.csv"),
        "--test-data",
        str(tmp_path / "test.csv"),
        "--output",
        str(output),
        "--epochs",
        "1",
    ]
    assert main(args) == 2 and "Give --delimiter ';'" in capsys.readouterr().err
    assert main([*args, "--delimiter", ";"]) == 0
    metrics = _metrics(output)
    assert sum(metrics["rows"][split] for split in ("train", "validation")) == metrics["rows"]["test"] == len(rows) - 1
    assert json.loads((output / "run.json").read_text())["delimiter"] == ";"
    assert (
        main(
            [
                "predict",
                "--run",
                str(output),
                "--data",
                str(tmp_path / "test.csv"),
                "--delimiter",
                ";",
                "--output",
                str(tmp_path / "p.csv"),
                "--quiet",
            ]
        )
        == 0
    )
    assert len((tmp_path / "p.csv").read_text().splitlines()) == len(rows)
    assert (
        main(
            [
                "evaluate",
                "--run",
                str(output),
                "--data",
                str(tmp_path / "test.csv"),
                "--delimiter",
                ";",
                "--output",
                str(tmp_path / "report"),
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert report["accuracy"] == pytest.approx(metrics["accuracy"]["test"], abs=1e-6)
    with pytest.raises(SystemExit) as exit_:
        main(["predict", "--run", str(output), "x", "--delimiter", ";;"])
    assert (
        exit_.value.code == 2
        and "argument --delimiter: expected one character, or tab; got ';;'" in capsys.readouterr().err
    )


def test_a_run_on_reviews_holding_line_separators_loads_and_labels(shared_data, tmp_path):
    """IMDB's reviews hold U+0085 (NEL). It used to be a token, and a vocabulary with it cannot be
    read back (Keras splits the saved vocabulary with str.splitlines): the finished run folder of
    `train --data imdb/train.csv.gz` could not be loaded, exported or asked for labels."""
    import csv

    from keras_textattn.inference import predict

    with gzip.open(shared_data / "imdb" / "train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if "\x85" in row["text"]]
    path = tmp_path / "nel.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([("label", "text")] + [(row["label"], row["text"]) for row in rows])
    output = tmp_path / "run"
    assert main(["train", *SMALL_SCALABLE, "--data", str(path), "--output", str(output), "--epochs", "1"]) == 0
    labelled = predict(output, [rows[0]["text"], "a\x85b \x85"])
    assert [sorted(result) for result in labelled] == [["label", "probability", "top"]] * 2


def test_early_stopping_keeps_the_best_epoch_and_survives_a_kill(shared_data, tmp_path, capsys):
    """A learning rate high enough to overfit SST-2's test sentences within a few epochs: training
    stops `patience` epochs after the lowest validation loss, and the saved model is that epoch's.
    Killed after an epoch and resumed, it counts on from the state on disk, and so does the
    plateau schedule (the rate halves after each epoch without a lower validation loss)."""
    output = tmp_path / "run"
    args = [
        *SMALL_SCALABLE,
        "--data",
        str(shared_data / "sst2" / "test.csv.gz"),
        "--output",
        str(output),
        "--epochs",
        "12",
        "--early-stopping",
        "2",
        "--learning-rate",
        "0.02",
        "--batch-size",
        "64",
        "--lr-schedule",
        "plateau",
    ]
    _kill_when(args, (output / "backup" / "epoch-0002-batch-000000.weights.h5").exists)
    status, err = _run_here(args, capsys)
    assert status == 0, err[-2000:]
    metrics = _metrics(output)
    losses = metrics["history"]["val_loss"]
    best = int(np.argmin(losses))
    assert metrics["resumed_from_epoch"] == 2 and metrics["history"]["epoch"] == [float(e) for e in range(len(losses))]
    assert metrics["stopped_early"] and len(losses) == best + 3 < 12  # two epochs without a better one
    assert metrics["best_epoch"] == best
    rates = metrics["history"]["learning_rate"]
    for epoch in range(1, len(losses) - 1):
        improved = losses[epoch] < min(losses[:epoch])
        assert rates[epoch + 1] == pytest.approx(rates[epoch] if improved else max(rates[epoch] / 2, 0.0002)), epoch
    # The epochs before the kill and after it, each once; each cut drawn at the first epoch it slowed.
    _assert_tensorboard_draws_the_history(output)
    # The saved model is the best epoch's: its validation loss is that epoch's.
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets import load_dataset
    from keras_textattn.datasets import make_batches
    from keras_textattn.run_folder import load_run

    model, encoder, _ = load_run(output)
    validation = load_dataset({"train": LocalFile(str(shared_data / "sst2" / "test.csv.gz"))}, ("train", "validation"))[
        "validation"
    ]
    model.compile(loss="sparse_categorical_crossentropy")
    loss = model.evaluate(make_batches(validation, encoder, 64), verbose=0, return_dict=True)["loss"]
    assert loss == pytest.approx(losses[best], rel=1e-4)


def test_hcan_defaults_fit_the_data_and_a_cpu(shared_data, tmp_path, capsys):
    """Lengths chosen from the texts and the cpu preset: SST-2 sentences get 2 x 40 words at
    width 64, not the paper's 15 sentences x 256 words x 512 (which did not finish an epoch
    in 18 minutes on 2 cores)."""
    output = tmp_path / "run"
    args = [
        "train",
        "--model",
        "hcan",
        "--data",
        str(shared_data / "sst2" / "dev.csv.gz"),
        "--output",
        str(output),
        "--epochs",
        "1",
        "--max-tokens",
        "3000",
    ]
    assert main(args) == 0
    assert (
        "Chosen from the training texts (95th percentile; give --sequence-length / --max-sentences to set): "
        "sequence_length 40, max_sentences 2"
    ) in capsys.readouterr().out
    metrics = _metrics(output)
    assert (metrics["encoder"]["sequence_length"], metrics["encoder"]["max_sentences"]) == (40, 2)
    assert metrics["preset"] == "cpu" and metrics["model_kwargs"] == {"units": 64, "num_heads": 4}


def _first_rows(shared_data, dataset, tmp_path, rows=300):
    """A local CSV of the header and first `rows` rows of `dataset`'s training file; and its lines."""
    with gzip.open(shared_data / dataset / "train.csv.gz", "rt", encoding="utf-8") as handle:
        lines = handle.readlines()[: rows + 1]
    data = tmp_path / f"{dataset}.csv"
    data.write_text("".join(lines), encoding="utf-8")
    return data, lines


def test_hcan_splits_long_sentences_and_reads_hashed_bigrams_when_asked(shared_data, tmp_path, capsys):
    """R8's texts have no sentence ends: with --split-long-sentences the rows chosen (and the
    saved encoder) read them whole, a text of more than 64 words taking several rows. With
    `--bigram-buckets` as well, the saved encoder gives bigram ids of the token ids' shape, the
    model has the bigram table, and the run folder and its TFLite export (whose client computes
    the rows and the bigrams in Python) predict raw text as the model does."""
    from keras_textattn import export
    from keras_textattn.inference import Classifier
    from keras_textattn.run_folder import load_run
    from keras_textattn.text import TextEncoder

    data, lines = _first_rows(shared_data, "r8", tmp_path)
    output = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--model",
                "hcan",
                "--data",
                str(data),
                "--output",
                str(output),
                "--epochs",
                "1",
                "--max-tokens",
                "2000",
                "--split-long-sentences",
                "--bigram-buckets",
                "5000",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    metrics = _metrics(output)
    rows = metrics["encoder"]["max_sentences"]
    assert metrics["encoder"]["split_long_sentences"] and metrics["encoder"]["sequence_length"] == 64 and rows > 2
    assert f"sequence_length 64, max_sentences {rows}" in printed
    assert json.loads((output / "run.json").read_text())["split_long_sentences"] is True
    model, encoder, _ = load_run(output)
    texts = [line.split(",", 1)[1] for line in lines[1:]]
    counts = TextEncoder().count_tokens(texts)
    text, words = next((t, int(c)) for t, c in zip(texts, counts) if 64 < c <= 64 * rows)  # longer than a row
    assert int((keras.ops.convert_to_numpy(encoder([text])[0]) > 0).sum()) == words

    assert metrics["encoder"]["bigram_buckets"] == 5000
    texts = [text, *texts[:3]]
    ids, bigrams = (keras.ops.convert_to_numpy(x) for x in encoder(texts))
    assert ids.shape == bigrams.shape and ((bigrams > 0) <= (ids > 0)).all() and (bigrams > 0).any()
    assert model.get_layer("bigram_embedding").input_dim == 5001
    expected = keras.ops.convert_to_numpy(model([ids, bigrams]))
    np.testing.assert_allclose(Classifier(output).probabilities(texts), expected, atol=1e-5)
    export.tflite(output, tmp_path / "tflite")
    np.testing.assert_allclose(Classifier(tmp_path / "tflite").probabilities(texts), expected, atol=1e-4)


# --------------------------------------------------------------- fine-tuning
@pytest.fixture(scope="module")
def source_run(shared_data, tmp_path_factory):
    """A small scalable attention run on SST-2's dev sentences (two classes), to start others from."""
    output = tmp_path_factory.mktemp("source") / "run"
    assert (
        main(
            [
                "train",
                *SMALL_SCALABLE,
                "--data",
                str(shared_data / "sst2" / "dev.csv.gz"),
                "--output",
                str(output),
                "--epochs",
                "1",
            ]
        )
        == 0
    )
    return output


def test_fine_tuning_starts_from_every_layer_but_the_output_layer(source_run, shared_data, tmp_path):
    """`--init-from`: the model, its sizes and its encoder are the source run's, and so are the
    weights of every layer but the output layer, which has TREC's six classes (a learning rate of
    1e-12 leaves the weights where they started). The new folder needs the old one no more."""
    from keras_textattn.inference import Classifier
    from keras_textattn.run_folder import load_run

    source = tmp_path / "source"
    shutil.copytree(source_run, source)
    data, lines = _first_rows(shared_data, "trec", tmp_path)
    output = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--init-from",
                str(source),
                "--data",
                str(data),
                "--output",
                str(output),
                "--epochs",
                "1",
                "--learning-rate",
                "1e-12",
                "--quiet",
            ]
        )
        == 0
    )
    before, after = _metrics(source), _metrics(output)
    assert (after["model"], after["preset"], after["model_kwargs"]) == (
        before["model"],
        before["preset"],
        before["model_kwargs"],
    )
    assert after["encoder"] == before["encoder"] and len(after["label_names"]) == 6
    assert after["initialised_from"]["run"] == os.path.abspath(source)
    assert json.loads((output / "run.json").read_text())["init_from"] == str(source)
    source_model, source_encoder, _ = load_run(source)
    model, encoder, _ = load_run(output)
    assert encoder.get_vocabulary() == source_encoder.get_vocabulary()
    compared = 0
    for layer in source_model.layers:
        if layer.weights and layer.name != "logits":
            for old, new in zip(layer.get_weights(), model.get_layer(layer.name).get_weights()):
                np.testing.assert_allclose(new, old, atol=1e-6, err_msg=layer.name)
                compared += old.size
    assert compared == after["initialised_from"]["weights"] > 0
    assert model.get_layer("logits").kernel.shape == (16, 6) != source_model.get_layer("logits").kernel.shape
    shutil.rmtree(source)
    texts = [line.split(",")[1] for line in lines[1:4]]
    assert [result["label"] for result in Classifier(output).predict(texts)][0] in after["label_names"]


def test_fine_tuning_from_a_lama_run_of_before_its_presets_chose_lama_ctx(shared_data, tmp_path):
    """`--model lama` builds LAMA+ctx since its presets say so (`ModelSpec.best_variant`), and the run
    records `use_context`. A LAMA run of before (its metrics.json without `use_context`: the builder's
    LAMA, which learns its context vector) still starts a run: the same LAMA, its weights copied."""
    from keras_textattn.run_folder import load_run

    data, _ = _first_rows(shared_data, "trec", tmp_path)
    source = tmp_path / "source"
    small = [
        "--set",
        "embedding_dim=8",
        "--set",
        "gru_units=4",
        "--set",
        "num_heads=2",
        "--set",
        "mlp_units=8",
        "--sequence-length",
        "16",
        "--epochs",
        "1",
        "--quiet",
    ]
    assert main(["train", "--model", "lama", "--data", str(data), "--output", str(tmp_path / "ctx"), *small]) == 0
    assert _metrics(tmp_path / "ctx")["model_kwargs"]["use_context"] is True
    assert "context" in [layer.name for layer in load_run(tmp_path / "ctx")[0].layers]
    assert (
        main(
            [
                "train",
                "--model",
                "lama",
                "--data",
                str(data),
                "--output",
                str(source),
                *small,
                "--set",
                "use_context=false",
            ]
        )
        == 0
    )
    metrics = _metrics(source)
    del metrics["model_kwargs"]["use_context"]  # as a run written before the change records it
    (source / "metrics.json").write_text(json.dumps(metrics))
    output = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--init-from",
                str(source),
                "--data",
                str(data),
                "--output",
                str(output),
                "--epochs",
                "1",
                "--quiet",
            ]
        )
        == 0
    )
    model = load_run(output)[0]
    assert "context" not in [layer.name for layer in model.layers]
    assert _metrics(output)["initialised_from"]["weights"] == sum(
        int(np.size(w)) for layer in load_run(source)[0].layers if layer.name != "logits" for w in layer.get_weights()
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--model", "lama"],
            "trained scalable_attention, and a run started from it trains the same model; leave "
            "out --model or give scalable_attention; got lama",
        ),
        (["--max-tokens", "5000"], "takes its model's sizes, encoder and weights from"),
        (["--set", "fc_units=8", "--preset", "paper"], "; leave out --preset, --set"),
        (
            [
                "--sequence-length",
                "10",
                "--bigram-buckets",
                "100",
                "--embeddings",
                "word2vec",
                "--vectors-vocabulary",
                "9",
            ],
            "; leave out --sequence-length, --bigram-buckets, --embeddings, --vectors-vocabulary",
        ),
    ],
)
def test_fine_tuning_refuses_what_comes_from_the_source_run(source_run, shared_data, tmp_path, capsys, extra, message):
    output = tmp_path / "run"
    args = [
        "train",
        "--init-from",
        str(source_run),
        "--data",
        str(shared_data / "trec" / "test.csv.gz"),
        "--output",
        str(output),
    ]
    assert main(args + extra) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0] and not output.exists()


def test_fine_tuning_needs_a_finished_run_and_a_model(shared_data, tmp_path, capsys):
    data = ["--data", str(shared_data / "trec" / "test.csv.gz"), "--output", str(tmp_path / "run")]
    assert main(["train", "--init-from", str(tmp_path), *data]) == 2
    assert (
        f"init_from (--init-from) must be a finished run folder; {tmp_path} has no metrics.json"
        in capsys.readouterr().err
    )
    assert main(["train", "--init-from", str(tmp_path / "run"), *data, "--overwrite"]) == 2
    assert (
        f"init_from (--init-from) is the output folder {tmp_path / 'run'}; write the new run to another"
        in capsys.readouterr().err
    )


def test_fine_tuning_refuses_a_run_that_diverged(source_run, shared_data, tmp_path, capsys):
    """A source run of weights that are not numbers would train NaN from the first step on (and
    the divergence line would blame the learning rate)."""
    from keras_textattn.run_folder import load_run

    diverged = shutil.copytree(source_run, tmp_path / "diverged")
    model = load_run(diverged)[0]
    model.set_weights([np.full_like(weight, np.nan) for weight in model.get_weights()])
    model.save(diverged / "model.keras")
    assert (
        main(
            [
                "train",
                "--init-from",
                str(diverged),
                "--data",
                str(shared_data / "sst2" / "dev.csv.gz"),
                "--output",
                str(tmp_path / "run"),
                "--epochs",
                "1",
            ]
        )
        == 2
    )
    assert (
        f"{diverged} (--init-from) holds weights that are not numbers (a run that diverged)" in capsys.readouterr().err
    )
    assert not (tmp_path / "run").exists()


def test_fine_tuning_from_imdb_reviews_lifts_a_small_sst2_sample(shared_data, tmp_path):
    """Transfer learning on real data: scalable attention trained one epoch on a third of IMDB's reviews
    and fine-tuned on 500 SST-2 sentences scores well above the same model trained on those 500 alone
    (SST-2's dev set; BENCHMARKS.md has the full-data figures)."""
    from keras_textattn.training import train

    sample, _ = _first_rows(shared_data, "sst2", tmp_path, rows=500)
    dev = str(shared_data / "sst2" / "dev.csv.gz")
    with gzip.open(shared_data / "imdb" / "train.csv.gz", "rt", encoding="utf-8") as handle:
        header, *reviews = handle.readlines()
    imdb = tmp_path / "imdb.csv"
    imdb.write_text("".join([header, *reviews[::3]]), encoding="utf-8")  # every third: both labels (sorted by label)
    source = train("scalable_attention", str(imdb), str(tmp_path / "imdb"), sequence_length=64, epochs=1, verbose=0)
    alone = train("scalable_attention", str(sample), str(tmp_path / "alone"), validation_data=dev, verbose=0)
    tuned = train(
        data=str(sample),
        output=str(tmp_path / "tuned"),
        init_from=str(tmp_path / "imdb"),
        validation_data=dev,
        verbose=0,
    )
    assert source["accuracy"]["validation"] > 0.70
    # Measured: 0.706 against 0.612 (the IMDB run alone: 0.731 on its held-out reviews; from half of
    # them: 0.733 against 0.612, and 0.772).
    assert tuned["accuracy"]["validation"] > max(0.68, alone["accuracy"]["validation"] + 0.07), (tuned, alone)


# -------------------------------------------------------------------- resume
def _checkpoints(output):
    folder = os.path.join(output, "backup")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def _kill_when(args, ready, sig=signal.SIGKILL, timeout=TIMEOUT):
    """Run `keras-textattn train ARGS` and send it `sig` as soon as `ready()` is true;
    returns what it printed on stderr (kept in a file: a full pipe would stall it)."""
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(_command(*args), stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        try:
            deadline = time.monotonic() + timeout
            while not ready():
                if process.poll() is not None:
                    stderr.seek(0)
                    pytest.fail("the run ended before the moment to stop it: " + stderr.read()[-2000:])
                if time.monotonic() > deadline:
                    pytest.fail("the moment to stop the run did not come within the time limit")
                time.sleep(0.02)
            process.send_signal(sig)
            process.wait(timeout=120)
        finally:
            process.kill()
            process.wait()
        stderr.seek(0)
        return stderr.read()


def test_killed_run_resumes_from_its_checkpoint(shared_data, tmp_path, capsys):
    output = str(tmp_path / "run")
    # SST-2's test sentences: 103 batches an epoch, a checkpoint every 20: killed after the second
    # epoch's second checkpoint.
    sst2 = [
        "--data",
        str(shared_data / "sst2" / "test.csv.gz"),
        "--test-data",
        str(shared_data / "sst2" / "dev.csv.gz"),
    ]
    args = [
        *SMALL_SCALABLE,
        *sst2,
        "--output",
        output,
        "--epochs",
        "2",
        "--batch-size",
        "16",
        "--checkpoint-every",
        "20",
    ]
    _kill_when(args, lambda: "epoch-0001-batch-000040.weights.h5" in _checkpoints(output))
    assert not os.path.exists(os.path.join(output, "metrics.json"))
    # A file damaged on disk is skipped for the checkpoint before it.
    newest = os.path.join(output, "backup", _checkpoints(output)[-1])
    with open(newest, "r+b") as handle:
        handle.truncate(os.path.getsize(newest) // 2)
    with pytest.warns(UserWarning, match="skipping the damaged checkpoint"):
        status, err = _run_here(args, capsys)
    assert status == 0, err[-2000:]
    metrics = _metrics(output)
    assert metrics["resumed_from_epoch"] == 1
    assert metrics["history"]["epoch"] == [0.0, 1.0]  # the first epoch was not trained again
    assert not os.path.exists(os.path.join(output, "backup"))


def test_a_fine_tuning_run_resumes_from_its_checkpoint(source_run, shared_data, tmp_path, capsys):
    """Stopped by Ctrl-C after its first epoch, a run started from another resumes (reading that
    run again for the model's sizes; without it, a one-line error) and counts on from epoch 2."""
    source = tmp_path / "source"
    shutil.copytree(source_run, source)
    output = str(tmp_path / "run")
    args = [
        "--init-from",
        str(source),
        "--data",
        str(shared_data / "sst2" / "test.csv.gz"),
        "--output",
        output,
        "--epochs",
        "2",
        "--quiet",
    ]
    _kill_when(args, lambda: "epoch-0001-batch-000000.weights.h5" in _checkpoints(output), sig=signal.SIGINT)
    shutil.move(source, tmp_path / "elsewhere")
    status, err = _run_here(args, capsys)
    assert status == 2 and f"{source} has no metrics.json" in err
    shutil.move(tmp_path / "elsewhere", source)
    status, err = _run_here(args, capsys)
    assert status == 0, err[-2000:]
    metrics = _metrics(output)
    assert metrics["resumed_from_epoch"] == 1 and metrics["history"]["epoch"] == [0.0, 1.0]
    assert metrics["initialised_from"]["run"] == os.path.abspath(source)


# ---------------------------------------------------------------- distribute
@pytest.mark.parametrize("adversarial", [[], ["--adversarial", "0.05"]], ids=["plain", "adversarial"])
def test_mirrored_on_two_cpu_devices_matches_one_device(shared_data, tmp_path, capsys, adversarial):
    # SST-2's 872 dev sentences to train on (the point is equal losses, not accuracy). No
    # shuffling: a strategy's distributed dataset is shuffled in another order. Adversarial
    # training's step (its own train_step) must sum its two losses' gradients over replicas
    # as Keras's does, and log the loss at one device's scale.
    common = [
        *SMALL_SCALABLE,
        "--data",
        str(shared_data / "sst2" / "dev.csv.gz"),
        "--epochs",
        "1",
        "--batch-size",
        "64",
        "--seed",
        "3",
        "--no-shuffle",
        *adversarial,
    ]
    status, err = _run_here([*common, "--output", str(tmp_path / "single")], capsys)
    assert status == 0, err[-2000:]
    mirrored = _run([*common, "--output", str(tmp_path / "mirrored"), "--distribute", "mirrored", "--cpu-devices", "2"])
    assert mirrored.returncode == 0, mirrored.stderr[-2000:]
    one, two = _metrics(tmp_path / "single"), _metrics(tmp_path / "mirrored")
    assert two["replicas"] == 2 and one["replicas"] == 1
    np.testing.assert_allclose(two["history"]["loss"], one["history"]["loss"], rtol=1e-5)
    np.testing.assert_allclose(two["accuracy"]["validation"], one["accuracy"]["validation"], atol=1e-3)


def test_mirrored_batches_that_do_not_split_evenly(shared_data, tmp_path, capsys):
    """Keras's `fit` under MirroredStrategy reduces the first batch across replicas and fails inside
    TensorFlow ("Inputs to operation AddN ... must have the same size") when its parts differ
    (keras-team/keras#19246). A global batch that is not a multiple of the replicas is refused up front;
    a split smaller than a batch comes first in a part that splits evenly (it failed: 7 validation rows
    over 3 replicas); one of fewer rows than replicas, and a CPU split that is not a positive count or
    has no MirroredStrategy to use it (a multi-worker one ignored it), are one line each."""
    with gzip.open(shared_data / "trec" / "train.csv.gz", "rt", encoding="utf-8") as handle:
        header, *rows = handle.read().splitlines()
    (tmp_path / "small.csv").write_text("\n".join([header, *rows[:100]]) + "\n")
    (tmp_path / "two.csv").write_text("\n".join([header, *rows[100:102]]) + "\n")
    common = [
        *SMALL_SCALABLE,
        "--data",
        str(tmp_path / "small.csv"),
        "--epochs",
        "1",
        "--distribute",
        "mirrored",
        "--cpu-devices",
        "3",
    ]
    result = _run([*common, "--output", str(tmp_path / "odd"), "--batch-size", "32"])
    assert result.returncode == 2 and not (tmp_path / "odd").exists()
    assert (
        "keras-textattn: error: batch size 32 (--batch-size: the global batch) does not split evenly over the 3 "
        "replicas of --distribute mirrored; give a multiple of 3, e.g. 30 or 33"
    ) in result.stderr
    result = _run([*common, "--output", str(tmp_path / "run"), "--batch-size", "33"])
    assert result.returncode == 0, result.stderr[-2000:]
    metrics = _metrics(tmp_path / "run")
    assert metrics["replicas"] == 3 and metrics["rows"]["validation"] % 3 and metrics["rows"]["validation"] < 33
    assert len(metrics["history"]["val_loss"]) == 1
    result = _run(
        [
            *common,
            "--output",
            str(tmp_path / "two"),
            "--batch-size",
            "33",
            "--validation-data",
            str(tmp_path / "two.csv"),
        ]
    )
    assert (
        result.returncode == 2
        and ("the validation split holds 2 rows, fewer than the 3 replicas of --distribute mirrored (each needs one)")
        in result.stderr
    )
    # Refused before TensorFlow sets its devices up, so in this process.
    args = ["train", *SMALL_SCALABLE, "--data", str(tmp_path / "small.csv"), "--output", str(tmp_path / "x")]
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--distribute", "mirrored", "--cpu-devices", "0"])
    assert exit_.value.code == 2
    assert "argument --cpu-devices: expected a positive whole number, got '0'" in capsys.readouterr().err
    assert main([*args, "--cpu-devices", "2"]) == 2
    assert "--cpu-devices splits the CPU for --distribute mirrored; without it" in capsys.readouterr().err
    # A multi-worker run's strategy takes one CPU device per worker: the split did nothing (1 replica).
    for distribute in (["multi-worker"], ["ray", "--workers", "2"]):
        assert main([*args, "--cpu-devices", "2", "--distribute", *distribute]) == 2
        assert (
            f"--cpu-devices splits the CPU for --distribute mirrored; a {distribute[0]} run trains on one CPU device "
            "per worker (TensorFlow's MultiWorkerMirroredStrategy): start more workers instead"
            in capsys.readouterr().err
        )


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.fixture(scope="module")
def sst2_shards(shared_data, tmp_path_factory):
    """20,000 of SST-2's training sentences in two gzip shards, and the options of a small
    multi-worker run on them (all 67,349 made these the suite's slowest tests)."""
    folder = tmp_path_factory.mktemp("sst2_shards")
    with gzip.open(shared_data / "sst2" / "train.csv.gz", "rt", encoding="utf-8") as handle:
        header, *rows = handle.read().splitlines()[:20001]
    for index in range(2):
        with gzip.open(folder / f"train-{index}.csv.gz", "wt", encoding="utf-8") as handle:
            handle.write("\n".join([header, *rows[index::2]]) + "\n")
    args = [
        *SMALL_SCALABLE,
        "--data",
        str(folder / "train-*.csv.gz"),
        "--test-data",
        str(shared_data / "sst2" / "test.csv.gz"),
        "--epochs",
        "1",
        "--batch-size",
        "64",
    ]
    return folder, args


# What the multi-worker runs below use of the validation split: a schedule and early stopping on its loss.
VALIDATED = ["--lr-schedule", "plateau", "--early-stopping", "1"]


@pytest.fixture(scope="module")
def multi_worker_run(sst2_shards):
    """Two workers started by hand with TF_CONFIG: `(run folder, each worker's output)`."""
    folder, args = sst2_shards
    output = str(folder / "run")
    return output, _two_workers([*args, *VALIDATED, "--output", output])


def _start_two_workers(args, worker_args=((), ())):
    """`keras-textattn train ARGS --distribute multi-worker` started on two local workers (each with
    its `worker_args` added), output to pipes."""
    cluster = {"worker": [f"localhost:{port}" for port in _free_ports(2)]}
    workers = []
    for index in range(2):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}))
        workers.append(
            subprocess.Popen(
                _command(*args, *worker_args[index], "--distribute", "multi-worker"),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    return workers


def _two_workers(args, worker_args=((), ())):
    """`keras-textattn train ARGS --distribute multi-worker` on two local workers: what each printed."""
    workers = _start_two_workers(args, worker_args)
    try:
        outputs = [worker.communicate(timeout=TIMEOUT)[0] for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0], outputs[1][-2000:] + outputs[0][-2000:]
    return outputs


@pytest.mark.xdist_group("multi_worker")
def test_multi_worker_parts_of_different_sizes(shared_data, tmp_path):
    """Workers whose shards hold different numbers of rows: the one whose part runs out first gets
    batches of no rows while the other trains on (TensorFlow's iterator). HCAN's steps on them
    failed ("Shape mismatch in the collective instance": a step traced apart for a batch of a known
    0 rows left gradients None, so that worker sent fewer to the all-reduce). Now the run
    finishes, with the options that act on the validation figures and on the loss."""
    with gzip.open(shared_data / "sst2" / "train.csv.gz", "rt", encoding="utf-8") as handle:
        header, *rows = handle.read().splitlines()[:321]
    for index, part in enumerate((rows[:240], rows[240:])):
        (tmp_path / f"train-{index}.csv").write_text("\n".join([header, *part]) + "\n", encoding="utf-8")
    output = tmp_path / "run"
    _two_workers(
        [
            "--model",
            "hcan",
            "--sequence-length",
            "16",
            "--max-sentences",
            "2",
            "--max-tokens",
            "2000",
            "--data",
            str(tmp_path / "train-*.csv"),
            "--batch-size",
            "8",
            "--epochs",
            "1",
            "--quiet",
            "--output",
            str(output),
            *VALIDATED,
            "--class-weight",
            "balanced",
        ]
    )
    metrics = _metrics(output)
    assert metrics["replicas"] == 2
    assert metrics["history"]["val_accuracy"][metrics["best_epoch"]] == metrics["accuracy"]["validation"]


@pytest.mark.xdist_group("multi_worker")
def test_killed_multi_worker_run_resumes_from_the_chiefs_backup(shared_data, tmp_path):
    """Both workers killed after the first of 3 epochs, the same commands resume from the chief's
    checkpoint (the run started again from its first epoch). The other worker writes its own
    `--output` here, as on a disk of its own: it gets the chief's checkpoint and the plateau's and
    early stopping's state through the collective. Had it trained on from other weights, each
    epoch's validation accuracy (each worker scores its part with its own weights) would not be
    what the chief's model scores on the whole split."""
    with gzip.open(shared_data / "sst2" / "train.csv.gz", "rt", encoding="utf-8") as handle:
        header, *rows = handle.read().splitlines()[:4001]
    for index in range(2):
        (tmp_path / f"train-{index}.csv").write_text("\n".join([header, *rows[index::2]]) + "\n", encoding="utf-8")
    output = tmp_path / "run"
    args = [
        *SMALL_SCALABLE,
        "--data",
        str(tmp_path / "train-*.csv"),
        "--batch-size",
        "64",
        "--epochs",
        "3",
        "--output",
        str(output),
        "--lr-schedule",
        "plateau",
        "--early-stopping",
        "2",
    ]
    own_output = ((), ("--output", str(tmp_path / "worker-1")))
    workers = _start_two_workers(args, own_output)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (output / "backup" / "epoch-0001-batch-000000.weights.h5").exists():
            if ended := [worker for worker in workers if worker.poll() is not None]:
                pytest.fail("a worker ended before the first epoch's checkpoint: " + ended[0].stdout.read()[-2000:])
            assert time.monotonic() < deadline, "no checkpoint of the first epoch within the time limit"
            time.sleep(0.05)
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
            worker.stdout.close()
    assert not (output / "metrics.json").exists()
    _two_workers(args, own_output)
    metrics = _metrics(output)
    assert metrics["resumed_from_epoch"] == 1
    assert metrics["history"]["epoch"] == [0, 1, 2]
    assert metrics["best_epoch"] >= 1  # trained after the resume (measured: 2)
    assert metrics["history"]["val_accuracy"][metrics["best_epoch"]] == metrics["accuracy"]["validation"]
    assert not (output / "backup").exists() and os.listdir(tmp_path / "worker-1") == []


def _loop_data(validation_labels=0):
    """Rows for the multi-worker loop: 16 training rows labelled 0, and 8 validation rows of the same
    inputs labelled `validation_labels`."""
    from keras_textattn.datasets.splits import TextClassificationData

    inputs = np.random.default_rng(0).normal(size=(16, 2)).astype("float32")
    return TextClassificationData(
        splits={
            "train": tf.data.Dataset.from_tensor_slices((inputs, np.zeros(16, "int32"))),
            "validation": tf.data.Dataset.from_tensor_slices((inputs[:8], np.full(8, validation_labels, "int32"))),
        },
        label_names=["a", "b"],
    )


def _loop_model(learning_rate):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.Adam(learning_rate), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def test_multi_worker_loop_lowers_a_cosine_rate_every_batch(tmp_path, capsys):
    """The multi-worker loop sets the schedule's rate before every batch, as `fit` does: after 2
    epochs of 4 batches the rate is the cosine's at 1.75 epochs (at 1 had it been set once an
    epoch), and the history records each epoch's first rate. Each epoch ends with the validation
    loss and accuracy, as `evaluate` gives them. Each epoch's row reaches its callbacks
    (history.csv, TensorBoard, the checkpoints) and, verbose, a printed line, as it happens (a run on several
    machines showed nothing until it ended, and wrote neither)."""
    from keras_textattn.training.backup import RunBackup
    from keras_textattn.training.callbacks import EpochRateTensorBoard as _EpochRateTensorBoard
    from keras_textattn.training.multi_worker import fit_multi_worker as _fit_multi_worker
    from keras_textattn.training.run_state import read_history as _read_history
    from keras_textattn.training.schedules import rate_at
    from keras_textattn.training.schedules import schedule_callbacks

    model, data = _loop_model(0.01), _loop_data()
    callbacks = [
        *schedule_callbacks("cosine", 0.01, 2),
        keras.callbacks.CSVLogger(str(tmp_path / "history.csv")),
        _EpochRateTensorBoard(str(tmp_path / "logs")),
        RunBackup(str(tmp_path / "backup"), every=3),
    ]
    history = _fit_multi_worker(
        tf.distribute.get_strategy(),
        model,
        data,
        lambda part, size: part.batch(size),
        2,
        4,
        4,
        callbacks,
        verbose=True,
        validation_batches_of=lambda part, size: part.batch(size),
        validation_batch_size=3,
    )
    rate = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
    assert np.isclose(rate, rate_at("cosine", 0.01, 2)(1.75))
    np.testing.assert_allclose(history["learning_rate"], [0.01, 0.005], rtol=1e-6)
    assert sorted(history) == ["accuracy", "epoch", "learning_rate", "loss", "seconds", "val_accuracy", "val_loss"]
    assert [history["val_loss"][-1], history["val_accuracy"][-1]] == pytest.approx(
        model.evaluate(data["validation"].batch(3), verbose=0), rel=1e-6
    )
    assert _read_history(tmp_path / "history.csv") == {name: pytest.approx(values) for name, values in history.items()}
    _assert_tensorboard_draws_the_history(tmp_path, history)
    # Checkpoints after every third batch and at each epoch's end, as `fit` has them (the two newest kept).
    assert sorted(os.listdir(tmp_path / "backup")) == [
        "epoch-0001-batch-000003.weights.h5",
        "epoch-0002-batch-000000.weights.h5",
    ]
    printed = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("worker 0 of 1 reads")]
    assert [line.split(" - ")[:4] for line in printed] == [
        [
            "Epoch 1/2",
            f"loss: {history['loss'][0]:.4g}",
            f"accuracy: {history['accuracy'][0]:.4g}",
            "learning_rate: 0.01",
        ],
        [
            "Epoch 2/2",
            f"loss: {history['loss'][1]:.4g}",
            f"accuracy: {history['accuracy'][1]:.4g}",
            "learning_rate: 0.005",
        ],
    ], printed


def test_multi_worker_loop_stops_early_and_lowers_the_rate_on_a_plateau(tmp_path):
    """The multi-worker loop runs early stopping and the plateau schedule on its validation loss, as
    `fit` does (both were refused with --distribute multi-worker / ray): validation rows labelled
    against the training rows make the validation loss rise from the first epoch on, so with a
    patience of 2 the run stops after the third of 6 epochs, the plateau halves the rate after the
    second (patience 1), and the first epoch's weights come back."""
    from keras_textattn.training.backup import BestEpoch
    from keras_textattn.training.multi_worker import fit_multi_worker as _fit_multi_worker
    from keras_textattn.training.schedules import schedule_callbacks

    model, data = _loop_model(0.05), _loop_data(validation_labels=1)
    best = BestEpoch(str(tmp_path), patience=2)
    history = _fit_multi_worker(
        tf.distribute.get_strategy(),
        model,
        data,
        lambda part, size: part.batch(size),
        6,
        4,
        4,
        [*schedule_callbacks("plateau", 0.05, 6, str(tmp_path)), best],
        validation_batches_of=lambda part, size: part.batch(size),
        validation_batch_size=4,
    )
    assert np.all(np.diff(history["val_loss"]) > 0) and history["epoch"] == [0, 1, 2]
    np.testing.assert_allclose(history["learning_rate"], [0.05, 0.05, 0.025], rtol=1e-6)
    assert (best.best["epoch"], best.stopped) == (0, True)
    best.restore_best()
    assert model.evaluate(data["validation"].batch(4), verbose=0)[0] == pytest.approx(history["val_loss"][0], rel=1e-6)


def test_multi_worker_loop_weighs_classes_as_fit_does():
    """Class weights in the multi-worker loop (they were refused there) train as `fit`'s
    `class_weight`: from the same weights, an epoch over the same batches gives the same weights,
    loss and training accuracy."""
    from keras_textattn.datasets.splits import TextClassificationData
    from keras_textattn.training.multi_worker import fit_multi_worker as _fit_multi_worker

    inputs = np.random.default_rng(1).normal(size=(16, 2)).astype("float32")
    labels = (inputs[:, 0] > 0.5).astype("int32")
    rows = tf.data.Dataset.from_tensor_slices((inputs, labels))
    by_fit, by_loop, unweighted = _loop_model(0.1), _loop_model(0.1), _loop_model(0.1)
    for model in (by_loop, unweighted):
        model.set_weights(by_fit.get_weights())
    weights = {0: 0.5, 1: 3.0}
    fitted = by_fit.fit(rows.batch(4), epochs=1, class_weight=weights, shuffle=False, verbose=0).history
    looped = _fit_multi_worker(
        tf.distribute.get_strategy(),
        by_loop,
        TextClassificationData(splits={"train": rows}, label_names=["a", "b"]),
        lambda part, size: part.batch(size),
        1,
        4,
        4,
        class_weights=weights,
    )
    for fit_weight, loop_weight in zip(by_fit.get_weights(), by_loop.get_weights(), strict=True):
        np.testing.assert_allclose(loop_weight, fit_weight, rtol=1e-5, atol=1e-6)
    assert looped["loss"] + looped["accuracy"] == pytest.approx(fitted["loss"] + fitted["accuracy"], rel=1e-5)
    # The weights matter here: without them the same epoch ends elsewhere, far outside the tolerance above.
    unweighted.fit(rows.batch(4), epochs=1, shuffle=False, verbose=0)
    assert max(np.abs(a - b).max() for a, b in zip(unweighted.get_weights(), by_fit.get_weights())) > 0.01


def test_multi_worker_loop_smooths_labels_as_fit_does():
    """`--label-smoothing` in the multi-worker loop trains as `fit` compiled with the run's loss
    does: from the same weights, an epoch over the same batches gives the same weights, loss and
    validation loss (the smoothed one)."""
    from keras_textattn.datasets.splits import TextClassificationData
    from keras_textattn.training import classifier_loss
    from keras_textattn.training.multi_worker import fit_multi_worker as _fit_multi_worker

    inputs = np.random.default_rng(1).normal(size=(16, 2)).astype("float32")
    labels = (inputs[:, 0] > 0.5).astype("int32")
    rows = tf.data.Dataset.from_tensor_slices((inputs, labels))
    by_fit, by_loop, plain = _loop_model(0.1), _loop_model(0.1), _loop_model(0.1)
    for model in (by_fit, by_loop):
        model.compile(keras.optimizers.Adam(0.1), loss=classifier_loss(0.3), metrics=["accuracy"])
    for model in (by_loop, plain):
        model.set_weights(by_fit.get_weights())
    fitted = by_fit.fit(rows.batch(4), validation_data=rows.batch(8), epochs=1, shuffle=False, verbose=0).history
    looped = _fit_multi_worker(
        tf.distribute.get_strategy(),
        by_loop,
        TextClassificationData(splits={"train": rows, "validation": rows}, label_names=["a", "b"]),
        lambda part, size: part.batch(size),
        1,
        4,
        4,
        validation_batches_of=lambda part, size: part.batch(size),
        validation_batch_size=8,
        label_smoothing=0.3,
    )
    for fit_weight, loop_weight in zip(by_fit.get_weights(), by_loop.get_weights(), strict=True):
        np.testing.assert_allclose(loop_weight, fit_weight, rtol=1e-5, atol=1e-6)
    for key in ("loss", "val_loss"):
        assert looped[key] == pytest.approx(fitted[key], rel=1e-5)
    # The smoothing matters here: the plain loss ends elsewhere, far outside the tolerance above.
    plain.fit(rows.batch(4), epochs=1, shuffle=False, verbose=0)
    assert max(np.abs(a - b).max() for a, b in zip(plain.get_weights(), by_fit.get_weights())) > 0.01


def test_a_diverged_run_is_an_error_not_a_finished_run(tmp_path, capsys):
    """A loss of NaN (at a learning rate of 1e37) stops the run at that epoch's end with one line
    that says so, before its history row and checkpoint (it was "Finished", and `predict` said
    "nan"); the multi-worker loop checks each epoch too."""
    from keras_textattn.datasets.splits import TextClassificationData
    from keras_textattn.run_folder import RunError
    from keras_textattn.training import train
    from keras_textattn.training.callbacks import check_converging
    from keras_textattn.training.multi_worker import fit_multi_worker as _fit_multi_worker

    data = tmp_path / "rows.csv"
    data.write_text(
        "label,text\n" + "".join(f"{i % 2},{'good fine' if i % 2 else 'bad dull'} text {i}\n" for i in range(300))
    )
    said = "training diverged in epoch 1: its loss is nan; a lower --learning-rate"
    with pytest.raises(RunError, match=re.escape(said).replace("nan", "(nan|inf)")):
        train(
            "scalable_attention",
            str(data),
            str(tmp_path / "run"),
            epochs=2,
            learning_rate=1e37,
            verbose=1,
            model_kwargs={"embedding_dim": 8, "fc_units": 8},
        )
    assert capsys.readouterr().out.endswith("\n")  # the progress bar's line ends: the error is a line of its own
    assert not (tmp_path / "run").exists()  # nothing was trained: no folder is left (as for any failure)
    rows = tf.data.Dataset.from_tensor_slices((np.full((8, 2), np.nan, "float32"), np.zeros(8, "int32")))
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.Adam(0.01))
    with pytest.raises(
        RunError, match=re.escape(said.replace("--learning-rate", "--learning-rate (this run's: 0.01)"))
    ):
        _fit_multi_worker(
            tf.distribute.get_strategy(),
            model,
            TextClassificationData(splits={"train": rows}, label_names=["a", "b"]),
            lambda part, size: part.batch(size),
            2,
            4,
            2,
        )
    # Weights that are not numbers under a finite loss (cross-entropy clips the NaN probabilities they give).
    model.set_weights([np.full_like(weight, np.nan) for weight in model.get_weights()])
    with pytest.raises(RunError, match=re.escape("training diverged in epoch 3: its weights are no longer numbers")):
        check_converging(model, 16.1, 2, 0.01)
    check_converging(keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)]), 16.1, 2, 0.01)  # finite: no error


def test_multi_worker_loop_scales_the_loss_under_mixed_float16(sst2_shards, tmp_path):
    """The multi-worker loop (one worker here) trains under mixed_float16 as in float32, also
    adversarially: Keras's LossScaleOptimizer unscales what it applies, so the loop must
    differentiate the scaled loss (it did not: the updates were 1/32768 of the intended, test
    accuracy 0.56 against 0.74).
    It also applies the run's schedule: "step:1" trains the first epoch at a tenth of 0.01,
    the usual 1e-3 (at 0.01, the schedule ignored, history would say so)."""
    _, args = sst2_shards
    output = tmp_path / "mixed-run"  # not beside the shards: one run folder there is the next test's check
    env = dict(
        os.environ,
        TF_CONFIG=json.dumps(
            {"cluster": {"worker": [f"localhost:{_free_ports(1)[0]}"]}, "task": {"type": "worker", "index": 0}}
        ),
    )
    result = _run(
        [
            *args,
            "--output",
            str(output),
            "--distribute",
            "multi-worker",
            "--dtype-policy",
            "mixed_float16",
            "--learning-rate",
            "0.01",
            "--lr-schedule",
            "step:1",
            "--adversarial",
            "0.05",
        ],
        env=env,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    metrics = _metrics(output)
    assert metrics["dtype_policy"] == "mixed_float16" and metrics["accuracy"]["test"] > 0.68
    assert metrics["adversarial"] == 0.05  # adversarially, its gradients of the scaled losses too
    np.testing.assert_allclose(metrics["history"]["learning_rate"], [1e-3], rtol=1e-6)


@pytest.mark.xdist_group("multi_worker")
def test_multi_worker_on_localhost_writes_one_model(multi_worker_run, sst2_shards):
    """Each worker reads its own shard; the chief writes the one run folder."""
    output, outputs = multi_worker_run
    for index in range(2):
        assert f"worker {index} of 2 reads 1 of 2 shards: train-{index}.csv.gz" in outputs[index]
    models = [
        os.path.join(root, name)
        for root, _, names in os.walk(sst2_shards[0])
        for name in names
        if name == "model.keras"
    ]
    assert models == [os.path.join(output, "model.keras")]
    metrics = _metrics(output)
    assert metrics["replicas"] == 2
    assert metrics["accuracy"]["test"] > 0.6  # it learned (one device reaches about 0.72)
    # The epoch's validation accuracy is of the whole validation split, each worker's part added up: the
    # figure the trained model gets on it.
    assert metrics["history"]["val_accuracy"] == [metrics["accuracy"]["validation"]]
    assert (metrics["best_epoch"], metrics["early_stopping"], metrics["lr_schedule"]) == (0, 1, "plateau")
    # The chief's epochs in history.csv and TensorBoard's logs, as a one-device run's (only it writes them).
    from keras_textattn.training.run_state import read_history as _read_history

    assert _read_history(os.path.join(output, "history.csv")) == {
        column: pytest.approx(values) for column, values in _metrics(output)["history"].items()
    }
    _assert_tensorboard_draws_the_history(output)
    # Saved with the run's optimizer (Adam, not `compile`'s default RMSprop) and its trained state, as a
    # one-device run's model is, for whoever loads it to train it further (without Keras's warning that
    # the saved optimizer's variables do not fit).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        saved = keras.models.load_model(os.path.join(output, "model.keras"))
    assert type(saved.optimizer) is keras.optimizers.Adam and int(saved.optimizer.iterations) > 0


@pytest.mark.xdist_group("multi_worker")
@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason='Ray is an optional extra: pip install -e ".[ray]" (CI installs it)'
)
def test_ray_starts_the_same_multi_worker_run(multi_worker_run, sst2_shards, tmp_path):
    """`--distribute ray --workers 2` on a local Ray cluster: the same losses as the workers started by hand."""
    folder, args = sst2_shards
    output = tmp_path / "ray-run"
    # Ray starts its workers at niceness 15 (ray-project/ray#24928): beside the suite's other xdist
    # workers they got almost no CPU, and this run took up to 8 minutes under `-n 3` on 2 cores
    # (1 to 3 alone; 2 in the suite at niceness 0, where they take their share). The timeout
    # guards against a hang.
    result = _run(
        [*args, *VALIDATED, "--output", str(output), "--distribute", "ray", "--workers", "2"],
        timeout=600,
        env=dict(os.environ, RAY_worker_niceness="0"),
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    by_hand, by_ray = _metrics(multi_worker_run[0]), _metrics(output)
    assert by_ray["replicas"] == 2 and by_ray["distribute"] == "multi-worker"
    np.testing.assert_allclose(by_ray["history"]["loss"], by_hand["history"]["loss"], rtol=1e-5)
    assert by_ray["accuracy"] == pytest.approx(by_hand["accuracy"], abs=1e-6)
    assert "Finished scalable_attention" in result.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason='Ray is an optional extra: pip install -e ".[ray]" (CI installs it)'
)
def test_ray_reserves_the_workers_cpus_and_no_more():
    """N workers of one CPU need N CPUs, under Ray Train V1 and V2 alike. V1 (Ray 2.40, or
    `RAY_TRAIN_V2_ENABLED=0`) reserves a CPU for its coordinator by default: 2 workers on a 2-CPU
    machine waited without end for a third. V2 refuses the setting that turns that off."""
    from ray.air.config import ScalingConfig as ScalingConfigV1

    from keras_textattn.training.ray_launcher import _scaling_config

    assert ScalingConfigV1(num_workers=2, resources_per_worker={"CPU": 1}).total_resources == {"CPU": 3}
    scaling_configs = [ScalingConfigV1]
    if importlib.util.find_spec("ray.train.v2") is not None:
        from ray.train.v2.api.config import ScalingConfig as ScalingConfigV2

        scaling_configs.append(ScalingConfigV2)
    for scaling_config in scaling_configs:
        assert _scaling_config(scaling_config, 2, 1).total_resources == {"CPU": 2}
        assert _scaling_config(scaling_config, 3, 0.5).total_resources == {"CPU": 1.5}


@pytest.mark.xdist_group("multi_worker")
@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason='Ray is an optional extra: pip install -e ".[ray]" (CI installs it)'
)
def test_ray_refusals_come_before_ray_starts_and_workers_get_absolute_paths(
    multi_worker_run, sst2_shards, tmp_path, monkeypatch
):
    """What the driver can tell is refused before Ray starts (half a minute; and at an address where
    no cluster answers `ray.init` retried without end), and `--ray-address` without Ray too (it was
    ignored). The workers' working folder is Ray's: every local path reaches them absolute (a
    relative `--init-from` was "not a finished run" there, and so would a relative vectors file be)."""
    import ray

    from keras_textattn.run_folder import RunError
    from keras_textattn.training import TrainConfig
    from keras_textattn.training import train
    from keras_textattn.training.ray_launcher import worker_arguments

    folder, _ = sst2_shards
    options = dict(
        model="scalable_attention", data=str(folder / "train-*.csv.gz"), workers=2, distribute="ray", verbose=0
    )
    with pytest.raises(RunError, match="already holds a finished run"):
        train(output=multi_worker_run[0], **options)
    (port,) = _free_ports(1)
    with pytest.raises(
        RunError,
        match=rf"no Ray cluster answers at 127\.0\.0\.1:{port} \(--ray-address, else "
        r"RAY_ADDRESS\): .*; start one there \(ray start --head\), or give neither",
    ):
        train(output=str(tmp_path / "run"), ray_address=f"127.0.0.1:{port}", **options)
    assert not ray.is_initialized() and not (tmp_path / "run").exists()
    with pytest.raises(
        RunError, match="--ray-address names the Ray cluster of --distribute ray; got distribute 'none'"
    ):
        train(
            "scalable_attention", str(folder / "train-*.csv.gz"), str(tmp_path / "run"), ray_address="auto", verbose=0
        )

    monkeypatch.chdir(tmp_path)
    for name in ("texts.csv", "vectors.txt", "word2vec"):  # a file named as word2vec is still the name
        (tmp_path / name).write_text("")
    (tmp_path / "source").mkdir()
    config = TrainConfig(
        test_data="ag_news", init_from="source", embeddings="vectors.txt", distribute="ray", workers=2, verbose=0
    )
    assert worker_arguments("texts.csv", "out", config) == (
        str(tmp_path / "texts.csv"),
        str(tmp_path / "out"),
        dataclasses.replace(
            config,
            distribute="multi-worker",
            workers=None,
            init_from=str(tmp_path / "source"),
            embeddings=str(tmp_path / "vectors.txt"),
        ),
    )
    for name in ("word2vec", "glove-6b-50d"):
        assert worker_arguments("texts.csv", "out", dataclasses.replace(config, embeddings=name))[2].embeddings == name


def test_a_run_that_samples_windows_learns_and_records_it(shared_data, tmp_path):
    """`--sample-windows` on 3,000 IMDB reviews read at 64 tokens (nearly every review is longer):
    the run trains on random windows, learns well above chance, and records the choice in run.json
    (which a resumed run must repeat)."""
    with gzip.open(shared_data / "imdb" / "train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    chosen = np.random.default_rng(0).permutation(len(rows))[:3000]
    path = tmp_path / "train.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["label", "text"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows[i] for i in chosen)
    command = ["train", "--model", "scalable_attention", "--data", str(path), "--sequence-length", "64"]
    assert main([*command, "--sample-windows", "--output", str(tmp_path / "run"), "--quiet"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["accuracy"]["validation"] > 0.65
    assert json.loads((tmp_path / "run" / "run.json").read_text())["sample_windows"] is True
