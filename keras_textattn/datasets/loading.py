"""TFDS names and local CSV/TSV files to `tf.data` datasets of `(text, label)`.

TensorFlow backend only (tf.data and TFDS).
"""

import codecs
import collections
import contextlib
import csv
import dataclasses
import gzip
import io
import itertools
import json
import numbers
import os
import re
import socket
import typing
import urllib.parse
import urllib.request
import warnings
import zlib

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_textattn import _backend
from keras_textattn.errors import UserError
from keras_textattn.errors import check_flag
from keras_textattn.errors import valid_unicode

# Raise csv's field limit so that a 1 MB text is read, not refused.
csv.field_size_limit(64 * 1024 * 1024)


class DataError(UserError):
    """A data source that cannot be read as labelled texts; the message names the file,
    the row and the column where it can."""


@dataclasses.dataclass
class LocalFile:
    """A CSV or TSV file (plain or gzip) of labelled texts.

    Args:
        path: the file.
        text_column: a column name or index, or a list of them joined with a space
            (AG News's original format is headerless `class,title,description`:
            `LocalFile(path, text_column=[1, 2], label_column=0, header=False)`).
        label_column: a column name or index.
        header: whether the first row names the columns.
        delimiter: None picks `\\t` for `.tsv` / `.tsv.gz`, `,` otherwise.
        label_offset: subtracted from integer labels, so that files numbering
            classes differently agree (AG News's original test file counts 1-4, the
            training sample 0-3: `label_offset=1` for the former).
        stream: read with `tf.data` as a stream (`datasets.streaming`) rather than into
            memory. None (default): a glob (`train-*.csv.gz`), a folder of shards, a
            JSONL or TFRecord file and a remote path (`gs://...`) are streamed; a single
            local CSV / TSV file is read into memory, where a quoted field may span lines
            (streamed files need one row per line). JSONL rows are objects and TFRecord
            records `tf.train.Example`s: `text_column` / `label_column` are their keys.
        group_column: a column whose rows belong together (the reviews of one film, the
            messages of one author): a validation split carved from this file holds out
            whole groups (about `validation_fraction` of them, chosen by a seeded hash of the
            value), so that no group is on both sides and the held-out score is not inflated
            by what the model learns of a group it also trains on (BENCHMARKS.md, IMDB). A row
            with an empty value is a group of its own. Files read into memory only.
    """

    path: str
    text_column: object = "text"
    label_column: object = "label"
    header: bool = True
    delimiter: str = None
    label_offset: int = 0
    stream: bool = None
    group_column: object = None

    def __post_init__(self):
        if isinstance(self.path, bool) or not isinstance(self.path, (str, os.PathLike)) or not os.fspath(self.path):
            raise DataError(f"a data file must be a path (a file, a glob or a folder of shards); got {self.path!r}")
        check_flag(f"{os.fspath(self.path)}: header", self.header)
        if self.stream is not None:
            check_flag(f"{os.fspath(self.path)}: stream", self.stream)
        if self.delimiter is not None and not (isinstance(self.delimiter, str) and len(self.delimiter) == 1):
            raise DataError(f"{os.fspath(self.path)}: the delimiter must be one character (',', ';', '\\t', '|'); "
                            f"got {self.delimiter!r}")

    def text_columns(self):
        """`text_column` as a list."""
        return self.text_column if isinstance(self.text_column, (list, tuple)) else [self.text_column]

    @property
    def streamed(self):
        """Whether `load_dataset` streams this file (see `stream` above)."""
        if self.stream is not None:
            return bool(self.stream)
        path = os.fspath(self.path)
        return is_pattern(path) or os.path.isdir(path) or file_format(path) in ("jsonl", "tfrecord") or "://" in path


@dataclasses.dataclass
class TextClassificationData:
    """What `load_dataset` returns.

    Attributes:
        splits: split name to a `tf.data.Dataset` of `(text: tf.string, label: tf.int32)`
            scalars, unbatched.
        label_names: class names; label id i is `label_names[i]`.
    """

    splits: dict
    label_names: list
    rows: dict = None
    skipped: dict = None
    shard_files: dict = None

    def __getitem__(self, split):
        return self.splits[split]

    @property
    def streamed(self):
        """Whether the splits stream from files (then not cached in memory)."""
        return self.shard_files is not None

    def worker_split(self, split, worker, workers):
        """What worker `worker` of `workers` reads of `split`, and a line saying so: its own shards
        when there are at least as many as workers (as `tf.data`'s `AutoShardPolicy.FILE`), else
        every `workers`-th row (`AutoShardPolicy.DATA`)."""
        if self.streamed:
            paths, build = self.shard_files[split]
            if len(paths) >= workers:
                mine = paths[worker::workers]
                return build(mine), (f"worker {worker} of {workers} reads {len(mine)} of {len(paths)} shards: "
                                     f"{', '.join(os.path.basename(p) for p in mine[:5])}{' ...' if len(mine) > 5 else ''}")
        description = "fewer shards than workers" if self.streamed else "one file"
        return self.splits[split].shard(workers, worker), (
            f"worker {worker} of {workers} reads one row in {workers}, from row {worker} ({description})")

    @property
    def num_classes(self):
        return len(self.label_names)


def load_dataset(
    source,
    splits=("train", "test"),
    *,
    text_column=None,
    validation_fraction=0.1,
    seed=0,
    data_dir=None,
    label_names=None,
    skip_bad_rows=False,
):
    """Load labelled texts from TFDS or from local files.

    Args:
        source: a TFDS dataset name (`"imdb_reviews"`, `"ag_news_subset"`, ...), a
            `LocalFile`, a path (read as `LocalFile(path)`), or a dict of split name
            to `LocalFile` or path.
        splits: the splits to return. A `"validation"` split that the source lacks
            is carved from `"train"`: `validation_fraction` of it, chosen by a seeded
            hash of the row index (of the group, with `LocalFile.group_column`), so the
            same seed always gives the same rows; those rows then leave `"train"`.
        text_column: TFDS only: the text feature, or a list joined with a space.
            Default: the feature named "text" if any, else every text feature
            (e.g. `["description", "title"]`).
        validation_fraction, seed: of the carved validation split.
        data_dir: TFDS only: where prepared datasets live (TFDS's default otherwise).
        label_names: local files only: class names for integer labels 0..n-1
            (e.g. AG News's `classes.txt`). Default: the labels found in the training
            file, sorted (numerically when they are all integers).
        skip_bad_rows: streamed files only: count rows that cannot be read (and leave out
            shards that cannot be read to their end) instead of stopping at the first;
            `TextClassificationData.skipped` says how many, per split.

    Returns:
        A `TextClassificationData`.
    """
    _backend.require_tensorflow("keras_textattn.datasets")
    check_flag("skip_bad_rows", skip_bad_rows)
    splits = tuple(splits)
    if isinstance(validation_fraction, bool) or not isinstance(validation_fraction, numbers.Real) or not (
            0 < validation_fraction < 1):
        raise DataError(f"`validation_fraction` must be in (0, 1). Received: {validation_fraction!r}")
    carve = "validation" in splits
    if isinstance(source, str) and not is_local_path(source):
        if label_names is not None:
            raise DataError("`label_names` is for local files; TFDS datasets name their classes.")
        data = _load_tfds(source, splits, text_column, data_dir, carve)
    else:
        if text_column is not None:
            raise DataError("`text_column` is for TFDS names; give columns in `LocalFile(...)` instead.")
        if data_dir is not None:
            raise DataError(f"`data_dir` (--data-dir) is where TFDS keeps its datasets; the data here are local "
                            f"files. Received: data_dir={data_dir!r}")
        data = _load_local(source, splits, carve, checked_label_names(label_names), validation_fraction, seed,
                           skip_bad_rows)
    if carve and "validation" not in data.splits:
        data.splits["train"], data.splits["validation"] = split_by_index(data.splits["train"], validation_fraction, seed)
    data.splits = {name: data.splits[name] for name in splits}
    empty = [name for name in splits if (data.rows or {}).get(name) == 0]
    if empty:
        reason = ""
        if carve and empty[0] in ("train", "validation"):
            reason = (f": the validation carve (about {validation_fraction:.0%} of the training rows, or of their "
                      f"groups) left {data.rows['train']} rows to train on and {data.rows['validation']} to validate "
                      "on; give more rows, another validation fraction (--validation-fraction) or a validation file "
                      "(--validation-data)")
        raise DataError(f"the {empty[0]} split has no rows{reason}")
    return data


# Suffixes (before an optional .gz) of each format; a folder's other files (README.md, ...) are not data.
FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".tfrecord": "tfrecord",
           ".tfrecords": "tfrecord", ".tfrec": "tfrecord"}


def file_format(path):
    """"csv", "tsv", "jsonl" or "tfrecord", from the name (an optional ".gz" aside); None if none of them."""
    name = path[:-3] if path.endswith(".gz") else path
    return FORMATS.get(os.path.splitext(name)[1].lower())


def is_pattern(path):
    return any(character in os.fspath(path) for character in "*?[")


DATA_SUFFIXES = (*FORMATS, ".gz")


def is_local_path(source):
    """Whether the string `source` names a local file rather than a TFDS dataset.

    TFDS names are `name`, `name/config` and either with `:version` (`imdb_reviews`,
    `glue/sst2`, `imdb_reviews:1.0.0`); a path exists, ends like a data file
    (`.csv`, `.tsv`, `.gz`, ...) or starts with `.`, `/` or `~`.
    """
    return (os.path.exists(source) or source.lower().endswith(DATA_SUFFIXES) or source.startswith((".", "/", "~"))
            or is_pattern(source) or "://" in source)


def resolve_source(data, test_data=None, text_column=None, label_column=None, header=True, label_offset=0,
                   validation_data=None, stream=None, group_column=None, delimiter=None):
    """The `load_dataset` arguments for a run's data: `(source, splits, tfds_text_column)`.

    `data` is a TFDS name, a local file (then `test_data` and `validation_data` are
    files in the same format, read with the same column options; `group_column` is the
    training file's, see `LocalFile`), a `LocalFile`, or a dict of split name to
    `LocalFile`. A validation split is always asked for (carved from train when the
    source has none).
    """
    if data is None:
        raise DataError("no data: give a TFDS name or a CSV/TSV file")
    _check_source(data, test_data, validation_data)
    if group_column is not None and isinstance(data, (LocalFile, dict)):
        raise DataError("give the group column of LocalFile data as LocalFile(..., group_column=...)")
    if group_column is not None and (validation_data is not None or not is_local_path(os.fspath(data))):
        raise DataError("a group column (--group-column) decides which rows of a local training file (--data) are "
                        "held out for validation; it goes with neither a validation file nor a TFDS name")
    if isinstance(data, LocalFile):
        data = {"train": data}
    if isinstance(data, dict):
        return data, tuple(data) + ("validation",), None
    data = os.fspath(data)
    if not is_local_path(data):
        if validation_data is not None:
            raise DataError("a validation file (--validation-data) goes with a local training file; "
                            f"{data!r} is a TFDS name, whose validation split is used or carved")
        return data, ("train", "validation", "test"), text_column
    options = dict(header=header, label_offset=label_offset, stream=stream, delimiter=delimiter)
    if text_column is not None:
        options["text_column"] = text_column
    if label_column is not None:
        options["label_column"] = label_column
    for name, other in (("test", test_data), ("validation", validation_data)):
        if other is not None and os.path.exists(data) and os.path.exists(other) and os.path.samefile(data, other):
            warnings.warn(f"the {name} file is the training file {data}: its scores are on rows the model trained on, "
                          "not held out", stacklevel=2)
    source = {"train": LocalFile(data, **options, group_column=group_column)}
    if test_data:
        source["test"] = LocalFile(os.fspath(test_data), **options)
    if validation_data:
        source["validation"] = LocalFile(os.fspath(validation_data), **options)
    return source, tuple(dict.fromkeys([*source, "validation"])), None


def _check_source(data, test_data, validation_data):
    """The types `resolve_source` reads, else a `DataError` saying so (in-memory data such as a
    DataFrame or a list of rows ended in a TypeError from `os.fspath`)."""
    paths = (str, os.PathLike)
    if isinstance(data, dict):
        wrong = {split: type(part).__name__ for split, part in data.items() if not isinstance(part, LocalFile)}
        if wrong:
            raise DataError(f"a dict of data maps split names to LocalFile; got {wrong}")
    elif not isinstance(data, (*paths, LocalFile)):
        hint = " (write a DataFrame to a file first: df.to_csv('train.csv', index=False))" \
            if type(data).__name__ == "DataFrame" else ""
        raise DataError("data must be a TFDS name, a file, glob or folder of shards, a LocalFile or a dict of split "
                        f"name to LocalFile; got {type(data).__name__}{hint}")
    for name, value in (("test_data", test_data), ("validation_data", validation_data)):
        if value is not None and not isinstance(value, paths):
            raise DataError(f"{name} must be a file, as data is; got {type(value).__name__}")


def load_labelled_data(data, test_data=None, text_column=None, label_column=None, header=True, label_offset=0,
                       label_names=None, data_dir=None, validation_fraction=0.1, seed=0, validation_data=None,
                       stream=None, skip_bad_rows=False, group_column=None, delimiter=None):
    """`(dataset, source)`: the splits of a run (train, the validation file or a seeded
    validation carve, test if there is one) from `train()`'s data arguments (see
    `resolve_source`; `stream`, `group_column`, `delimiter`: see `LocalFile`)."""
    if validation_data is not None and validation_fraction != 0.1:
        raise DataError(f"validation_fraction (--validation-fraction) is the share of the training rows held out when "
                        f"there is no validation file; got {validation_fraction} with one (--validation-data)")
    source, splits, tfds_text_column = resolve_source(data, test_data, text_column, label_column, header, label_offset,
                                                      validation_data, stream, group_column, delimiter)
    dataset = load_dataset(source, splits, validation_fraction=validation_fraction, seed=seed, data_dir=data_dir,
                           text_column=tfds_text_column, label_names=label_names, skip_bad_rows=skip_bad_rows)
    return dataset, source


def split_by_index(dataset, fraction, seed):
    """`(kept, held)`: `dataset` split in two by `held_out` of each row's index (the carve of
    TFDS splits, the vocabulary's sample)."""
    keyed = dataset.enumerate().map(lambda index, row: (tf.strings.as_string(index), row))
    held = keyed.filter(lambda key, row: held_out(key, fraction, seed))
    kept = keyed.filter(lambda key, row: tf.logical_not(held_out(key, fraction, seed)))
    return kept.map(_without_key), held.map(_without_key)


def _without_key(key, row):
    # A function, not two `lambda key, row: row` on one line: AutoGraph cannot tell those apart in
    # the source and warned in every run that carves or samples by index.
    return row


# ---------------------------------------------------------------------- TFDS
def first_unreachable(urls, timeout=10):
    """`"host: reason"` for the first host of `urls` that takes no connection within `timeout`
    seconds, else None. Offline, TFDS's downloader retries each file for about 3.5 minutes
    before it fails; this answers in seconds. Behind a proxy (the `*_proxy` environment
    variables) connections go through it, so nothing is checked."""
    if urllib.request.getproxies():
        return None
    hosts = {}
    for parsed in map(urllib.parse.urlsplit, urls):
        if parsed.scheme in ("http", "https") and parsed.hostname:
            hosts.setdefault((parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80)), None)
    for host in hosts:
        try:
            socket.create_connection(host, timeout=timeout).close()
        except OSError as error:
            return f"{host[0]}: {error.strerror or error}"
    return None


_OFFLINE_HINT = ("Without internet, pass a local file instead (--data FILE; in Python a path or "
                 "LocalFile('../shared/data/imdb/train.csv.gz')).")


def _load_tfds(name, splits, text_column, data_dir, carve):
    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except Exception as error:  # TFDS raises several types, for unknown names and for bad versions or configs
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        base = re.split(r"[:/]", name, maxsplit=1)[0]
        if base != name and base in tfds.list_builders(with_community_datasets=False):
            raise DataError(f"TFDS dataset {base!r} has no {name!r} ({reason})") from None
        raise DataError(f"Unknown dataset {name!r}: not a TFDS dataset and not a file ({reason})") from None
    if not builder.is_prepared():
        unreachable = first_unreachable(builder.url_infos or {})
        if unreachable:
            raise DataError(
                f"TFDS dataset {name!r} is not prepared in {builder.data_dir} and its source cannot be reached "
                f"({unreachable}). {_OFFLINE_HINT}"
            )
        try:
            builder.download_and_prepare()
        except Exception as error:
            raise DataError(
                f"TFDS dataset {name!r} is not prepared in {builder.data_dir} and could not be "
                f"downloaded ({type(error).__name__}). {_OFFLINE_HINT}"
            ) from None
    features = builder.info.features
    label_name = _tfds_label_feature(name, features)
    text_names = _tfds_text_features(name, features, text_column)
    wanted = [s for s in splits if not (carve and s == "validation" and s not in builder.info.splits)]
    missing = [s for s in wanted if s not in builder.info.splits]
    if missing:
        raise DataError(
            f"TFDS dataset {name!r} has no split {missing[0]!r}. Available: {sorted(builder.info.splits)}"
        )

    def to_pair(example):
        text = tf.strings.reduce_join([example[n] for n in text_names], separator=" ")
        return text, tf.cast(example[label_name], tf.int32)

    datasets = {
        s: builder.as_dataset(split=s, shuffle_files=False).map(to_pair, num_parallel_calls=tf.data.AUTOTUNE)
        for s in wanted
    }
    return TextClassificationData(datasets, list(features[label_name].names))


def _tfds_label_feature(name, features):
    labels = [n for n, f in features.items() if isinstance(f, tfds.features.ClassLabel)]
    if len(labels) != 1:
        raise DataError(
            f"TFDS dataset {name!r} must have exactly one ClassLabel feature to be a text-classification "
            f"dataset. Received features: {dict((n, type(f).__name__) for n, f in features.items())}"
        )
    return labels[0]


def _tfds_text_features(name, features, text_column):
    texts = sorted(n for n, f in features.items() if isinstance(f, tfds.features.Text))
    if text_column is None:
        chosen = ["text"] if "text" in texts else texts
    else:
        chosen = [text_column] if isinstance(text_column, str) else list(text_column)
    unknown = [n for n in chosen if n not in texts]
    if not chosen or unknown:
        raise DataError(
            f"TFDS dataset {name!r}: text feature {unknown[0] if unknown else None!r} not found. "
            f"Text features: {texts}"
        )
    return chosen


# --------------------------------------------------------------- local files
def _load_local(source, splits, carve, label_names=None, validation_fraction=0.1, seed=0, skip_bad_rows=False):
    if not isinstance(source, dict):
        source = {"train": source}
    files = {split: LocalFile(f) if isinstance(f, (str, os.PathLike)) else f for split, f in source.items()}
    wanted = [s for s in splits if not (carve and s == "validation" and s not in files)]
    missing = [s for s in wanted if s not in files]
    if missing:
        raise DataError(
            f"No file for split {missing[0]!r}. Give a dict of split to file, e.g. "
            f"{{'train': 'train.csv', {missing[0]!r}: '{missing[0]}.csv'}}. Received splits: {sorted(files)}"
        )
    if any(file.streamed for file in files.values()):
        from keras_textattn.datasets.streaming import load_streamed

        grouped = [file.path for file in files.values() if file.group_column is not None]
        if grouped:
            raise DataError(f"{grouped[0]}: a group column (--group-column) is for a file read into memory; streamed "
                            "data is carved row by row (give a validation file of other groups instead)")

        return load_streamed(files, splits if carve else wanted, label_names, validation_fraction if carve else None, seed,
                             skip_bad_rows)
    if skip_bad_rows:
        raise DataError("skip_bad_rows (--skip-bad-rows) is for streamed data (a glob, a folder, JSONL, TFRecord, "
                        "or stream=True / --stream)")
    reference = "train" if "train" in files else wanted[0]
    rows = {split: read_labelled_texts(files[split]) for split in dict.fromkeys([reference] + wanted)}
    named = label_names is not None
    label_names, label_ids = label_ids_for(rows[reference][1], label_names, files[reference])
    datasets = {}
    for split in dict.fromkeys([reference] + wanted):
        texts, labels, row_numbers, groups = rows[split]
        for label, row_number in zip(labels, row_numbers):
            if label not in label_ids:
                known_as = KNOWN_AS_NAMED if named else f"seen in {files[reference].path}"
                raise DataError(f"{files[split].path}, row {row_number}: column {files[split].label_column!r}: label "
                                f"{label!r} was not {known_as}. Known labels: {sorted(label_ids)}")
        texts, ids = np.array(texts, dtype=object), np.array([label_ids[label] for label in labels], "int32")
        if split == reference and carve and "validation" not in files:
            name = os.path.basename(os.fspath(files[split].path))
            keys = [f"group:{group}" if group else f"{name}:{row}" for row, group in zip(row_numbers, groups)]
            held = held_out(tf.constant(keys), validation_fraction, seed).numpy()
            datasets["validation"] = _pairs(texts[held], ids[held])
            texts, ids = texts[~held], ids[~held]
        datasets[split] = _pairs(texts, ids)
    return TextClassificationData(datasets, label_names, rows={name: len(d) for name, d in datasets.items()})


def _pairs(texts, labels):
    return tf.data.Dataset.from_tensor_slices((tf.constant(texts.tolist(), tf.string), tf.constant(labels)))


def held_out(keys, fraction, seed):
    """Whether each row, named by its string key ("file name:row"), falls in a validation split
    of `fraction` of the rows: a seeded hash of the key, so the same seed gives the same rows
    however the rows are read (in memory, streamed, split among workers, the folder moved)."""
    buckets = 10000
    return tf.strings.to_hash_bucket_fast(tf.strings.join([keys, str(seed)], ":"), buckets) < int(round(fraction * buckets))


KNOWN_AS_NAMED = "an id of the label names given (--label-names)"  # what the known labels are then, for errors


def checked_label_names(label_names):
    """`label_names` (`--label-names`) as a list of at least two distinct, non-empty names
    (stripped), else a `DataError`; None stays None."""
    if label_names is None:
        return None
    if isinstance(label_names, str):
        raise DataError(f"label names are a list of names, one per class; got the string {label_names!r} "
                        "(the command line's --label-names is split at commas)")
    names = [str(name).strip() for name in label_names]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if len(names) < 2 or "" in names or repeated:
        problem = ("two or more" if len(names) < 2 else "no empty one" if "" in names
                   else f"each once ({', '.join(map(repr, repeated))} repeated)")
        raise DataError(f"label names (--label-names) name the classes 0..n-1: {problem}; got {names}")
    return names


# Up to this many classes a label column is not checked for being mostly distinct values: small
# files (a few rows of a few classes) are left alone.
MOST_CLASSES_UNCHECKED = 100


def label_ids_for(labels, label_names, file):
    """`(label_names, {label as written: id})` for the labels of the training file `file` (one
    per row, or their counts): the given `label_names` (then labels are ids 0..n-1: another
    label is a `DataError`, and a name no training row has is a warning), or
    `label_names_of(labels)`. A label column of almost only distinct values (more classes than
    half the rows, and over `MOST_CLASSES_UNCHECKED`) is a `DataError`: it is the text column,
    or another one, read as labels."""
    counts = collections.Counter(labels)
    found = sorted(counts)
    if len(found) < 2:
        raise DataError(f"{file.path}: a classifier needs at least 2 classes; the label column "
                        f"{file.label_column!r} has {len(found)}: {found}")
    rows = sum(counts.values())
    if label_names is None and len(found) > max(MOST_CLASSES_UNCHECKED, rows / 2):
        alone = sum(count == 1 for count in counts.values())
        raise DataError(f"{file.path}: the label column {file.label_column!r} has {len(found):,} different values in "
                        f"{rows:,} rows ({alone:,} of them on one row only), e.g. {str(found[0])[:40]!r}; is it the label "
                        "column (--label-column)? A classifier learns a class from several rows of it")
    if label_names is None:
        label_names = label_names_of(found, file.path)
        return label_names, {name: i for i, name in enumerate(label_names)}
    ids = {str(i): i for i in range(len(label_names))}
    other = [label for label in found if label not in ids]
    if other:
        raise DataError(f"{file.path}: the {len(label_names)} label names given (--label-names) are for the labels "
                        f"0..{len(label_names) - 1}; the label column {file.label_column!r} also has {other[:5]}")
    unseen = [name for label, name in enumerate(label_names) if str(label) not in found]
    if unseen:
        warnings.warn(f"{file.path}: no training row is labelled {unseen} (the label names given name "
                      f"{len(label_names)} classes); the model will not learn to predict them", stacklevel=2)
    return label_names, ids


def label_names_of(labels, path=None):
    """The class names of these labels (strings): sorted, numerically when all are integers."""
    unique = set(labels)
    try:
        return [str(v) for v in sorted(unique, key=int)]
    except ValueError:
        numbers = sorted(v for v in unique if v.lstrip("-").isdigit())
        if numbers:
            warnings.warn(f"{path}: the labels mix integers {numbers[:5]} and names "
                          f"{sorted(unique - set(numbers))[:5]}; each is a class of its own", stacklevel=2)
        spellings = collections.defaultdict(list)
        for label in sorted(unique):
            spellings[label.casefold()].append(label)
        alike = [group for group in spellings.values() if len(group) > 1]
        if alike:
            warnings.warn(f"{path}: labels that differ only in case are classes of their own: "
                          f"{', '.join(' and '.join(map(repr, group)) for group in alike[:5])}", stacklevel=2)
        return sorted(unique)


def refuse_utf16(path, start):
    """A `DataError` for a file whose first bytes `start` are UTF-16's byte order mark (Excel's
    "Unicode Text" is UTF-16): read as UTF-8, every other byte of it is a NUL."""
    if start[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        raise DataError(f"{path}: the file is UTF-16 (it starts with UTF-16's byte order mark); save it as UTF-8 "
                        "(Excel: CSV UTF-8)")


def open_text(path):
    """A text file (plain or gzip; CSV, TSV, vectors) as text: a byte order mark dropped, invalid UTF-8 as
    U+FFFD; a UTF-16 file is a `DataError` (`refuse_utf16`)."""
    if not os.path.isfile(path):
        raise DataError(f"Data file not found: {path!r}")
    raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    try:
        refuse_utf16(path, raw.peek(2))
    except DataError:
        raw.close()
        raise
    # Invalid UTF-8 bytes become U+FFFD rather than stopping the read; a byte order mark
    # (Excel writes one) is dropped.
    return io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")


def read_labelled_texts(file):
    """Read a `LocalFile`.

    Returns:
        `(texts, labels, row_numbers, groups)`: texts and stripped labels as str, each
        row's 1-based line number in the file, for error messages, and each row's stripped
        value of `file.group_column` ("" for every row without one).
    """
    with _table(file) as table:
        text_index = [table.index(c) for c in file.text_columns()]
        label_index = table.index(file.label_column)
        check_label_apart(table.path, text_index, label_index, file.label_column)
        group_index = None if file.group_column is None else table.index(file.group_column)
        texts, labels, row_numbers, groups = [], [], [], []
        for line, record in table.rows:
            try:
                label = checked_label(record[label_index], file.label_column, file.label_offset)
            except ValueError as problem:
                raise DataError(f"{table.path}, row {line}: {problem}") from None  # as a streamed file says
            texts.append(" ".join(record[i] for i in text_index))
            labels.append(label)
            row_numbers.append(line)
            groups.append("" if group_index is None else record[group_index].strip())
    if not texts:
        raise DataError(f"{table.path}: no data rows")
    _warn_of_merged_rows(table, label_index, file, labels)
    if not file.header and row_numbers[0] == 1 and labels.count(labels[0]) == 1 and len(set(labels)) > 2:
        warnings.warn(f"{table.path}: row 1's label {labels[0]!r} is on no other row; is row 1 a header? Without a "
                      "header (--no-header, header=False) it is read as a row of a class of its own", stacklevel=2)
    replaced = sum("\ufffd" in text for text in texts)
    if replaced:  # read on (README: invalid UTF-8 becomes U+FFFD), but not silently: a whole file may be Latin-1
        warnings.warn(f"{table.path}: {replaced} of {len(texts)} texts hold U+FFFD, as which bytes that are not UTF-8 "
                      "are read (a Latin-1 or Windows-1252 file? convert it: iconv -f cp1252 -t utf-8)", stacklevel=2)
    return texts, labels, row_numbers, groups


def _warn_of_merged_rows(table, label_index, file, labels):
    """Warn of records read over several lines whose inner lines read alone as rows with a label
    of the file: a stray quote (`pos<TAB>"Great film` in a TSV file) that a later quote on another
    line closes makes the rows between one text; with the right width nothing else shows it. (Two
    rows merged, with no line between them, cannot be told from a text over two lines.)"""
    merged = getattr(table, "merged", ())  # JSONL and TFRecord tables have no quoting
    if not merged:
        return
    known, suspects = set(labels), []
    for start, end, inner in merged:
        for line, fields in inner:
            try:
                label = checked_label(fields[label_index], file.label_column, file.label_offset)
            except ValueError:
                continue
            if label in known:
                suspects.append((start, end, line, label))
                break
    if suspects:
        start, end, line, label = suspects[0]
        warnings.warn(f"{table.path}: {len(suspects)} record{'s' if len(suspects) > 1 else ''} read over several "
                      f"lines hold{'' if len(suspects) > 1 else 's'} lines that read as rows of their own, e.g. lines "
                      f"{start}-{end} (line {line} reads as a row labelled {label!r}): a quote opened on line {start} "
                      f"and closed on line {end}? Those lines are read as one text, not as rows; in a quoted field "
                      'write a quote as "", and quote a field that starts with a quote', stacklevel=3)


def checked_label(label, column, offset=0):
    """A label as read from `column`: stripped, `offset` subtracted; a `ValueError` naming the
    column when it is empty, or not an integer where `offset` needs one."""
    label = label.strip()
    if not label:
        raise ValueError(f"column {column!r}: the label is empty")
    if not offset:
        return label
    try:
        return str(int(label) - offset)
    except ValueError:
        raise ValueError(f"column {column!r}: label_offset needs integer labels. Received: {label!r}") from None


def text_batches(file, batch_size, id_column=None):
    """The texts of a `LocalFile` (its label column unused), read as a stream: `(ids, texts)`
    lists of up to `batch_size` rows, in file order; `ids` holds `id_column`'s values (default:
    a column named "id" when the header has one), or is None without such a column."""
    with _table(file) as table:
        text_index = [table.index(c) for c in file.text_columns()]
        id_column = _id_column(table, id_column)
        id_index = None if id_column is None else table.index(id_column)
        ids, texts = [], []
        for _, record in table.rows:
            texts.append(" ".join(record[i] for i in text_index))
            ids.append(None if id_index is None else record[id_index])
            if len(texts) == batch_size:
                yield (None if id_index is None else ids), texts
                ids, texts = [], []
        if texts:
            yield (None if id_index is None else ids), texts


def id_column_of(file, id_column=None):
    """The column of a `LocalFile` that `text_batches` gives as ids (read from its header
    only): `id_column`, else "id" when the header has one, else None."""
    if id_column is not None:
        return id_column
    with _table(file) as table:
        return _id_column(table, None)


def _id_column(table, id_column):
    return "id" if id_column is None and table.header is not None and "id" in table.header else id_column


def line_batches(path, batch_size):
    """The lines of a plain text file (or gzip) as texts, line ends removed, in lists of up to
    `batch_size`, in file order; a file that cannot be read is a `DataError` naming it."""
    batch = []
    try:
        with open_text(path) as handle:
            for line in handle:
                batch.append(line.rstrip("\r\n"))
                if len(batch) == batch_size:
                    yield batch
                    batch = []
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise _unreadable(path, error) from None
    if batch:
        yield batch


def _unreadable(path, error):
    """The `DataError` for a gzip file that ends early or is not gzip."""
    reason = "it ends early (truncated?)" if isinstance(error, EOFError) else f"not valid gzip ({error})"
    return DataError(f"{path}: cannot be read: {reason}")


class _Table(typing.NamedTuple):
    """An open CSV/TSV file: its header (None without one), its width (the first row's), and
    its data rows as `(line number, record)`, blank lines skipped, widths checked. `merged`
    fills as the rows are read: for each record read over more than two lines, `(first line,
    last line, [(line number, fields)])` of its inner lines that parse alone as a whole row."""

    path: str
    header: list
    width: int
    rows: typing.Iterator
    merged: list

    def index(self, column):
        return column_index(self.path, self.header, self.width, column)


def _table(file):
    """Open a `LocalFile` as a `_Table` of its format: CSV / TSV by column, JSONL / TFRecord by key."""
    kind = file_format(os.fspath(file.path))
    return _keyed_table(file, kind) if kind in ("jsonl", "tfrecord") else _csv_table(file)


class _KeyedTable(typing.NamedTuple):
    """An open JSONL or TFRecord file as a `_Table`: columns are keys (feature names), `header`
    the first row's; rows `(row number, _KeyedRecord)`, blank JSONL lines skipped."""

    path: str
    header: list
    rows: typing.Iterator

    def index(self, column):
        if not isinstance(column, str):
            raise DataError(f"{self.path}: its rows are read by key; give a column name, not the index {column!r}")
        return column


class _KeyedRecord:
    """One JSONL object or tf.train.Example: `record[key]` is its text as `json_text` /
    `feature_text` read it; a record or key that cannot be read is a `DataError` naming file and row."""

    def __init__(self, path, number, kind, raw):
        self.path, self.number = path, number
        self._text = json_text if kind == "jsonl" else feature_text
        self._fields = self._read(parse_keyed, kind, raw)

    def _read(self, function, *arguments):
        try:
            return function(*arguments)
        except ValueError as problem:
            raise DataError(f"{self.path}, row {self.number}: {problem}") from None

    def keys(self):
        return sorted(self._fields)

    def __getitem__(self, key):
        return self._read(self._text, self._fields, key)


def parse_keyed(kind, record):
    """A JSONL line (str or bytes) as a dict, or a TFRecord record as a tf.train.Example's features;
    a `ValueError` says why it is neither."""
    if kind == "tfrecord":
        try:
            return tf.train.Example.FromString(record).features.feature
        except Exception:  # protobuf's DecodeError
            raise ValueError("not a tf.train.Example") from None
    try:
        row = json.loads(record.decode("utf-8", "replace") if isinstance(record, bytes) else record)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, found {type(row).__name__}")
    return row


def json_text(row, key):
    """The text of `key` in a parsed JSONL row (a number as written); a `ValueError` says what is wrong."""
    if key not in row:
        raise ValueError(f"no key {key!r}; keys: {sorted(row)}")
    value = row[key]
    if isinstance(value, (dict, list)) or value is None:
        raise ValueError(f"key {key!r}: expected a string or a number, found {json.dumps(value)[:40]}")
    return valid_unicode(value) if isinstance(value, str) else json.dumps(value)  # "\ud800": U+FFFD


def feature_text(features, name):
    """The text of feature `name` of a tf.train.Example (bytes joined, or one int64); a `ValueError` says what is wrong."""
    if name not in features:
        raise ValueError(f"no feature {name!r}; features: {sorted(features)}")
    feature = features[name]
    kind = feature.WhichOneof("kind")
    if kind == "bytes_list":
        return " ".join(value.decode("utf-8", "replace") for value in feature.bytes_list.value)
    if kind == "int64_list" and len(feature.int64_list.value) == 1:
        return str(feature.int64_list.value[0])
    raise ValueError(f"feature {name!r}: expected bytes or one int64, found {kind}")


@contextlib.contextmanager
def _keyed_table(file, kind):
    """Open a JSONL or TFRecord `LocalFile` as a `_KeyedTable` (closed when the block ends)."""
    path = os.fspath(file.path)
    if not os.path.isfile(path):
        raise DataError(f"Data file not found: {path!r}")
    with contextlib.ExitStack() as stack:
        if kind == "tfrecord":
            records = tf.data.TFRecordDataset(path, compression_type="GZIP" if path.endswith(".gz") else "")
            numbered = enumerate(records.as_numpy_iterator(), 1)
        else:
            numbered = ((n, line) for n, line in enumerate(stack.enter_context(open_text(path)), 1) if line.strip())
        try:
            cut = kind == "tfrecord" and tfrecord_cut(path)
            if cut:
                raise DataError(f"{path}: cannot be read ({cut})")
            rows = ((number, _KeyedRecord(path, number, kind, raw)) for number, raw in numbered)
            first = next(rows, None)
            if first is None:
                raise DataError(f"{path}: the file is empty")
            yield _KeyedTable(path, first[1].keys(), itertools.chain([first], rows))
        except (EOFError, gzip.BadGzipFile, zlib.error, tf.errors.DataLossError) as error:
            raise DataError(f"{path}: cannot be read ({tf_reason(error)})") from None


def tf_reason(error):
    """The reason an error gives, without TensorFlow's wrapping of it ("{{function_node ...}}
    corrupted record at 0 ... [Op:IteratorGetNext] name: " is "corrupted record at 0 ...")."""
    reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*", "", str(error).splitlines()[0] if str(error) else "")
    return reason or type(error).__name__


# A file shorter than a TFRecord's 12-byte record header: TensorFlow reads it as no records, without an error.
NOT_A_TFRECORD = "not a TFRecord file: it holds bytes but no whole record"


def tfrecord_cut(path, chunk=1 << 20):
    """Why a TFRecord file ends inside a record's 12-byte header, or None where it does not.
    TensorFlow reads such a file to its last whole record without an error (one shorter than a
    header as no records), so a file cut there would lose its last rows in silence. One pass in
    `chunk`-byte reads that looks at the headers only; a record that runs past the end is left to
    TensorFlow's own error."""
    offset, read, pending = 0, 0, b""  # the next header's offset; bytes read; those from `offset` on
    with open_bytes(path) as data:
        while block := data.read(chunk):
            pending += block[max(offset - read, 0):]
            read += len(block)
            step = 0
            while step + 12 <= len(pending):  # a header: the data's length (8 bytes), its CRC (4)
                step += 12 + int.from_bytes(pending[step:step + 8], "little") + 4  # + the data and its CRC
            offset, pending = offset + step, pending[step:]
    if not pending:
        return None
    return NOT_A_TFRECORD if offset == 0 else f"it ends inside a record's header at byte {offset} (truncated?)"


@contextlib.contextmanager
def open_bytes(path):
    """A file on any `tf.io.gfile` filesystem as bytes, gzip decompressed when its name ends in .gz."""
    with tf.io.gfile.GFile(path, "rb") as raw:
        if not path.endswith(".gz"):
            yield raw
            return
        with gzip.GzipFile(fileobj=raw) as data:
            yield data


@contextlib.contextmanager
def _csv_table(file):
    """Open a `LocalFile` as a `_Table`; a file that cannot be read (missing, empty, truncated
    or invalid gzip, invalid CSV) is a `DataError` naming it."""
    path = os.fspath(file.path)
    delimiter = file.delimiter or ("\t" if path.endswith((".tsv", ".tsv.gz")) else ",")
    try:
        with open_text(path) as handle:
            read = []  # the lines of the record being read

            def lines():
                for line in handle:
                    read.append(line)
                    yield line

            reader = csv.reader(lines(), delimiter=delimiter)
            first = next(reader, None)
            if first is None:
                raise DataError(f"{path}: the file is empty")
            _check_closed(path, read, reader.line_num, delimiter)  # a header that swallowed the file
            last = read[:]
            read.clear()
            merged = []

            def rows():
                nonlocal last
                for record in reader if file.header else itertools.chain([first], reader):
                    if read:  # not the first record, read above
                        last = read[:]
                        read.clear()
                    if not record:
                        continue
                    start = reader.line_num - len(last) + 1
                    if len(record) != len(first):
                        hint = "" if len(last) == 1 else (f" in one record read from line {start} to here (a quote "
                                                          f"opened on line {start} and closed lines later?)")
                        raise DataError(f"{path}, row {reader.line_num}: expected {len(first)} columns like the "
                                        f"first row, found {len(record)}{hint}")
                    if len(last) > 2:  # lines between the record's first and last
                        inner = [(start + i, fields) for i, line in enumerate(last[1:-1], 1)
                                 for fields in csv.reader([line], delimiter=delimiter) if len(fields) == len(first)]
                        if inner:
                            merged.append((start, reader.line_num, inner))
                    yield reader.line_num, record
                _check_closed(path, last, reader.line_num, delimiter)

            yield _Table(path, first if file.header else None, len(first), rows(), merged)
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise _unreadable(path, error) from None
    except csv.Error as error:
        raise DataError(f"{path}: not a valid CSV/TSV file ({error})") from None


def _check_closed(path, lines, line_number, delimiter):
    """A `DataError` if the file's last record, `lines` ending at line `line_number`, opens a quoted
    field that the file never closes: Python's csv (not strict, to read sloppy quoting such as
    `"a" b`) would read every line after the quote as one text, silently."""
    if '"' not in "".join(lines):
        return
    try:
        list(csv.reader(lines, delimiter=delimiter, strict=True))
    except csv.Error as error:
        if "unexpected end of data" in str(error):
            start = line_number - len(lines) + 1
            count = f"{len(lines)} line{'s' if len(lines) > 1 else ''}"
            raise DataError(f"{path}, line {start}: a quoted field opens there and is never closed, so everything "
                            f"from it to the end of the file ({count}) would be read as one text; close the quote, "
                            'or write a quote inside a quoted field as ""') from None


def check_label_apart(path, text_columns, label_column, label_name):
    """A `DataError` when the label column (`label_column`, an index or key) is one of the text
    columns: a model that reads its label scores ~1.0 and has learned nothing."""
    if label_column in text_columns:
        raise DataError(f"{path}: the label column {label_name!r} is also a text column (--text-column); a model "
                        "reading its own label learns nothing")


def column_index(path, header, width, column):
    """The index of `column` (a name in `header`, or an index below `width`), or a `DataError`."""
    if isinstance(column, int) and not isinstance(column, bool):
        if not 0 <= column < width:
            raise DataError(f"{path}: column index {column} is out of range; the file has {width} columns")
        return column
    if header is None:
        raise DataError(
            f"{path}: column {column!r} is a name but the file has no header; use a column index (0..{width - 1})"
        )
    if column not in header:
        found = [mark for mark in ("\t", ";", "|") if len(header) == 1 and mark in header[0]]
        hint = "" if not found else (
            f" (one column holding {found[0]!r}: a file delimited by {found[0]!r}? "
            + ("Name it .tsv or .tsv.gz, or give --delimiter tab)" if found[0] == "\t" else
               f"Give --delimiter '{found[0]}'; Python: delimiter={found[0]!r})"))
        spaced = [name for name in header if isinstance(column, str) and name.strip() == column]
        if spaced:
            hint = (f" ({spaced[0]!r} has spaces around the name, as a space after the delimiter writes it: give the "
                    f"name as the file spells it, {spaced[0]!r}, or remove the spaces from the header)")
        raise DataError(f"{path}: no column {column!r}. Columns: {header}{hint}")
    return header.index(column)
