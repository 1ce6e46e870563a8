import collections
import csv
import gzip
import itertools
import logging
import math
import os
import re
import socket
import time
import warnings

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_textattn.datasets import DataError
from keras_textattn.datasets import LocalFile
from keras_textattn.datasets import inference_batch_size
from keras_textattn.datasets import load_dataset
from keras_textattn.datasets import load_labelled_data
from keras_textattn.datasets import make_batches
from keras_textattn.datasets.pipeline import LENGTH_STEP
from keras_textattn.datasets.pipeline import SENTENCE_STEP
from keras_textattn.datasets.pipeline import WORD_STEP
from keras_textattn.datasets.pipeline import encoded_rows
from keras_textattn.datasets.pipeline import sample_rows
from keras_textattn.text import TextEncoder


def _rows(dataset):
    return [(text.decode(), int(label)) for text, label in dataset.as_numpy_iterator()]


def _write(path, content, compress=False):
    data = content if isinstance(content, bytes) else content.encode("utf-8")
    if compress:
        data = gzip.compress(data)
    path.write_bytes(data)
    return str(path)


# ---------------------------------------------------------------- real files
def test_ag_news_sample_and_headerless_official_test(shared_data):
    ag = shared_data / "ag_news"
    names = (ag / "classes.txt").read_text().split()
    data = load_dataset(
        {
            "train": str(ag / "train_sample_5k.csv.gz"),
            "test": LocalFile(
                str(ag / "test.csv.gz"), text_column=[1, 2], label_column=0, header=False, label_offset=1
            ),
        },
        label_names=names,
    )
    assert data.label_names == ["World", "Sports", "Business", "Sci/Tech"]
    train, test = _rows(data["train"]), _rows(data["test"])
    assert len(train) == 5000 and len(test) == 7600
    assert np.bincount([label for _, label in test]).tolist() == [1900] * 4
    text, label = test[0]
    assert text.startswith("Fears for T N pension after talks Unions representing")  # title + description
    assert label == 2  # class_index 3, Business


def test_unseen_label_names_file_row_and_column(shared_data):
    ag = shared_data / "ag_news"
    with pytest.raises(ValueError, match=r"test.csv.gz, row 2: column 0: label '4' was not seen"):
        load_dataset(
            {
                "train": str(ag / "train_sample_5k.csv.gz"),
                "test": LocalFile(str(ag / "test.csv.gz"), text_column=[1, 2], label_column=0, header=False),
            }
        )


def test_imdb_string_labels(shared_data):
    data = load_dataset(
        {"train": str(shared_data / "imdb" / "train.csv.gz"), "test": str(shared_data / "imdb" / "test.csv.gz")}
    )
    assert data.label_names == ["neg", "pos"]
    labels = np.array([label for _, label in data["test"].as_numpy_iterator()])
    assert len(labels) == 25000 and labels.sum() == 12500
    assert any("<br />" in text for text, _ in _rows(data["train"].take(200)))


def test_validation_carved_deterministically(shared_data):
    source = str(shared_data / "trec" / "train.csv.gz")
    first = load_dataset(source, splits=("train", "validation"), seed=7)
    again = load_dataset(source, splits=("train", "validation"), seed=7)
    other = load_dataset(source, splits=("train", "validation"), seed=8)
    validation, train = _rows(first["validation"]), _rows(first["train"])
    assert validation == _rows(again["validation"])
    assert validation != _rows(other["validation"])
    everything = _rows(load_dataset(source, splits=("train",))["train"])
    assert sorted(train + validation) == sorted(everything)  # a partition of the file
    assert 0.08 < len(validation) / len(everything) < 0.12
    assert first.label_names == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]


def test_validation_carve_holds_out_whole_groups(shared_data):
    """With `group_column`, no group has rows on both sides of the carve. IMDB's `id` names one
    negative and one positive review in its training file: each pair stays together."""
    file = LocalFile(str(shared_data / "imdb" / "train.csv.gz"), group_column="id")
    data = load_dataset(file, splits=("train", "validation"), seed=3)
    texts = {}
    for split in ("train", "validation"):
        for text, _ in _rows(data[split]):
            texts[text] = split
    with gzip.open(file.path, "rt", encoding="utf-8", newline="") as handle:
        import csv

        rows = list(csv.DictReader(handle))
    repeated = {text for text, count in collections.Counter(row["text"] for row in rows).items() if count > 1}
    sides = {}
    for row in rows:
        if row["text"] not in repeated:  # 92 texts occur twice, under different ids
            sides.setdefault(row["id"], set()).add(texts[row["text"]])
    assert all(len(side) == 1 for side in sides.values())  # fails for the row carve: ~18% of pairs split
    held = sum(side == {"validation"} for side in sides.values())
    assert 0.08 < held / len(sides) < 0.12 and data.rows["validation"] == 2 * held
    again = load_dataset(file, splits=("train", "validation"), seed=3)
    assert _rows(again["validation"]) == _rows(data["validation"])


def test_group_column_blank_rows_and_misuse(tmp_path, shared_data):
    rows = "".join(f"{i % 2},text {i},{'' if i % 3 else 'g'}\n" for i in range(300))
    path = _write(tmp_path / "grouped.csv", "label,text,group\n" + rows)
    data = load_dataset(LocalFile(path, group_column="group"), splits=("train", "validation"), seed=1)
    sides = {split: {text for text, _ in _rows(data[split])} for split in ("train", "validation")}
    grouped = {f"text {i}" for i in range(0, 300, 3)}  # one group "g": all on one side
    assert grouped <= sides["train"] or grouped <= sides["validation"]
    assert 10 < len(sides["validation"] - grouped) < 40  # 200 blank rows: each a group of its own
    with pytest.raises(ValueError, match="no column 'film'"):
        load_dataset(LocalFile(path, group_column="film"), splits=("train", "validation"))
    with pytest.raises(ValueError, match="group column .* is for a file read into memory"):
        load_dataset(LocalFile(path, group_column="group", stream=True), splits=("train", "validation"))
    with pytest.raises(ValueError, match="group column .* goes with neither a validation file nor a TFDS name"):
        load_labelled_data(path, validation_data=path, group_column="group")
    one_group = _write(
        tmp_path / "one_group.csv", "label,text,group\n" + "".join(f"{i % 2},t {i},g\n" for i in range(50))
    )
    with pytest.raises(ValueError, match=r"split has no rows: the validation carve .* left (50|0) rows to train on"):
        load_dataset(LocalFile(one_group, group_column="group"), splits=("train", "validation"))


# --------------------------------------------------------------------- TFDS
def _store_tfds(tmp_path, name, rows, features):
    def split(part):
        return tf.data.Dataset.from_tensor_slices({k: [r[k] for r in part] for k in rows[0]})

    tfds.dataset_builders.store_as_tfds_dataset(
        name=name,
        version="1.0.0",
        features=tfds.features.FeaturesDict(features),
        split_datasets={"train": split(rows), "test": split(rows[:5])},
        data_dir=str(tmp_path),
    )


def test_tfds_path_offline_with_real_rows(shared_data, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="tensorflow")
    with gzip.open(shared_data / "sst2" / "dev.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        import csv

        rows = [{"text": r["text"], "label": int(r["label"])} for r in csv.DictReader(handle)][:40]
    _store_tfds(
        tmp_path,
        "sst2_sample",
        rows,
        {"text": tfds.features.Text(), "label": tfds.features.ClassLabel(names=["negative", "positive"])},
    )
    data = load_dataset(
        "sst2_sample", splits=("train", "validation", "test"), data_dir=str(tmp_path), validation_fraction=0.25
    )
    assert data.label_names == ["negative", "positive"]
    carved = _rows(data["train"]) + _rows(data["validation"])
    assert sorted(carved) == sorted((r["text"], r["label"]) for r in rows)
    assert len(_rows(data["test"])) == 5
    # The carve by row index ran quietly (AutoGraph warned of its two identical lambdas in every such run).
    assert "AutoGraph" not in caplog.text


def test_the_vocabulary_sample_is_seeded_and_quiet(caplog):
    caplog.set_level(logging.WARNING, logger="tensorflow")
    rows = tf.data.Dataset.range(1000)
    sample = list(sample_rows(rows, 200, 1000, seed=3).as_numpy_iterator())
    assert 150 < len(sample) < 250 and len(set(sample)) == len(sample)
    assert sample == list(sample_rows(rows, 200, 1000, seed=3).as_numpy_iterator())
    assert sample != list(sample_rows(rows, 200, 1000, seed=4).as_numpy_iterator())
    assert list(sample_rows(rows, 1000, 1000).as_numpy_iterator()) == list(range(1000))
    assert "AutoGraph" not in caplog.text


def test_tfds_several_text_features_are_joined(tmp_path):
    rows = [{"title": f"Title {i}", "description": f"body {i}", "label": i % 2} for i in range(6)]
    features = {
        "title": tfds.features.Text(),
        "description": tfds.features.Text(),
        "label": tfds.features.ClassLabel(names=["a", "b"]),
    }
    _store_tfds(tmp_path, "news_like", rows, features)
    data = load_dataset("news_like", splits=("test",), data_dir=str(tmp_path), text_column=["title", "description"])
    assert ("Title 0 body 0", 0) in _rows(data["test"])  # TFDS shuffles rows when it stores them
    default = load_dataset("news_like", splits=("test",), data_dir=str(tmp_path))
    assert ("body 0 Title 0", 0) in _rows(default["test"])  # every text feature, by name
    with pytest.raises(ValueError, match=r"text feature 'body' not found.*\['description', 'title'\]"):
        load_dataset("news_like", data_dir=str(tmp_path), text_column="body")
    with pytest.raises(ValueError, match=r"no split 'dev'.*\['test', 'train'\]"):
        load_dataset("news_like", splits=("dev",), data_dir=str(tmp_path))


def test_unknown_tfds_name(tmp_path):
    with pytest.raises(ValueError, match="Unknown dataset 'no_such_dataset_xyz'"):
        load_dataset("no_such_dataset_xyz", data_dir=str(tmp_path))
    # A dataset TFDS knows, at a version or config it does not have, is not called unknown.
    for name, reason in (("imdb_reviews:99.0.0", "only: 1.0.0"), ("imdb_reviews/no_such_config", "BuilderConfig")):
        with pytest.raises(ValueError, match=rf"^TFDS dataset 'imdb_reviews' has no '{name}' \(.*{reason}"):
            load_dataset(name, data_dir=str(tmp_path))


def _without_proxies(monkeypatch):
    for name in [name for name in os.environ if name.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)


def test_an_unreachable_source_is_found_in_seconds(monkeypatch):
    """`.invalid` never resolves (RFC 2606); a listening local port takes the connection;
    behind a proxy nothing is checked (the proxy connects)."""
    from keras_textattn.datasets.sources import first_unreachable

    _without_proxies(monkeypatch)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert first_unreachable([f"http://127.0.0.1:{port}/a.tgz", f"http://127.0.0.1:{port}/b.tgz"]) is None
        assert first_unreachable([f"http://127.0.0.1:{port}/a.tgz", "https://data.invalid/c.zip"]).startswith(
            "data.invalid: "
        )
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    assert first_unreachable(["https://data.invalid/c.zip"]) is None


class UnreachableReviews(tfds.core.GeneratorBasedBuilder):
    """A TFDS dataset (registered as "unreachable_reviews") whose one source file is on a host that
    never resolves (`.invalid`, RFC 2606), as every source is for a machine without internet."""

    VERSION = tfds.core.Version("1.0.0")
    url_infos = {"http://reviews.invalid/reviews.tgz": None}  # what TFDS reads from a dataset's checksums file

    def _info(self):
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {"text": tfds.features.Text(), "label": tfds.features.ClassLabel(names=["neg", "pos"])}
            )
        )

    def _split_generators(self, dl_manager):
        dl_manager.download(next(iter(self.url_infos)))  # what TFDS would retry for minutes
        return {"train": iter([])}

    def _generate_examples(self):
        return iter([])


def test_an_unprepared_tfds_dataset_offline_fails_at_once(tmp_path, monkeypatch):
    """TFDS's downloader retries an unreachable file for about 3.5 minutes; we answer in seconds,
    naming the host, and download nothing."""
    _without_proxies(monkeypatch)
    start = time.monotonic()
    with pytest.raises(
        ValueError,
        match=r"'unreachable_reviews' is not prepared in .* and its source cannot be "
        r"reached \(reviews\.invalid: .*\)\. Without internet, pass a local file",
    ):
        load_dataset("unreachable_reviews", data_dir=str(tmp_path))
    assert time.monotonic() - start < 60
    assert not any(tmp_path.rglob("*.tgz*"))


# ---------------------------------------------------------- local bad input
def test_tsv_with_string_labels_and_several_text_columns(tmp_path):
    path = _write(
        tmp_path / "d.tsv.gz", "topic\ttitle\tbody\nsport\tGoal\tlate winner\nnews\tVote\tcounted\n", compress=True
    )
    data = load_dataset(LocalFile(path, text_column=["title", "body"], label_column="topic"), splits=("train",))
    assert data.label_names == ["news", "sport"]
    assert _rows(data["train"]) == [("Goal late winner", 1), ("Vote counted", 0)]


@pytest.mark.parametrize(
    "content, file_kwargs, message",
    [
        ("label,text\n1,a\n0,b,extra\n", {}, r"d.csv, row 3: expected 2 columns like the first row, found 3"),
        ("label,text\n1,a\n0,b\n", {"text_column": "body"}, r"d.csv: no column 'body'. Columns: \['label', 'text'\]"),
        (
            "1,a\n0,b\n",
            {"header": False},
            r"column 'text' is a name but the file has no header; use a column index \(0..1\)",
        ),
        ("1,a\n0,b\n", {"header": False, "text_column": 5, "label_column": 0}, r"column index 5 is out of range"),
        ("label,text\n1,a\n1,b\n", {}, r"at least 2 classes.*has 1: \['1'\]"),
        ("label,text\n1,a\n,b\n", {}, r"row 3: column 'label': the label is empty"),
        ("", {}, r"d.csv: the file is empty"),
        ("label,text\n", {}, r"d.csv: no data rows"),
        # A file of another delimiter or encoding than read (Excel's European CSV, its "Unicode Text").
        (
            "label;text\n1;a\n0;b\n",
            {},
            r"no column 'text'. Columns: \['label;text'\] \(one column holding ';': a file "
            r"delimited by ';'\? Give --delimiter ';'; Python: delimiter=';'\)$",
        ),
        (
            "label\ttext\n1\ta\n",
            {},
            r"holding '\\t': a file delimited by '\\t'\? Name it .tsv or .tsv.gz, or give "
            r"--delimiter tab\)$",
        ),
        # A space after each comma (a hand-written header): the name it is read as is given.
        (
            "label, text\n1, a\n0, b\n",
            {},
            r"no column 'text'. Columns: \['label', ' text'\] \(' text' has spaces around "
            r"the name, as a space after the delimiter writes it: give the name as the file spells it, ' text', or "
            r"remove "
            r"the spaces from the header\)$",
        ),
        (
            "label,text\n1,a\n",
            {"delimiter": ";;"},
            r"d.csv: the delimiter must be one character \(',', ';', '\\t', "
            r"'\|'\); got ';;'",
        ),
        (
            "label,text\n1,a\n0,b\n".encode("utf-16"),
            {},
            r"d.csv: the file is UTF-16 \(it starts with UTF-16's byte order mark\); save it as UTF-8 \(Excel: CSV "
            r"UTF-8\)",
        ),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["in-memory", "streamed"])
def test_bad_files_name_file_row_and_column(tmp_path, content, file_kwargs, message, stream):
    path = _write(tmp_path / "d.csv", content)
    with pytest.raises(ValueError, match=message):
        load_dataset(LocalFile(path, **file_kwargs, stream=stream), splits=("train",))


@pytest.mark.parametrize("path", [3, None, "", True])
def test_a_data_file_is_a_path(path):
    """`predict_file(run, 3, ...)` was a TypeError from inside the reader."""
    with pytest.raises(
        DataError,
        match=rf"^a data file must be a path \(a file, a glob or a folder of shards\); got "
        rf"{re.escape(repr(path))}$",
    ):
        LocalFile(path)


def test_a_quote_never_closed_is_named_not_read_as_one_text(tmp_path):
    """Python's csv (not strict) reads every line after a quote that is never closed as one text:
    a stray quote on line 3 of 25,000 rows trained on 2. It is named; quoting that closes (a
    text over lines, sloppy `"a" b`, a quote inside a text) still reads."""
    good = 'label,text\n1,"over\ntwo lines"\n0,"said" twice\n1,a 5" screen\n0,"the ""best"""\n'
    data = load_dataset(LocalFile(_write(tmp_path / "good.csv", good)), splits=("train",))
    assert _rows(data["train"]) == [("over\ntwo lines", 1), ("said twice", 0), ('a 5" screen', 1), ('the "best"', 0)]
    for name, content, header, line, lines in (
        ("data.csv", 'label,text\n1,a\n0,"never closed\n1,b\n0,c\n', True, 3, "3 lines"),
        ("last.csv", 'label,text\n1,a\n0,"never closed\n', True, 3, "1 line"),
        ("header.csv", '"label,text\n1,a\n0,b\n', True, 1, "3 lines"),
        ("headerless.csv", '1,a\n0,"never closed\n1,b\n', False, 2, "2 lines"),
    ):
        file = LocalFile(
            _write(tmp_path / name, content), header=header, **({} if header else {"text_column": 1, "label_column": 0})
        )
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"{name}, line {line}: a quoted field opens there and is never closed, so everything from it to the "
                f"end of the file ({lines}) would be read as one text"
            ),
        ):
            load_dataset(file, splits=("train",))
    # Closed by a later field's quote: the record is too wide, and the error says where it began.
    merged = _write(tmp_path / "merged.csv", 'label,text\n1,a\n0,"stray\n1,b\n0,"quoted",x\n1,c\n')
    with pytest.raises(
        ValueError,
        match=re.escape(
            "merged.csv, row 5: expected 2 columns like the first row, found 3 "
            "in one record read from line 3 to here (a quote opened on line 3 "
            "and closed lines later?)"
        ),
    ):
        load_dataset(LocalFile(merged), splits=("train",))


def test_missing_file_and_split(tmp_path):
    with pytest.raises(ValueError, match=r"Data file not found: '.*missing.csv'"):
        load_dataset(str(tmp_path / "missing.csv"), splits=("train",))
    path = _write(tmp_path / "d.csv", "label,text\n1,a\n0,b\n")
    with pytest.raises(ValueError, match=r"No file for split 'test'"):
        load_dataset(path)


@pytest.mark.parametrize("stream", [False, True], ids=["in-memory", "streamed"])
def test_label_names_are_distinct_names_of_the_labels(tmp_path, stream):
    """`--label-names neg,neg` trained a model of two classes of one name, `neg,,pos` a class named
    "" and `neg` alone a 2-class file's error that label '1' "was not seen" in the file that has it."""
    path = _write(tmp_path / "d.csv", "label,text\n0,a\n1,b\n2,c\n0,d\n")
    cases = [
        (["neg", "neg", "pos"], r"name the classes 0..n-1: each once \('neg' repeated\); got \['neg', 'neg', 'pos'\]"),
        (["neg", " ", "pos"], r"no empty one; got \['neg', '', 'pos'\]"),
        (["neg"], "two or more"),
        ("neg,pos", r"a list of names, one per class; got the string 'neg,pos'"),
        (
            ["neg", "pos"],
            r"the 2 label names given \(--label-names\) are for the labels 0..1; the label column "
            r"'label' also has \['2'\]"
            if not stream
            else r"d.csv, row 4: label '2' was not an id of the label names given \(--label-names\). "
            r"Known labels: \['0', '1'\]",
        ),
    ]
    for names, message in cases:
        with pytest.raises(ValueError, match=message):
            load_dataset(LocalFile(path, stream=stream), splits=("train",), label_names=names)
    with pytest.warns(
        UserWarning,
        match=r"d.csv: no training row is labelled \['other'\] \(the label names given name "
        r"4 classes\); the model will not learn to predict them",
    ):
        data = load_dataset(LocalFile(path, stream=stream), splits=("train",), label_names=["a ", "b", "c", "other"])
    assert data.label_names == ["a", "b", "c", "other"]


def test_labels_with_spaces_around_them_are_read_without_and_said_once(tmp_path):
    """ "pos " is the class "pos" (a spreadsheet's trailing space), as before; now a warning says how
    many labels were so, once for the file, with the first."""
    _write(tmp_path / "train.csv", "label,text\n" + "pos ,a good film\nneg,a dull plot\n pos,fine\n" * 4)
    with pytest.warns(UserWarning) as warned:
        data = load_dataset(str(tmp_path / "train.csv"), splits=("train",))
    spaced = [str(w.message) for w in warned if "spaces around them" in str(w.message)]
    assert spaced == [
        f"{tmp_path / 'train.csv'}: 8 of 12 labels had spaces around them, read without (row 2: 'pos ' as 'pos')"
    ]
    assert data.label_names == ["neg", "pos"]


def test_a_test_or_validation_file_that_is_the_training_file_warns(tmp_path, monkeypatch):
    """`--test-data` (or `--validation-data`) naming the training file, by another path too: the
    scores are not held out, and the run says so (it was silent)."""
    _write(tmp_path / "train.csv", "label,text\n" + "pos,a good film\nneg,a dull plot\n" * 5)
    monkeypatch.chdir(tmp_path)
    for option in ("test_data", "validation_data"):
        name = option.split("_")[0]
        with pytest.warns(
            UserWarning,
            match=f"the {name} file is the training file train.csv: its scores are on rows "
            "the model trained on, not held out",
        ):
            load_labelled_data("train.csv", **{option: str(tmp_path / "train.csv")})
    _write(tmp_path / "test.csv", "label,text\npos,fine\nneg,poor\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_labelled_data("train.csv", test_data="test.csv")


def test_a_label_column_of_texts_is_refused(shared_data, tmp_path):
    """Columns swapped by mistake (`--label-column text`) trained a classifier of 1,987 classes on
    TREC's first 2,000 questions without a word; now that is one `DataError`, in memory and
    streamed. 150 classes of 3 rows each is a label column and still reads."""
    with gzip.open(shared_data / "trec" / "train.csv.gz", "rt", encoding="utf-8") as handle:
        head = "".join(itertools.islice(handle, 2001))
    path = _write(tmp_path / "trec.csv", head)
    for stream in (None, True):
        with pytest.raises(
            ValueError,
            match=r"trec.csv: the label column 'text' has 1,9\d\d different values in "
            r"2,000 rows \(1,9\d\d of them on one row only\), e.g. '.+'; is it the "
            r"label column \(--label-column\)\?",
        ):
            load_dataset(LocalFile(path, label_column="text", text_column="label", stream=stream), ("train",))
    many = "label,text\n" + "".join(f"c{i % 150},text {i}\n" for i in range(450))
    data = load_dataset(_write(tmp_path / "many.csv", many), ("train",))
    assert len(data.label_names) == 150


def test_rows_merged_by_a_stray_quote_are_named(tmp_path):
    """A TSV text that starts with a quote (`pos<TAB>"Great`) which a quote lines later closes
    made the rows between one text, silently (the record has the right width); now a warning
    names the lines. Texts over several lines, quoted as CSV writers quote them, read quietly."""
    stray = _write(
        tmp_path / "stray.tsv",
        'label\ttext\npos\t"Great film, said nobody\nneg\tboring\npos\tfine "ok" yes\nneg\tbad\n',
    )
    with pytest.warns(
        UserWarning,
        match=r"stray.tsv: 1 record read over several lines holds lines that read as "
        r"rows of their own, e.g. lines 2-4 \(line 3 reads as a row labelled 'neg'\): "
        "a quote opened on line 2 and closed on line 4?",
    ):
        data = load_dataset(stray, ("train",))
    assert len(_rows(data["train"])) == 2  # read as before: the warning is the change
    with open(tmp_path / "quoted.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(
            [
                ["label", "text"],
                ["pos", "a long review\nthat goes on, and on\nover lines"],
                ["neg", 'bad, "bad"\nneg, I said'],
                ["pos", '"Great" film'],
            ]
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = load_dataset(str(tmp_path / "quoted.csv"), ("train",))
    assert len(_rows(data["train"])) == 3


def test_the_label_column_is_never_a_text_column(tmp_path):
    """`--text-column label` (or `text` and `label`, or the label's index) trained a model on its
    own labels, 0.98 on TREC; now one `DataError`, in memory, streamed and from JSONL."""
    csv_path = _write(tmp_path / "t.csv", "label,text\n" + "pos,a good film\nneg,a dull plot\n" * 5)
    jsonl_path = _write(tmp_path / "t.jsonl", '{"label": "pos", "text": "a good film"}\n' * 2)
    message = r"t.(csv|jsonl): the label column 'label' is also a text column \(--text-column\)"
    for path, text_column, stream in [
        (csv_path, "label", None),
        (csv_path, ["text", "label"], True),
        (csv_path, 0, None),
        (csv_path, 0, True),
        (jsonl_path, "label", None),
    ]:
        with pytest.raises(ValueError, match=message):
            load_dataset(LocalFile(path, text_column=text_column, stream=stream), ("train",))


def test_a_delimiter_reads_a_file_of_semicolons(tmp_path):
    """`delimiter` (`--delimiter`) for every split of a run, in memory and streamed; the column
    hint's advice then works."""
    _write(tmp_path / "train.csv", "label;text\n" + "pos;a good film, truly\nneg;a dull plot\n" * 5)
    _write(tmp_path / "test.csv", "label;text\nneg;dull, dull\n")
    for stream in (None, True):
        data, _ = load_labelled_data(
            str(tmp_path / "train.csv"),
            test_data=str(tmp_path / "test.csv"),
            delimiter=";",
            stream=stream,
            validation_fraction=0.3,
        )
        rows = _rows(data["train"]) + _rows(data["validation"])
        assert sorted(rows) == sorted([("a good film, truly", 1), ("a dull plot", 0)] * 5), stream
        assert _rows(data["test"]) == [("dull, dull", 0)] and data.label_names == ["neg", "pos"]


def test_invalid_utf8_and_empty_texts_are_read(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"label,text\n1,caf\xe9\n0,\n1,   \n")
    with pytest.warns(
        UserWarning,
        match=r"d.csv: 1 of 3 texts hold U\+FFFD, as which bytes that are not UTF-8 are "
        r"read \(a Latin-1 or Windows-1252 file\? convert it: iconv",
    ):
        data = load_dataset(str(path), splits=("train",))  # read on, but not silently (a whole file may be Latin-1)
    assert _rows(data["train"]) == [("caf\ufffd", 1), ("", 0), ("   ", 1)]
    # JSON's escape of a lone surrogate (a tweet cut inside an emoji) is U+FFFD too; it was
    # "row 1: 'utf-8' codec can't encode character '\ud800'" in train and a traceback in predict.
    path = tmp_path / "d.jsonl"
    path.write_text('{"label": 1, "text": "caf\\ud800"}\n{"label": 0, "text": "tea"}\n')
    assert _rows(load_dataset(str(path), splits=("train",))["train"]) == [("caf\ufffd", 1), ("tea", 0)]


# ------------------------------------------------------------------ pipeline
def test_make_batches_shapes_shuffle_and_buckets(shared_data):
    data = load_dataset(str(shared_data / "sst2" / "train.csv.gz"), splits=("train",))
    encoder = TextEncoder(max_tokens=2000)
    encoder.adapt(data["train"])
    batches = make_batches(data["train"].take(200), encoder, 32, shuffle=True, seed=3)
    first = [(x.numpy(), y.numpy()) for x, y in batches.take(2)]
    again = [
        (x.numpy(), y.numpy())
        for x, y in make_batches(data["train"].take(200), encoder, 32, shuffle=True, seed=3).take(2)
    ]
    for (x, y), (x2, y2) in zip(first, again):
        np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(y, y2)
        assert x.dtype == np.int32 and x.shape[0] == 32 and y.shape == (32,)
    plain = sum(int(tf.size(x)) for x, _ in make_batches(data["train"], encoder, 32))
    bucketed = sum(
        int(tf.size(x)) for x, _ in make_batches(data["train"], encoder, 32, bucket_boundaries=[10, 20, 30, 40])
    )
    assert bucketed < 0.8 * plain  # less padding
    fixed = TextEncoder(max_tokens=2000, sequence_length=16, bigram_buckets=100)
    fixed.adapt(data["train"].take(500))
    (ids, bigrams), labels = next(iter(make_batches(data["train"], fixed, 8)))
    assert ids.shape == bigrams.shape == (8, 16)


def test_length_sorted_batches_cut_padding_and_keep_every_row(shared_data):
    """IMDB's reviews, encoded at a fixed length with bigrams: the batches that cut their padding
    hold every row once (ids and label together, none of a text's tokens cut), as many batches as
    plain ones, each as long as its longest text rounded up to `LENGTH_STEP`, far less padding
    in all; shuffled anew each epoch, the same for the same seed; unshuffled, sorted by length,
    from ids kept in memory or texts encoded as they come."""
    data = load_dataset(str(shared_data / "imdb" / "test.csv.gz"), splits=("train",))["train"].take(1000)
    encoder = TextEncoder(max_tokens=2000, sequence_length=600, bigram_buckets=100)
    encoder.adapt(data)
    rows = 1000

    def epoch(batches):
        return [((ids.numpy(), bigrams.numpy()), labels.numpy()) for (ids, bigrams), labels in batches]

    def as_rows(batches):
        out = []
        for (ids, bigrams), labels in batches:
            for i in range(len(labels)):
                length = int((ids[i] != 0).sum())
                out.append((tuple(ids[i, :length]), tuple(bigrams[i, :length]), int(labels[i])))
        return sorted(out)

    plain = epoch(make_batches(data, encoder, 64, rows=rows))
    cut = make_batches(data, encoder, 64, shuffle=True, seed=1, rows=rows, cut_padding=True)
    first, second = epoch(cut), epoch(cut)
    assert len(first) == len(plain) == math.ceil(rows / 64) == int(cut.cardinality())
    assert sorted(len(labels) for _, labels in first) == [40] + [64] * 15  # the short one anywhere
    assert as_rows(first) == as_rows(second) == as_rows(plain)
    for (ids, bigrams), _ in first:
        longest = int((ids != 0).sum(axis=1).max())
        assert ids.shape == bigrams.shape and ids.shape[1] == min(600, math.ceil(longest / LENGTH_STEP) * LENGTH_STEP)
    assert sum(ids.size for (ids, _), _ in first) < 0.75 * sum(ids.size for (ids, _), _ in plain)
    assert [labels.tolist() for _, labels in first] != [labels.tolist() for _, labels in second]
    again = epoch(make_batches(data, encoder, 64, shuffle=True, seed=1, rows=rows, cut_padding=True))
    assert all(np.array_equal(a[0][0], b[0][0]) for a, b in zip(first, again))
    for cache in (True, False):  # ids kept in memory, or texts encoded a chunk at a time
        in_order = epoch(make_batches(data, encoder, 64, rows=rows, cache=cache, cut_padding=True))
        assert as_rows(in_order) == as_rows(plain)
        lengths = np.concatenate([(ids != 0).sum(axis=1) for (ids, _), _ in in_order])
        assert np.all(np.diff(lengths) >= 0)  # the rows of a chunk (here all of them), shortest first


def test_hierarchical_batches_cut_to_their_most_sentences_and_longest_sentence(shared_data):
    """IMDB's reviews as sentences with bigrams: the cut batches hold every row once (no sentence
    or word of a text cut), as many batches as plain ones, each cut to its most sentences and its
    longest sentence rounded up to `SENTENCE_STEP` and `WORD_STEP`, and far fewer cells in all;
    unshuffled, the rows of a chunk come by their number of sentences."""
    data = load_dataset(str(shared_data / "imdb" / "test.csv.gz"), splits=("train",))["train"].take(600)
    encoder = TextEncoder(max_tokens=2000, sequence_length=48, hierarchical=True, max_sentences=30, bigram_buckets=100)
    encoder.adapt(data)

    def as_rows(batches):
        out = []
        for (ids, bigrams), labels in batches:
            ids, bigrams = ids.numpy(), bigrams.numpy()
            for i in range(len(labels)):
                real = ids[i] != 0
                words = real.sum(axis=1)  # of each sentence: none cut
                out.append((ids[i][real].tobytes(), bigrams[i][real].tobytes(), words[words > 0].tobytes()))
        return sorted(out)

    plain = list(make_batches(data, encoder, 32, rows=600))
    cut = list(make_batches(data, encoder, 32, shuffle=True, seed=0, rows=600, cut_padding=True))
    assert len(cut) == len(plain) == math.ceil(600 / 32)
    assert as_rows(cut) == as_rows(plain)
    for (ids, bigrams), _ in cut:
        real = ids.numpy() != 0
        sentences = int(real.any(axis=2).sum(axis=1).max())
        words = int(real.sum(axis=2).max())
        assert ids.shape == bigrams.shape
        assert ids.shape[1:] == (
            min(30, math.ceil(sentences / SENTENCE_STEP) * SENTENCE_STEP),
            min(48, math.ceil(words / WORD_STEP) * WORD_STEP),
        )
    assert sum(int(tf.size(ids)) for (ids, _), _ in cut) < 0.8 * sum(int(tf.size(ids)) for (ids, _), _ in plain)
    in_order = make_batches(data, encoder, 32, rows=600, cut_padding=True)
    counts = np.concatenate([(ids.numpy() != 0).any(axis=2).sum(axis=1) for (ids, _), _ in in_order])
    assert np.all(np.diff(counts) >= 0)


class _CountingEncoder:
    """`encoder`, counting (in a TensorFlow variable, as tf.data runs it) the texts it encodes."""

    def __init__(self, encoder):
        self.encoder, self.texts = encoder, tf.Variable(0, dtype=tf.int64)

    def __getattr__(self, name):
        return getattr(self.encoder, name)

    def __call__(self, texts):
        with tf.control_dependencies([self.texts.assign_add(tf.shape(texts, out_type=tf.int64)[0])]):
            return self.encoder(texts)


@pytest.mark.parametrize("hierarchical", [False, True])
def test_training_batches_encode_each_text_once(shared_data, monkeypatch, hierarchical):
    """With ids of a fixed shape and known rows, the texts are encoded in the first epoch only and
    their ids kept: every epoch's batches are those of encoding each epoch (same seed, same order);
    ids that would not fit in memory (here: a share of none) are encoded every epoch instead."""
    data = load_dataset(str(shared_data / "sst2" / "dev.csv.gz"), splits=("train",))
    rows = 300
    options = dict(hierarchical=True, max_sentences=3) if hierarchical else dict(bigram_buckets=100)
    encoder = TextEncoder(max_tokens=2000, sequence_length=12, **options)
    encoder.adapt(data["train"])

    def two_epochs(share):
        monkeypatch.setattr("keras_textattn.datasets.pipeline.IDS_MEMORY_SHARE", share)
        counting = _CountingEncoder(encoder)
        batches = make_batches(data["train"].take(rows), counting, 32, shuffle=True, seed=1, rows=rows)
        epochs = [[tf.nest.map_structure(np.asarray, batch) for batch in batches] for _ in range(2)]
        return epochs, int(counting.texts.numpy())

    (kept, encoded_once), (again, encoded_each_epoch) = two_epochs(0.25), two_epochs(0.0)
    assert (encoded_once, encoded_each_epoch) == (rows, 2 * rows)
    for first, second in zip(kept, again):
        assert len(first) == len(second) == 10
        for batch, other in zip(first, second):
            tf.nest.map_structure(np.testing.assert_array_equal, batch, other)
    assert not np.array_equal(kept[0][0][1], kept[1][0][1])  # reshuffled each epoch


def test_inference_batches_are_multiples_of_the_training_batch():
    """Validation and a run's final scores predict in larger batches: a multiple of the training
    batch (which splits evenly over a mirrored strategy's replicas, so this one does too), up to
    256 rows and 8x the training batch; never smaller than it."""
    sizes = (1, 8, 32, 33, 100, 256, 300)
    assert [inference_batch_size(size) for size in sizes] == [8, 64, 256, 231, 200, 256, 300]


def test_a_dict_of_files_is_read_with_the_column_options(tmp_path):
    """`data` as a dict of split name to plain paths (a string, a `pathlib.Path`) reads each file
    with the column options given beside it, as a single file would be; a `LocalFile` in it keeps
    its own."""
    for name, rows in (("train", [("good", 1), ("bad", 0), ("fine", 1), ("awful", 0)]), ("test", [("nice", 1)])):
        (tmp_path / f"{name}.tsv").write_text("".join(f"{label}\t{text}\n" for text, label in rows))
    dataset, _ = load_labelled_data(
        {"train": str(tmp_path / "train.tsv"), "test": tmp_path / "test.tsv"},
        text_column=1,
        label_column=0,
        header=False,
        validation_fraction=0.5,
    )
    assert dataset.label_names == ["0", "1"]
    assert [text.decode() for text, _ in dataset["test"].as_numpy_iterator()] == ["nice"]
    assert dataset.rows["train"] + dataset.rows["validation"] == 4
    (tmp_path / "test.csv").write_text("text,label\nnice,1\n")  # another layout, read as its LocalFile says
    own = LocalFile(str(tmp_path / "test.csv"))
    dataset, _ = load_labelled_data(
        {"train": tmp_path / "train.tsv", "test": own},
        text_column=1,
        label_column=0,
        header=False,
        validation_fraction=0.5,
    )
    assert [text.decode() for text, _ in dataset["test"].as_numpy_iterator()] == ["nice"]


def test_data_of_a_type_not_read_is_one_line(tmp_path):
    """In-memory data (a DataFrame, a list of rows, a dict of columns) is refused saying what
    `data` takes, not with os.fspath's TypeError or an AttributeError from inside."""
    import pandas as pd

    from keras_textattn.datasets.formats import DataError

    file = tmp_path / "train.csv"
    file.write_text("label,text\npos,good\nneg,bad\n")
    takes = (
        "data must be a TFDS name, a file, glob or folder of shards, a LocalFile or a dict of split name to file or "
        "LocalFile"
    )
    for data, test_data, message in (
        (
            pd.DataFrame({"label": ["pos"], "text": ["good"]}),
            None,
            f"{takes}; got DataFrame (write a DataFrame to a file first: df.to_csv('train.csv', index=False))",
        ),
        ([("good", "pos")], None, f"{takes}; got list"),
        (
            {"text": ["good"], "label": ["pos"]},
            None,
            "a dict of data maps split names to files or LocalFiles; got {'text': 'list', 'label': 'list'}",
        ),
        (str(file), ["good"], "test_data must be a file, as data is; got list"),
    ):
        with pytest.raises(DataError) as refused:
            load_labelled_data(data, test_data=test_data)
        assert str(refused.value) == message
    dataset, _ = load_labelled_data(file, validation_fraction=0.5)  # a pathlib.Path is a file
    assert dataset.label_names == ["neg", "pos"]


def test_the_data_options_are_what_the_loader_takes():
    """TrainConfig's data group is `load_labelled_data`'s keywords (but the seed, which trains too):
    `train` and `tune` pass them through, and the CLI's data flags are generated from them."""
    import inspect

    from keras_textattn_config.train_config import SEARCH_DATA_OPTIONS

    assert set(SEARCH_DATA_OPTIONS) == set(inspect.signature(load_labelled_data).parameters) - {"data", "seed"}


def test_sampled_windows_read_other_stretches_each_epoch_and_keep_the_labels(shared_data):
    """With `sample_windows`, an epoch of IMDB reviews has the plain batches' rows, labels and
    shapes, a review that fits read as plainly; a longer one is read at a window drawn anew each
    epoch (the same for the same seed), so that over epochs training reads past its start."""
    data = load_dataset(str(shared_data / "imdb" / "test.csv.gz"), splits=("train",))["train"].take(300)
    encoder = TextEncoder(max_tokens=2000, sequence_length=64, bigram_buckets=100)
    encoder.adapt(data)

    def epoch(batches):
        return [(ids.numpy(), bigrams.numpy(), labels.numpy()) for (ids, bigrams), labels in batches]

    plain = epoch(make_batches(data, encoder, 32, rows=300))
    sampled = make_batches(data, encoder, 32, rows=300, sample_windows=True, seed=3)
    first, second = epoch(sampled), epoch(sampled)
    again = epoch(make_batches(data, encoder, 32, rows=300, sample_windows=True, seed=3))
    longer = encoder.longer_than_read([text.decode() for text, _ in data.as_numpy_iterator()])
    for run in (first, second):
        assert [labels.tolist() for *_, labels in run] == [labels.tolist() for *_, labels in plain]
        assert [ids.shape for ids, _, _ in run] == [ids.shape for ids, _, _ in plain]
        ids, plain_ids = np.concatenate([b[0] for b in run]), np.concatenate([b[0] for b in plain])
        np.testing.assert_array_equal(ids[~longer], plain_ids[~longer])
        assert np.mean(np.any(ids[longer] != plain_ids[longer], axis=1)) > 0.8  # not their start
    moved = np.any(np.concatenate([b[0] for b in first]) != np.concatenate([b[0] for b in second]), axis=1)
    assert np.mean(moved[longer]) > 0.8  # another window the next epoch
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(first, again))
    with pytest.raises(ValueError, match="sample_windows draws windows of texts; the rows given are token ids"):
        make_batches(encoded_rows(data, encoder), encoder, 32, sample_windows=True)
