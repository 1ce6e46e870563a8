"""A run encodes each text once: its token ids are kept, in memory where they fit, else (and for
streamed data) in files of the run folder, removed when the run is finished."""

import csv
import gzip
import os

import keras
import numpy as np

import keras_textattn.datasets.pipeline as pipeline
import keras_textattn.training.run as run_module
from keras_textattn.datasets import LocalFile
from keras_textattn.run_folder import IDS_FOLDER
from keras_textattn.run_folder import load_run
from keras_textattn.training import train

CALLBACKS = run_module._callbacks
SMALL = dict(epochs=2, sequence_length=24, max_tokens=2000, model_kwargs={"embedding_dim": 16}, verbose=0, seed=0)


def _trec_rows(shared_data, path, rows=600):
    """A plain CSV of TREC's header and first `rows` rows at `path`."""
    with gzip.open(shared_data / "trec" / "train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        lines = list(csv.reader(handle))[: rows + 1]
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(lines)
    return lines


class _AfterFirstEpoch(keras.callbacks.Callback):
    """Records the ids folder's files at the first epoch's end and then calls `then()`."""

    def __init__(self, folder, then=lambda: None):
        super().__init__()
        self.folder, self.then, self.files = folder, then, None

    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            self.files = sorted(os.listdir(self.folder)) if os.path.isdir(self.folder) else []
            self.then()


def _trained(monkeypatch, data, output, then=lambda: None):
    """`train` on `data` into `output`, watched by `_AfterFirstEpoch`: (metrics, the watcher)."""
    watcher = _AfterFirstEpoch(os.path.join(output, IDS_FOLDER), then)
    monkeypatch.setattr(run_module, "_callbacks", lambda *args: [*CALLBACKS(*args), watcher])
    metrics = train("scalable_attention", data, str(output), **SMALL)
    return metrics, watcher


def _weights(output):
    return [np.asarray(w) for w in load_run(str(output))[0].weights]


def test_streamed_texts_are_encoded_once_and_their_ids_read_from_the_run_folder(shared_data, tmp_path, monkeypatch):
    """A streamed file's ids are written to the run folder in the first epoch and read from there
    in the second: with every text of the file changed after the first epoch, the run trains and
    scores as it does with the file unchanged (it read the file again each epoch before). The
    files are gone once the run is finished."""
    path = tmp_path / "trec.csv"
    lines = _trec_rows(shared_data, path)
    reference, watched = _trained(monkeypatch, LocalFile(str(path), stream=True), tmp_path / "reference")

    def change_the_texts():
        with open(path, "w", encoding="utf-8", newline="") as handle:
            csv.writer(handle).writerows([lines[0], *([row[0], "what what what"] for row in lines[1:])])

    changed, watcher = _trained(monkeypatch, LocalFile(str(path), stream=True), tmp_path / "changed", change_the_texts)
    assert watched.files == watcher.files
    assert {"train.index", "validation.index"} <= set(watcher.files)
    assert changed["accuracy"] == reference["accuracy"]
    assert all(np.array_equal(a, b) for a, b in zip(_weights(tmp_path / "changed"), _weights(tmp_path / "reference")))
    assert not (tmp_path / "changed" / IDS_FOLDER).exists()


def test_ids_too_large_for_memory_train_as_ids_in_memory_do(shared_data, tmp_path, monkeypatch):
    """Where the ids do not fit in memory (`IDS_MEMORY_SHARE`), they are kept in the run folder
    instead, and the run is the same to the weight; where they fit, nothing is written there."""
    path = tmp_path / "trec.csv"
    _trec_rows(shared_data, path)
    in_memory, memory_watcher = _trained(monkeypatch, str(path), tmp_path / "memory")
    monkeypatch.setattr(pipeline, "IDS_MEMORY_SHARE", 0.0)
    on_disk, disk_watcher = _trained(monkeypatch, str(path), tmp_path / "disk")
    assert memory_watcher.files == []
    assert {"train.index", "validation.index"} <= set(disk_watcher.files)
    assert on_disk["accuracy"] == in_memory["accuracy"]
    assert all(np.array_equal(a, b) for a, b in zip(_weights(tmp_path / "disk"), _weights(tmp_path / "memory")))
    assert not (tmp_path / "disk" / IDS_FOLDER).exists()


def test_no_room_for_the_ids_stops_the_run_before_the_first_epoch(shared_data, tmp_path, capsys, used_up_quota):
    """The room for a streamed split's ids is asked of the file system before the first epoch: a
    used-up quota stops the run there, in one line naming where and what next, and the run
    folder, which holds nothing trained, is removed."""
    from keras_textattn_cli import main

    path, output = tmp_path / "trec.csv", tmp_path / "run"
    _trec_rows(shared_data, path)
    status = main(["train", "--model", "scalable_attention", "--data", str(path), "--stream", "--output", str(output)])
    assert status == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"keras-textattn: error: your disk quota is used up on the device that holds {tmp_path}: free "
        "some of your space there, then run the same command again: it resumes from the last checkpoint, if any"
    )
    assert not output.exists()
