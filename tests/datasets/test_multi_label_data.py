"""Multi-label data: a label column of several labels (GoEmotions' ids, names), one 0/1 column per
label, JSONL lists, and the one-line refusals of what cannot be read as label sets."""

import gzip
import json
import warnings

import numpy as np
import pytest

from keras_textattn.datasets import DataError
from keras_textattn.datasets import LocalFile
from keras_textattn.datasets import load_dataset
from keras_textattn.datasets import load_labelled_data


def _label_rows(dataset):
    return [(text.decode(), labels.tolist()) for text, labels in dataset.as_numpy_iterator()]


def _write(path, content):
    path.write_text(content, encoding="utf-8")
    return str(path)


def test_goemotions_label_ids_are_read_as_sets_of_the_named_labels(shared_data):
    folder = shared_data / "goemotions"
    names = (folder / "labels.txt").read_text().split()
    file = LocalFile(str(folder / "train.tsv.gz"), text_column=0, label_column=1, header=False, label_delimiter=",")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "is row 1 a header?": a set seen nowhere else is no sign of one
        data = load_dataset({"train": file}, ["train"], label_names=names)
    assert data.multi_label and data.label_names == names
    labels = np.stack([labels for _, labels in data["train"].as_numpy_iterator()])
    assert labels.shape == (43_410, 28) and labels.dtype == np.float32
    # The README's counts: rows with 1 / 2 / 3 / 4 / 5 labels.
    assert np.bincount(labels.sum(axis=1).astype(int)).tolist() == [0, 36_308, 6_541, 532, 28, 1]
    # Row by row as the file writes them: "3,27" is admiration's neighbour ids 3 and 27.
    with gzip.open(folder / "train.tsv.gz", "rt", encoding="utf-8") as handle:
        first = [line.rstrip("\n").split("\t") for _, line in zip(range(200), handle)]
    for (_, ids, _), row in zip(first, labels):
        assert sorted(int(i) for i in ids.split(",")) == np.flatnonzero(row).tolist()


def test_named_labels_in_a_delimited_column_validation_carved_alike(tmp_path):
    rows = [f"text {i}\t{['joy', 'joy|love', 'anger', 'love|joy|anger'][i % 4]}" for i in range(40)]
    path = _write(tmp_path / "train.tsv", "text\tlabels\n" + "\n".join(rows) + "\n")
    data, _ = load_labelled_data(path, label_column="labels", multi_label=True, label_delimiter="|")
    assert data.label_names == ["anger", "joy", "love"]
    read = dict(_label_rows(data["train"]) + _label_rows(data["validation"]))
    assert len(read) == 40 and 0 < data.rows["validation"] < 40
    assert read["text 1"] == [0.0, 1.0, 1.0] and read["text 3"] == [1.0, 1.0, 1.0] and read["text 2"] == [1.0, 0, 0]


def test_one_column_per_label_names_the_labels_and_a_row_of_zeros_is_no_label(tmp_path):
    path = _write(
        tmp_path / "train.csv",
        "comment,toxic,insult,threat\nyou fool,1,1,0\nnice one,0,0,0\nor else,1,0,1\nthanks,0,0,0\n",
    )
    file = LocalFile(path, text_column="comment", label_column=["toxic", "insult", "threat"])
    data = load_dataset({"train": file}, ["train"])
    assert data.multi_label and data.label_names == ["toxic", "insult", "threat"]
    assert dict(_label_rows(data["train"])) == {
        "you fool": [1.0, 1.0, 0.0],
        "nice one": [0.0, 0.0, 0.0],
        "or else": [1.0, 0.0, 1.0],
        "thanks": [0.0, 0.0, 0.0],
    }


def test_jsonl_lists_are_sets_as_they_stand_read_into_memory(tmp_path):
    lines = [
        {"text": "great and funny", "labels": ["joy", "amusement"]},
        {"text": "meh", "labels": []},
        {"text": "so sad", "labels": ["sadness"]},
        {"text": "a, b", "labels": ["joy"]},
    ]
    path = _write(tmp_path / "train.jsonl", "\n".join(map(json.dumps, lines)) + "\n")
    file = LocalFile(path, label_column="labels", label_delimiter=",")
    assert not file.streamed  # a JSONL file streams, but multi-label data is read into memory
    data = load_dataset({"train": file}, ["train"])
    assert data.label_names == ["amusement", "joy", "sadness"]
    assert _label_rows(data["train"])[:2] == [("great and funny", [1.0, 1.0, 0.0]), ("meh", [0.0, 0.0, 0.0])]


@pytest.mark.parametrize(
    "content, file_options, message",
    [
        ("text\tlabels\na\tjoy\nb\t\n", {}, "row 3: column 'labels': the label is empty"),
        ("text\tlabels\na\tjoy\nb\tjoy,,love\n", {}, "row 3: column 'labels': an empty label in 'joy,,love'"),
        ("text\ta\tb\nx\t1\t2\n", {"label_column": ["a", "b"]}, "row 2: column 'b': a label column of the 0/1 "),
        ("text\tlabels\na\tjoy\nb\tjoy\n", {}, "a multi-label classifier needs at least 2 labels"),
        ("text\ta\nx\t1\n", {"label_column": ["a"]}, "several label columns are the one-column-per-label layout"),
    ],
    ids=["empty-cell", "empty-label", "not-0-or-1", "one-label", "one-column"],
)
def test_what_cannot_be_read_as_label_sets_is_one_line_naming_file_and_row(tmp_path, content, file_options, message):
    path = _write(tmp_path / "train.tsv", content)
    options = {"label_column": "labels", "label_delimiter": ",", **file_options}
    if isinstance(options["label_column"], list):
        del options["label_delimiter"]
    with pytest.raises(DataError) as error:
        load_dataset({"train": LocalFile(path, **options)}, ["train"])
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_label_the_training_file_lacks_is_refused_in_the_test_file(tmp_path):
    train = _write(tmp_path / "train.tsv", "text\tlabels\n" + "a\tjoy,love\nb\tanger\n" * 5)
    test = _write(tmp_path / "test.tsv", "text\tlabels\nc\tjoy,grief\n")
    with pytest.raises(DataError, match=r"test.tsv, row 2: column 'labels': label 'grief' was not seen in"):
        load_labelled_data(train, test, label_column="labels", multi_label=True)


def test_multi_label_data_is_refused_as_a_stream_and_with_single_label_files(tmp_path):
    train = _write(tmp_path / "train.tsv", "text\tlabels\n" + "a\tjoy,love\nb\tanger\n" * 5)
    with pytest.raises(DataError, match="multi-label data is read into memory"):
        load_labelled_data(train, label_column="labels", multi_label=True, stream=True)
    single = LocalFile(_write(tmp_path / "test.tsv", "text\tlabels\nc\tjoy\n"), label_column="labels")
    with pytest.raises(DataError, match="every one multi-label"):
        load_dataset({"train": LocalFile(train, label_column="labels", label_delimiter=","), "test": single})
    with pytest.raises(DataError, match="is a TFDS name"):
        load_labelled_data("imdb_reviews", multi_label=True)


def test_a_tfrecord_feature_of_several_values_is_a_set_and_of_one_is_split(tmp_path):
    import tensorflow as tf

    path = str(tmp_path / "train.tfrecord")

    def example(text, labels):
        feature = {
            "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()])),
            "labels": tf.train.Feature(bytes_list=tf.train.BytesList(value=[label.encode() for label in labels])),
        }
        return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()

    with tf.io.TFRecordWriter(path) as writer:
        for text, labels in [("both", ["joy", "love"]), ("one cell", ["anger,joy"]), ("none", [])]:
            writer.write(example(text, labels))
    data = load_dataset({"train": LocalFile(path, label_column="labels", label_delimiter=",")}, ["train"])
    assert data.label_names == ["anger", "joy", "love"]
    assert dict(_label_rows(data["train"])) == {
        "both": [0.0, 1.0, 1.0],
        "one cell": [1.0, 1.0, 0.0],
        "none": [0.0, 0.0, 0.0],
    }
