"""A user's finished runs and exports survive mistakes, kills, Ctrl-C and damaged files (#17).

Kills are real: a training subprocess gets SIGKILL (or SIGINT, as Ctrl-C sends) at the
moment a checkpoint file appears on disk.
"""

import errno
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from keras_textattn._files import check_output
from keras_textattn._files import write_folder_atomically
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import save_encoder
from keras_textattn.text import TextEncoder
from keras_textattn.training.backup import check_room_for_weights
from keras_textattn.training.backup import restore
from keras_textattn.tuning.config import load_config
from keras_textattn.tuning.search import _check_same_search
from keras_textattn.tuning.search import _record_search
from keras_textattn_cli import main

from .test_train import SMALL_SCALABLE
from .test_train import TIMEOUT
from .test_train import _command
from .test_train import _kill_when
from .test_train import _metrics
from .test_train import _run
from .test_train import _run_here

pytestmark = pytest.mark.xdist_group("no_lost_work")  # one worker trains the shared finished run


def _data(shared_data):
    """SST-2's 1,821 test sentences to train on: the machinery, not accuracy, is tested here."""
    return [
        "--data",
        str(shared_data / "sst2" / "test.csv.gz"),
        "--test-data",
        str(shared_data / "sst2" / "dev.csv.gz"),
    ]


def _snapshot(folder):
    """Every file below `folder`, hidden ones included: relative path -> content hash."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, folder)] = hashlib.sha256(handle.read()).hexdigest()
    return found


def _one_error_line(capsys):
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("keras-textattn: error: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory, shared_data):
    folder = tmp_path_factory.mktemp("finished") / "run"
    assert main(["train", *SMALL_SCALABLE, *_data(shared_data), "--output", str(folder), "--epochs", "1"]) == 0
    return folder


@pytest.fixture
def run_copy(finished, tmp_path):
    return shutil.copytree(finished, tmp_path / "run")


def _train_args(shared_data, output, *extra):
    return ["train", *SMALL_SCALABLE, *_data(shared_data), "--output", str(output), "--epochs", "1", *extra]


# ------------------------------------------------------------ --overwrite (1)
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--data", "smal.csv"], "Data file not found: 'smal.csv'"),  # a typo: checked before anything changes
        (["--set", "no_such_argument=1"], "no_such_argument"),  # fails after the old run was moved aside
    ],
)
def test_overwrite_that_fails_keeps_the_finished_run(shared_data, run_copy, tmp_path, capsys, extra, message):
    before = _snapshot(tmp_path)
    assert main(_train_args(shared_data, run_copy, "--overwrite", *extra)) == 2
    assert message in _one_error_line(capsys)
    assert _snapshot(tmp_path) == before


def test_overwrite_refuses_a_folder_that_is_not_a_run(shared_data, tmp_path, capsys):
    folder = tmp_path / "thesis"
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.txt").write_text("four years of work")
    (folder / "sub" / "data.bin").write_bytes(b"\x00\x01")
    before = _snapshot(tmp_path)
    for extra in (["--overwrite"], []):
        assert main(_train_args(shared_data, folder, *extra)) == 2
        assert "is not a run folder (it holds sub, thesis.txt)" in _one_error_line(capsys)
    assert _snapshot(tmp_path) == before


def test_killed_overwrite_is_rolled_back_by_the_next_command(shared_data, run_copy, tmp_path, capsys):
    before = _snapshot(run_copy)
    aside = tmp_path / ".replaced-run"
    _kill_when(
        _train_args(shared_data, run_copy, "--overwrite")[1:],
        lambda: aside.is_dir() and (run_copy / "run.json").exists(),
    )
    assert aside.is_dir() and not (run_copy / "metrics.json").exists()  # killed halfway
    # Meanwhile predict names the kept previous run (it said "not a finished run folder"), and reads it.
    capsys.readouterr()
    assert main(["predict", "--run", str(run_copy), "a good film"]) == 2
    assert _one_error_line(capsys) == (
        f"keras-textattn: error: {run_copy} holds a replacement that was interrupted (killed); the previous run is "
        f"kept in {aside}: give --run {aside} to use it, or run the train command again, which puts it back first"
    )
    assert main(["predict", "--run", str(aside), "a good film"]) == 0
    capsys.readouterr()
    # The next command on the folder finds the old run back in place, and says so (here it then refuses
    # to replace it; with --overwrite it would replace it again, from epoch 1, and say that).
    said = f"{run_copy}: a replacement of this run was interrupted (killed); its previous run was put back"
    with pytest.warns(UserWarning, match=f"^{re.escape(said)}$"):
        assert main(_train_args(shared_data, run_copy)) == 2
    assert _one_error_line(capsys) == (
        f"keras-textattn: error: {run_copy} already holds a finished run; pass overwrite=True (--overwrite) to "
        f"replace it, or choose another output (with init_from={str(run_copy)!r}, --init-from, to train it further)"
    )
    assert _snapshot(run_copy) == before and not aside.exists()


def test_predict_during_a_replacement_names_the_process_and_the_kept_run(finished, tmp_path, capsys):
    """`predict` on a run that `train --overwrite` is replacing said "encoder.keras is damaged ... was
    its writing interrupted?" or "not a finished run folder": it names the process replacing it and
    the previous run kept meanwhile, which it reads when given."""
    from keras_textattn._files import locked

    run, aside = tmp_path / "run", tmp_path / ".replaced-run"
    shutil.copytree(finished, aside)
    run.mkdir()
    (run / "run.json").write_text("{}")  # the new run, half-written
    with locked(run):  # as the replacing train holds it: this process is the one named
        assert main(["predict", "--run", str(run), "a good film"]) == 2
        line = _one_error_line(capsys)
        assert line.startswith(
            f"keras-textattn: error: {run} is being replaced by process {os.getpid()} (train --overwrite, started "
        )
        assert line.endswith(
            f"); the previous run is kept in {aside} until it finishes: give --run {aside} to use it meanwhile"
        )
        assert main(["predict", "--run", str(aside), "a good film"]) == 0


# -------------------------------------------------------- export targets (2)
@pytest.mark.parametrize("where", ["the run", "inside", "around"])
def test_export_never_writes_over_its_run(run_copy, tmp_path, capsys, where):
    output = {"the run": run_copy, "inside": run_copy / "export", "around": tmp_path}[where]
    before = _snapshot(tmp_path)
    assert main(["export", "--run", str(run_copy), "--format", "tflite", "--output", str(output), "--overwrite"]) == 2
    assert "choose an output outside the run folder" in _one_error_line(capsys)
    assert _snapshot(tmp_path) == before


# ------------------------------------------------------ late kills (3) and (4)
@pytest.mark.parametrize(
    "epochs, sig",
    [
        (1, signal.SIGKILL),  # after the last epoch: training is done, evaluation and files are not
        # At the start of epoch 2, with --checkpoint-every beyond it: Ctrl-C (a SIGKILL there resumes the
        # same way: test_train's killed run, stopped in its second epoch).
        (2, signal.SIGINT),
    ],
    ids=["kill-after-fit", "ctrl-c-next-epoch"],
)
def test_stopped_after_an_epoch_resumes_after_it(shared_data, tmp_path, capsys, epochs, sig):
    output = tmp_path / "run"
    args = [
        *SMALL_SCALABLE,
        *_data(shared_data),
        "--output",
        str(output),
        "--epochs",
        str(epochs),
        "--checkpoint-every",
        "1000",
        "--batch-size",
        "64",
    ]  # 26 batches an epoch
    end_of_first_epoch = output / "backup" / "epoch-0001-batch-000000.weights.h5"
    stderr = _kill_when(args, end_of_first_epoch.exists, sig)
    if sig == signal.SIGINT:
        assert stderr.strip().splitlines()[-1] == (  # no "(a replaced run was kept)": nothing was replaced
            "keras-textattn: interrupted; run the same command to resume from the last checkpoint"
        )
    assert not (output / "metrics.json").exists()
    (output / ".tmp-x8q2model.keras").write_bytes(b"PK")  # as a kill inside save_run leaves
    status, err = _run_here(args, capsys)
    assert status == 0, err[-2000:]
    metrics = _metrics(output)
    assert metrics["resumed_from_epoch"] == 1
    assert metrics["history"]["epoch"] == [float(e) for e in range(epochs)]  # no epoch trained twice
    assert len(metrics["seconds_per_epoch"]) == epochs
    assert sorted(os.listdir(output)) == [
        "encoder.keras",
        "history.csv",
        "labels.json",
        "logs",
        "metrics.json",
        "model.keras",
        "run.json",
        "vocabulary.txt",
    ]


def test_a_full_disk_stops_training_in_one_line_and_the_same_command_resumes(shared_data, small_disk, capsys):
    """On a disk with room for one checkpoint, training stops at the second in one line (exit 2)
    that says where and what next; with room again, the same command resumes after the first.
    HDF5 failing mid-checkpoint used to leave a file it could not close: a segfault at exit."""
    disk, remount = small_disk
    remount("size=800k")  # the run's files and one checkpoint (~600 KB), not two
    output = disk / "run"
    args = [*SMALL_SCALABLE, *_data(shared_data), "--output", str(output), "--epochs", "2"]
    result = _run(args)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"keras-textattn: error: no space left on the device that holds {output / 'backup'}: free some space there, "
        "then run the same command again: it resumes from the last checkpoint, if any"
    )
    assert os.listdir(output / "backup") == ["epoch-0001-batch-000000.weights.h5"]  # no temporary file left
    remount("size=4m")
    status, err = _run_here(args, capsys)
    assert status == 0, err[-2000:]
    assert _metrics(output)["resumed_from_epoch"] == 1


@pytest.mark.parametrize("allocation", ["asked", "refused"])
def test_room_for_a_checkpoint_is_asked_of_the_file_system(allocation, small_disk, monkeypatch):
    """Where the OS allocates room on request (Linux), `check_room_for_weights` allocates what the
    weights need in a file it removes at once; on a file system that refuses to allocate ahead
    (EOPNOTSUPP), it reads the free space instead. Either way: refused on a disk without that
    room, with the checkpoint's path; accepted where it fits; nothing left behind."""
    disk, _ = small_disk
    assert hasattr(os, "posix_fallocate")  # the tests run on Linux (CI too)
    if allocation == "refused":

        def unsupported(handle, offset, length):
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

        monkeypatch.setattr(os, "posix_fallocate", unsupported)
    small, large = keras.Sequential([keras.layers.Dense(4)]), keras.Sequential([keras.layers.Dense(256)])
    small.build((None, 4)), large.build((None, 1024))  # weights of 80 B and 1 MB, on 256 KiB
    check_room_for_weights(small, disk / "small.weights.h5")
    with pytest.raises(OSError) as raised:
        check_room_for_weights(large, disk / "large.weights.h5")
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, disk / "large.weights.h5")
    assert os.listdir(disk) == []


def test_a_used_up_disk_quota_stops_training_in_one_line(shared_data, tmp_path, capsys, used_up_quota):
    """A disk quota (shared clusters) used up: the file system refuses the checkpoint's room with
    EDQUOT although its free space, which the quota does not show, is ample. Training stops before
    HDF5 starts writing (exit 2, one line saying so and what next)."""
    output = tmp_path / "run"
    status, err = _run_here([*SMALL_SCALABLE, *_data(shared_data), "--output", str(output), "--epochs", "1"], capsys)
    assert status == 2
    assert err.strip().splitlines()[-1] == (
        f"keras-textattn: error: your disk quota is used up on the device that holds {output / 'backup'}: free some "
        "of your space there, then run the same command again: it resumes from the last checkpoint, if any"
    )
    assert os.listdir(output / "backup") == []


# ------------------------------------------------- export swap after a kill (5)
def test_export_swap_killed_between_its_renames_is_rolled_back(tmp_path):
    target = tmp_path / "models" / "1"

    def write(content):
        return lambda folder: open(os.path.join(folder, "saved_model.pb"), "w").write(content)

    entries = {"saved_model.pb"}
    write_folder_atomically(target, write("old"), entries)
    # Killed between the two renames: the old export is at .old-1, the target is missing.
    os.replace(target, tmp_path / "models" / ".old-1")
    with pytest.raises(FileExistsError):  # the old export is back, so a plain export is refused
        check_output(target, False, entries)
    assert (target / "saved_model.pb").read_text() == "old"
    # Killed after them: only the old copy is left, and it is deleted.
    shutil.copytree(target, tmp_path / "models" / ".old-1")
    write_folder_atomically(target, write("new"), entries, overwrite=True)
    assert (target / "saved_model.pb").read_text() == "new"
    assert sorted(os.listdir(tmp_path / "models")) == ["1"]


# ---------------------------------------------------------- stuck states
def test_lock_arguments_and_resume(shared_data, tmp_path, capsys):
    """A second process on the folder is refused; a resume must repeat the run's arguments."""
    output = tmp_path / "run"
    args = [*SMALL_SCALABLE, *_data(shared_data), "--output", str(output), "--epochs", "2", "--checkpoint-every", "20"]
    process = subprocess.Popen(_command(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (output / "backup").is_dir():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert main(["train", *args]) == 2
        assert f"is in use by process {process.pid}" in _one_error_line(capsys)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    before = _snapshot(tmp_path)
    changed = [*args, "--sequence-length", "32", "--set", "fc_units=8"]
    assert main(["train", *changed]) == 2
    line = _one_error_line(capsys)
    assert "unfinished run started with other arguments" in line
    assert "sequence_length 24 -> 32" in line and "model_kwargs" in line
    assert _snapshot(tmp_path) == before
    # A run.json from before the optimizer options (Adam, no decay, the rate and batch it trained with,
    # the vocabulary's old default) asks for them, rather than resuming with another optimizer.
    stored = (output / "run.json").read_text()
    old = {name: value for name, value in json.loads(stored).items() if name not in ("optimizer", "weight_decay")}
    (output / "run.json").write_text(json.dumps({**old, "batch_size": 32, "learning_rate": 0.001, "min_frequency": 1}))
    assert main(["train", *args]) == 2
    line = _one_error_line(capsys)
    for change in (
        "batch_size 32 -> None",
        "optimizer 'adam' -> None",
        "learning_rate 0.001 -> None",
        "weight_decay 0.0 -> None",
        "min_frequency 1 -> None",
    ):
        assert change in line
    (output / "run.json").write_text(stored)
    assert main(["train", *args]) == 0  # the same arguments resume it
    assert _metrics(output)["resumed_from_epoch"] in (0, 1) and _metrics(output)["history"]["epoch"] == [0.0, 1.0]


def test_unreadable_checkpoints_are_named(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile("adam", "mse")
    folder = tmp_path / "backup"
    folder.mkdir()
    for name in ("epoch-0001-batch-000000.weights.h5", "epoch-0000-batch-000020.weights.h5"):
        (folder / name).write_bytes(b"")
    with pytest.warns(UserWarning, match="skipping the damaged checkpoint"):
        with pytest.raises(
            RunError, match=r"epoch-0001-batch-000000.weights.h5, .*epoch-0000-batch-000020.weights.h5 are damaged"
        ):
            restore(model, str(folder))
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    model.save_weights(folder / "epoch-0000-batch-000020.weights.h5")
    with pytest.warns(UserWarning):
        assert restore(model, str(folder)) == 0  # the older, readable one
    # Checkpoints of another model (a run started with a version whose preset built other layers)
    # are not called damaged: the error says what they are and what to do.
    (folder / "epoch-0001-batch-000000.weights.h5").unlink()
    wider = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(2)])
    wider.compile("adam", "mse")
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer"):  # Keras's, on its way to the error
        with pytest.warns(UserWarning, match="whose weights do not fit this model"):
            with pytest.raises(
                RunError,
                match=r"hold the weights of another model than these arguments build \(Keras: .*"
                r"could not be loaded.*\); was the run started with another version",
            ):
                restore(wider, str(folder))


def test_tuning_directory_of_another_config_is_refused(tmp_path):
    config = load_config("tuner_configs/lama.yaml")
    _check_same_search(tmp_path, config, "random")
    _record_search(tmp_path, config, "random")
    config.max_trials += 5  # more trials continue the same search
    _check_same_search(tmp_path, config, "random")
    with pytest.raises(RunError, match="holds a random search; resume it with --tuner random"):
        _check_same_search(tmp_path, config, "bayesian")
    config.hyperparameters["num_heads"]["max"] = 8
    with pytest.raises(RunError, match="search of another config .*differs in hyperparameters"):
        _check_same_search(tmp_path, config, "random")
    # A record from before the tuner was recorded resumes with any.
    recorded = json.loads((tmp_path / "search.json").read_text())
    del recorded["tuner"]
    (tmp_path / "search.json").write_text(json.dumps(recorded))
    config.hyperparameters["num_heads"]["max"] = 30
    _check_same_search(tmp_path, config, "bayesian")


@pytest.mark.parametrize(
    "damage, file, message",
    [
        (
            lambda run: (run / "labels.json").write_text('["only"]'),
            "labels.json",
            "names 1 classes, but model.keras has 2",
        ),
        (lambda run: (run / "labels.json").write_text("[0, 1]"), "labels.json", "must be a list of class names"),
        (lambda run: (run / "labels.json").write_text('{"a": 1}'), "labels.json", "must be a list of class names"),
        (lambda run: (run / "labels.json").write_text(""), "labels.json", "is not valid JSON"),
        (lambda run: _truncate(run / "model.keras"), "model.keras", "damaged: not a complete .keras file"),
        (lambda run: _small_encoder(run / "encoder.keras"), "encoder.keras", "do not belong together"),
    ],
    ids=["one-label", "integer-labels", "dict-labels", "empty-labels", "half-model", "cut-vocabulary"],
)
def test_damaged_run_folder_is_named(run_copy, capsys, damage, file, message):
    damage(run_copy)
    with pytest.raises(RunError, match=message) as error:
        load_run(run_copy)
    assert str(run_copy / file) in str(error.value)
    assert main(["explain", "--run", str(run_copy), "some text"]) == 2
    assert message in _one_error_line(capsys)


def test_save_run_refuses_parts_that_would_not_load(finished, tmp_path):
    """`save_run` wrote a folder of any model, encoder and names, which `load_run` then refused
    (or, for a string of names, read as letters); now it checks the parts and writes nothing."""
    from keras_textattn.errors import UserError
    from keras_textattn.run_folder import save_run

    model, encoder, _ = load_run(finished)
    other = TextEncoder(sequence_length=24)
    other.adapt(["one two three four five six seven eight"])
    subclassed = type("Subclassed", (keras.Model,), {"call": lambda self, x: x})()
    for parts, message in (
        ((model, encoder, ["a", "b", "c"], {}), "3 label names for a model of 2 outputs: ['a', 'b', 'c']"),
        ((model, encoder, "ab", {}), "got the string 'ab'"),
        ((model, other, ["a", "b"], {}), "the encoder has a vocabulary of 10 tokens, but the model embeds"),
        ((model, TextEncoder(), ["a", "b"], {}), "`encoder` has no vocabulary (adapt it to the training texts first)"),
        ((model, "encoder.keras", ["a", "b"], {}), "`encoder` must be the model's TextEncoder; got str"),
        (("model.keras", encoder, ["a", "b"], {}), "`model` must be a Keras model; got str"),
        ((subclassed, encoder, ["a", "b"], {}), "`model` must have defined inputs and outputs"),
        ((model, encoder, ["a", "b"], None), "`metrics` must be a dict (metrics.json); got NoneType"),
    ):
        with pytest.raises(UserError, match=re.escape(message)):
            save_run(tmp_path / "run", *parts)
        assert not (tmp_path / "run").exists()
    save_run(tmp_path / "run", model, encoder, ("neg", "pos"), {})
    assert load_run(tmp_path / "run")[2] == ["neg", "pos"]


def test_a_run_folder_loads_with_only_its_module(finished):
    """`keras_textattn.run_folder` alone (a fresh process) loads a run: it registers what the files hold."""
    code = "import sys; from keras_textattn.run_folder import load_run; print(load_run(sys.argv[1])[2])"
    result = subprocess.run([sys.executable, "-c", code, str(finished)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "['0', '1']"


def _truncate(path):
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) // 2)


def _small_encoder(path):
    encoder = TextEncoder(sequence_length=24)
    encoder.adapt(["one two three four five six seven eight"])
    save_encoder(str(path), encoder)


# ------------------------------------------------------ one line, not a traceback
def _bad_files(folder):
    rows = "label,text\n" + "".join(f"{i % 2},text number {i}\n" for i in range(40))
    with gzip.open(folder / "full.csv.gz", "wt") as handle:
        handle.write(rows)
    data = (folder / "full.csv.gz").read_bytes()
    (folder / "truncated.csv.gz").write_bytes(data[: len(data) // 2])
    (folder / "plain.csv.gz").write_text(rows)
    return folder


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--data", "{files}/truncated.csv.gz"], "truncated.csv.gz: cannot be read: it ends early"),
        (["--data", "{files}/plain.csv.gz"], "plain.csv.gz: cannot be read: not valid gzip"),
        (["--epochs", "0"], "epochs must be a positive number; got 0"),
        (["--batch-size", "0"], "batch-size must be a positive number; got 0"),
        (["--learning-rate", "-1"], "learning-rate must be a positive number"),
        (["--checkpoint-every", "0"], "checkpoint-every must be a positive number"),
        (
            ["--validation-fraction", "0.001"],
            "the validation split has no rows: the validation carve",
        ),  # crashed in Keras
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(tmp_path, capsys, extra, message):
    (tmp_path / "files").mkdir()
    files = _bad_files(tmp_path / "files").as_posix()
    args = ["train", "--model", "bigru", "--data", f"{files}/full.csv.gz", "--output", str(tmp_path / "run")]
    before = _snapshot(tmp_path)
    assert main(args + [a.format(files=files) for a in extra]) == 2
    assert message in _one_error_line(capsys)
    assert _snapshot(tmp_path) == before and not (tmp_path / "run").exists()


def test_byte_order_mark_and_mixed_labels(tmp_path):
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets import load_dataset

    path = tmp_path / "excel.csv"
    path.write_bytes("label,text\n0,good\n1,bad\npos,great\n".encode("utf-8-sig"))
    with pytest.warns(UserWarning, match=r"the labels mix integers \['0', '1'\] and names \['pos'\]"):
        data = load_dataset(LocalFile(str(path)), splits=("train",))
    assert data.label_names == ["0", "1", "pos"]
    assert [t.decode() for t, _ in data["train"].as_numpy_iterator()] == ["good", "bad", "great"]
    # Labels of one class spelt in two cases were two classes, silently; still two, with a warning.
    path.write_text("label,text\nPos,good\nneg,bad\npos,great\nNEG,awful\nmixed,so so\n")
    with pytest.warns(
        UserWarning,
        match=r"labels that differ only in case are classes of their own: 'NEG' and "
        r"'neg', 'Pos' and 'pos'$",
    ):
        data = load_dataset(LocalFile(str(path)), splits=("train",))
    assert data.label_names == ["NEG", "Pos", "mixed", "neg", "pos"]
    # A header read as a row (--no-header by mistake) was a class of one row, silently.
    path.write_text("label,text\npos,good\nneg,bad\npos,great\nneg,awful\n")
    with pytest.warns(UserWarning, match=r"excel.csv: row 1's label 'label' is on no other row; is row 1 a header\?"):
        data = load_dataset(LocalFile(str(path), header=False, text_column=1, label_column=0), splits=("train",))
    assert data.label_names == ["label", "neg", "pos"]
