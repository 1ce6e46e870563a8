"""Streamed local data: shards on disk made from the shared datasets."""

import collections
import csv
import gzip
import io
import json
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from keras_textattn.datasets import DataError
from keras_textattn.datasets import LocalFile
from keras_textattn.datasets import load_dataset
from keras_textattn.training import train
from keras_textattn_cli import main


def _table(path):
    with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def _write_csv(path, header, rows):
    with gzip.open(path, "wt", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        if header:
            writer.writerow(header)
        writer.writerows(rows)
    return path


def _rows(dataset):
    return [(text.decode(), int(label)) for text, label in dataset.as_numpy_iterator()]


@pytest.fixture
def trec(shared_data):
    """TREC's training file: `(path, header, rows)`."""
    path = shared_data / "trec" / "train.csv.gz"
    return (path, *_table(path))


@pytest.fixture
def trec_shards(trec, tmp_path):
    """TREC's training rows dealt into three gzip CSV shards in a folder (with a README beside them)."""
    _, header, rows = trec
    folder = tmp_path / "shards"
    folder.mkdir()
    for index in range(3):
        _write_csv(folder / f"train-{index}.csv.gz", header, rows[index::3])
    (folder / "README.md").write_text("not data")
    (folder / "LICENSE.txt").write_text("not data either")  # a .txt given by name reads as CSV; in a folder, never
    return folder


def test_streamed_file_equals_in_memory_reading_and_training(trec, tmp_path):
    path = str(trec[0])
    splits = ("train", "validation")
    in_memory, streamed = load_dataset(LocalFile(path), splits), load_dataset(LocalFile(path, stream=True), splits)
    assert not in_memory.streamed and streamed.streamed
    assert in_memory.rows == streamed.rows and sum(streamed.rows.values()) == len(trec[2])
    assert 0.08 < streamed.rows["validation"] / len(trec[2]) < 0.12
    for split in splits:  # the same rows in the same order, the same validation carve
        assert _rows(in_memory[split]) == _rows(streamed[split])

    options = dict(
        epochs=1,
        sequence_length=16,
        max_tokens=2000,
        shuffle=False,
        verbose=0,
        model_kwargs={"embedding_dim": 8, "fc_units": 8},
    )
    losses = [
        train("scalable_attention", path, str(tmp_path / name), stream=stream, **options)["history"]["loss"]
        for name, stream in (("memory", None), ("stream", True))
    ]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)


def test_glob_folder_jsonl_and_tfrecord_read_the_same_rows(trec, trec_shards, tmp_path):
    _, header, rows = trec
    names = sorted({label for label, _, _ in rows})
    expected = collections.Counter((text, names.index(label)) for label, text, _ in rows)
    jsonl = tmp_path / "train.jsonl.gz"
    with gzip.open(jsonl, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"text": text, "label": label, "fine": fine}) + "\n" for label, text, fine in rows)
    for index in range(2):
        with tf.io.TFRecordWriter(str(tmp_path / f"train-{index}.tfrecord")) as writer:
            for label, text, _ in rows[index::2]:
                features = {
                    "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[names.index(label)])),
                }
                writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    sources = {
        "glob": str(trec_shards / "train-*.csv.gz"),
        "folder": str(trec_shards),
        "jsonl": str(jsonl),
        "tfrecord": str(tmp_path / "train-*.tfrecord"),
    }
    for name, source in sources.items():
        data = load_dataset({"train": LocalFile(source)}, ("train",))
        assert data.streamed, name
        assert data.label_names == ([str(i) for i in range(6)] if name == "tfrecord" else names), name
        assert collections.Counter(_rows(data["train"])) == expected, name
        assert data.rows == {"train": len(rows)}, name


def test_bad_shards_are_named_and_skip_bad_rows_counts_them(trec, trec_shards, capsys):
    _, header, rows = trec
    _write_csv(trec_shards / "train-3.csv.gz", ["label", "question", "fine_label"], rows[:5])
    with pytest.raises(
        DataError,
        match=r"train-3.csv.gz, row 1: its header \['label', 'question', 'fine_label'\] "
        r"differs from the header of .*train-0.csv.gz",
    ):
        load_dataset(str(trec_shards), ("train",))
    (trec_shards / "train-3.csv.gz").unlink()

    bad_row = [rows[0][0], "a row, with a column too many", rows[0][2], "extra"]
    _write_csv(trec_shards / "train-3.csv.gz", header, [rows[0], bad_row, rows[1]])
    text = io.StringIO()
    csv.writer(text).writerows([header, *rows[:2000]])
    whole = gzip.compress(text.getvalue().encode())
    (trec_shards / "train-4.csv.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataError, match=r"train-3.csv.gz, row 3: expected 3 columns like the first row, found 4"):
        load_dataset(str(trec_shards), ("train",))
    (trec_shards / "train-3.csv.gz").unlink()
    with pytest.raises(DataError, match=r"train-4.csv.gz: cannot be read: it ends early \(truncated\?\)"):
        load_dataset(str(trec_shards), ("train",))
    _write_csv(trec_shards / "train-3.csv.gz", header, [rows[0], bad_row, rows[1]])

    data = load_dataset(str(trec_shards), ("train",), skip_bad_rows=True)
    skipped = data.skipped["train"]
    assert skipped["rows"] == 1 and [name.rsplit("/", 1)[1] for name in skipped["files"]] == ["train-4.csv.gz"]
    assert "row 3: expected 3 columns" in skipped["first"]
    assert data.rows["train"] == len(rows) + 2 == len(_rows(data["train"]))  # the whole shards and two good rows

    # The command line: one line, no traceback.
    code = main(["train", "--model", "scalable_attention", "--data", str(trec_shards), "--output", "unused", "--quiet"])
    error = capsys.readouterr().err.strip()
    assert code == 2 and len(error.splitlines()) == 1 and "row 3: expected 3 columns" in error


def test_a_file_that_is_not_a_tfrecord_is_named_as_such(tmp_path):
    """TensorFlow reads a file shorter than a record's header as a TFRecord of no records, without
    an error ("the file is empty", or no rows from that shard), a file cut inside a later header
    as its whole records (the rows after them lost in silence), and wraps its error on a longer
    one in op names: each is one line naming the file, streamed (train) and read whole (predict)."""
    from keras_textattn.datasets.formats import read_labelled_texts

    folder = tmp_path / "records"
    folder.mkdir()
    with tf.io.TFRecordWriter(str(folder / "part-0.tfrecord")) as writer:
        for text, label in (("What is a cat ?", 0), ("Who won ?", 1)):
            features = {
                "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    (folder / "part-1.tfrecord").write_bytes(b"garbage\n")  # 8 bytes: no record header
    (tmp_path / "notes.tfrecord").write_text("these are notes, not records\n")
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    short = f"{folder / 'part-1.tfrecord'}: cannot be read: not a TFRecord file: it holds bytes but no whole record"
    with pytest.raises(DataError, match=re.escape(short)):
        load_dataset(str(folder), ("train",))
    data = load_dataset(str(folder), ("train",), skip_bad_rows=True)
    assert data.rows == {"train": 2} and [name.rsplit("/", 1)[1] for name in data.skipped["train"]["files"]] == [
        "part-1.tfrecord"
    ]
    with pytest.raises(DataError, match=re.escape(short.replace(": not", " (not") + ")")):
        read_labelled_texts(LocalFile(str(folder / "part-1.tfrecord")))
    notes = str(tmp_path / "notes.tfrecord")
    for read, message in (
        (lambda: load_dataset(notes, ("train",)), f"{notes}: cannot be read: corrupted record at 0"),
        (lambda: read_labelled_texts(LocalFile(notes)), f"{notes}: cannot be read (corrupted record at 0"),
    ):
        with pytest.raises(DataError) as error:
            read()
        assert str(error.value).startswith(message) and "{{" not in str(error.value) and "[Op:" not in str(error.value)
    # Cut inside the second record's header: TensorFlow reads the first record and stops, without an error.
    whole = (folder / "part-0.tfrecord").read_bytes()
    second = 12 + int.from_bytes(whole[:8], "little") + 4
    (tmp_path / "cut").mkdir()
    cut = tmp_path / "cut" / "part-0.tfrecord.gz"
    cut.write_bytes(gzip.compress(whole[: second + 5]))
    assert len(list(tf.data.TFRecordDataset(str(cut), compression_type="GZIP"))) == 1
    said = f"{cut}: cannot be read: it ends inside a record's header at byte {second} (truncated?)"
    for read, message in (
        (lambda: load_dataset(str(cut), ("train",)), said),
        (lambda: read_labelled_texts(LocalFile(str(cut))), said.replace(": it", " (it") + ")"),
    ):
        with pytest.raises(DataError, match=re.escape(message)):
            read()
    shutil.copy(folder / "part-0.tfrecord", tmp_path / "cut" / "part-1.tfrecord")
    data = load_dataset(str(tmp_path / "cut"), ("train",), skip_bad_rows=True)
    assert data.rows == {"train": 2} and data.skipped["train"]["files"] == [str(cut)]
    empty = str(tmp_path / "empty.tfrecord")  # no bytes: empty, as before
    with pytest.raises(DataError, match=re.escape(f"{empty}: the file is empty")):
        read_labelled_texts(LocalFile(empty))
    with pytest.raises(DataError, match=re.escape(f"{empty}: no data rows")):
        load_dataset(empty, ("train",))


def test_workers_read_disjoint_parts(trec, trec_shards):
    """Worker i of n: shards i, i+n, ... when there are at least n shards, else every n-th row."""
    data = load_dataset(str(trec_shards), ("train",))
    parts = [data.worker_split("train", worker, 2) for worker in range(2)]
    assert "reads 2 of 3 shards: train-0.csv.gz, train-2.csv.gz" in parts[0][1]
    assert "reads 1 of 3 shards: train-1.csv.gz" in parts[1][1]
    rows = [_rows(part) for part, _ in parts]
    assert collections.Counter(rows[0] + rows[1]) == collections.Counter(_rows(data["train"]))
    assert len(rows[1]) == data.rows["train"] // 3 + (data.rows["train"] % 3 > 1)

    single = load_dataset(str(trec[0]), ("train",))
    halves = [single.worker_split("train", worker, 2) for worker in range(2)]
    assert "reads one row in 2, from row 1 (one file)" in halves[1][1]
    all_rows = _rows(single["train"])
    assert _rows(halves[0][0]) == all_rows[0::2] and _rows(halves[1][0]) == all_rows[1::2]
