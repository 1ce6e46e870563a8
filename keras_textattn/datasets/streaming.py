"""Local data read as a stream by `tf.data`: globs and folders of shards, CSV / TSV, JSONL
and TFRecord files (plain or gzip), on any filesystem `tf.io.gfile` reads.

Nothing is held in Python lists: shards are interleaved by `tf.data` and parsed in batches
(Python's `csv` / `json` and protobuf parsers inside `tf.numpy_function`, so a row is read
exactly as the in-memory reader reads it, one row per line). What needs a pass over the
data gets one streamed pass per split before training (`first_pass`): the label set (of
the training split), the row counts, and every row that cannot be read, named by file and
row. TensorFlow backend only.
"""

import collections
import csv
import dataclasses
import os
import zlib

import numpy as np
import tensorflow as tf

from keras_textattn.datasets.formats import DataError
from keras_textattn.datasets.formats import check_label_apart
from keras_textattn.datasets.formats import checked_label
from keras_textattn.datasets.formats import column_index
from keras_textattn.datasets.formats import feature_text
from keras_textattn.datasets.formats import file_format
from keras_textattn.datasets.formats import is_pattern
from keras_textattn.datasets.formats import json_text
from keras_textattn.datasets.formats import open_bytes
from keras_textattn.datasets.formats import parse_keyed
from keras_textattn.datasets.formats import refuse_utf16
from keras_textattn.datasets.formats import tf_reason
from keras_textattn.datasets.formats import tfrecord_cut
from keras_textattn.datasets.splits import KNOWN_AS_NAMED
from keras_textattn.datasets.splits import TextClassificationData
from keras_textattn.datasets.splits import held_out
from keras_textattn.datasets.splits import label_ids_for

PARSE_BATCH = 256  # records parsed per call of Python's parsers


def shards(path):
    """The files that `path` names: itself, the files a glob matches, or the data files of a
    folder (by suffix, see `loading.FORMATS`), sorted; one format for all of them."""
    path = os.fspath(path)
    if is_pattern(path):
        found = sorted(tf.io.gfile.glob(path))
    elif tf.io.gfile.isdir(path):
        found = sorted(
            os.path.join(path, name)
            for name in tf.io.gfile.listdir(path)
            if _is_shard(name) and not tf.io.gfile.isdir(os.path.join(path, name))
        )
    else:
        found = [path] if tf.io.gfile.exists(path) else []
    if not found:
        raise DataError(
            f"No data files found at {path!r}"
            + (
                " (a folder is read for .csv, .tsv, .jsonl and .tfrecord files, plain or .gz)"
                if tf.io.gfile.isdir(path)
                else ""
            )
        )
    formats = {file_format(name) or "csv" for name in found}
    if len(formats) > 1:
        raise DataError(f"{path!r} names files of different formats ({', '.join(sorted(formats))}); give one format")
    return found


def _is_shard(name):
    """Whether a folder's file `name` is one of its shards: a data file by suffix (`file_format`),
    but not `.txt`, which a file given by name may be (CSV) and which beside shards is a README.txt
    or LICENSE.txt (a glob, `folder/*.txt`, reads .txt shards); nor a hidden file."""
    return not name.startswith(".") and file_format(name) and not name.lower().endswith((".txt", ".txt.gz"))


def files_named(path):
    """The files `path` stands for, for the readers of one file at a time: `shards(path)` for a
    glob or a folder of shards (sorted), else `[path]` (a missing file is its reader's error)."""
    path = os.fspath(path)
    return shards(path) if is_pattern(path) or tf.io.gfile.isdir(path) else [path]


def each_file(file):
    """A `LocalFile` as one `LocalFile` per file its path stands for (`files_named`), for
    `predict`, `evaluate` and `explain`."""
    return [dataclasses.replace(file, path=path) for path in files_named(file.path)]


@dataclasses.dataclass
class _Layout:
    """How a split's records become `(text, label)`: the format, and for CSV / TSV the delimiter,
    the width and the column indices; for JSONL and TFRecord the key / feature names."""

    format: str
    header: bool
    text_columns: list
    label_column: object
    label_offset: int
    delimiter: str = ","
    width: int = 0
    label_name: object = None  # as the user gave it, for messages


def layout(file, paths):
    """The `_Layout` of a `LocalFile` whose shards are `paths`; for CSV / TSV, every shard's
    first line is read: a shard whose header (or, without one, width) differs is an error."""
    text_columns = list(file.text_columns())
    kind = file_format(paths[0]) or "csv"
    if kind in ("jsonl", "tfrecord"):
        names = [*text_columns, file.label_column]
        if any(not isinstance(name, str) for name in names):
            raise DataError(f"{paths[0]}: {kind} rows are read by key; give column names, not indices ({names})")
        check_label_apart(paths[0], text_columns, file.label_column, file.label_column)
        return _Layout(kind, False, text_columns, file.label_column, file.label_offset)
    delimiter = file.delimiter or ("\t" if kind == "tsv" else ",")
    first = {path: _first_record(path, delimiter) for path in paths}
    reference = first[paths[0]]
    for path, record in first.items():
        if file.header and record != reference:
            raise DataError(f"{path}, row 1: its header {record} differs from the header of {paths[0]}: {reference}")
        if not file.header and len(record) != len(reference):
            raise DataError(f"{path}, row 1: expected {len(reference)} columns like {paths[0]}, found {len(record)}")
    header = reference if file.header else None
    indices = [column_index(paths[0], header, len(reference), column) for column in text_columns]
    label = column_index(paths[0], header, len(reference), file.label_column)
    check_label_apart(paths[0], indices, label, file.label_column)
    return _Layout(kind, file.header, indices, label, file.label_offset, delimiter, len(reference), file.label_column)


def _first_record(path, delimiter):
    try:
        with open_bytes(path) as data:
            line = data.readline()
    except (EOFError, OSError, zlib.error) as error:
        raise DataError(f"{path}: cannot be read ({error})") from None
    if not line.strip():
        raise DataError(f"{path}: the file is empty")
    refuse_utf16(path, line)
    return next(csv.reader([line.decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r\n")], delimiter=delimiter))


# ------------------------------------------------------------------ parsing
def _parse(layout, records):
    """Parse a batch of raw records (bytes): `(texts, labels, problems)` arrays of bytes; a row
    that cannot be read has an empty text and label and says why in `problems`."""
    texts, labels, problems = [], [], []
    for record in records:
        try:
            text, label = _PARSERS[layout.format](layout, record)
            label = checked_label(label, layout.label_name or layout.label_column, layout.label_offset)
            texts.append(text.encode("utf-8"))
            labels.append(label.encode("utf-8"))
            problems.append(b"")
        except ValueError as problem:
            texts.append(b"")
            labels.append(b"")
            problems.append(str(problem).encode("utf-8"))
    return [np.array(column, dtype=object) for column in (texts, labels, problems)]


def _csv_row(layout, record):
    line = record.decode("utf-8", "replace").lstrip("\ufeff")
    fields = next(csv.reader([line], delimiter=layout.delimiter), [])
    if len(fields) != layout.width:
        hint = " (a quoted field that spans lines? streamed files need one row per line)" if line.count('"') % 2 else ""
        raise ValueError(f"expected {layout.width} columns like the first row, found {len(fields)}{hint}")
    return " ".join(fields[i] for i in layout.text_columns), fields[layout.label_column]


def _json_row(layout, record):
    row = parse_keyed("jsonl", record)
    return " ".join(json_text(row, name) for name in layout.text_columns), json_text(row, layout.label_column)


def _example_row(layout, record):
    features = parse_keyed("tfrecord", record)
    return " ".join(feature_text(features, name) for name in layout.text_columns), feature_text(
        features, layout.label_column
    )


_PARSERS = {"csv": _csv_row, "tsv": _csv_row, "jsonl": _json_row, "tfrecord": _example_row}


# ------------------------------------------------------------------ datasets
def record_batches(paths, layout, *, seed=0, validation_fraction=None, side="all"):
    """The records of `paths` in batches (of up to `PARSE_BATCH`, one file each) of
    `(key, text, label, problem, held_out)` vectors.

    `key` is "path:row" (the row's line or record number); `label` the label as written
    (after `label_offset`); `problem` empty for a readable row; `held_out` whether the row is
    in the validation split carved from training (`validation_fraction`; `held_out` of "file
    name:row", so whichever worker reads the shard, from wherever, keeps the same rows out).
    `side`: "train" or "validation" keeps only the rows on that side of the carve, chosen
    before they are parsed; "all" keeps every row. Every step but the parsing works on whole
    batches: per-row `tf.data` steps cost more than the parsing itself.
    """
    fraction = validation_fraction or 0.0

    def batches(path):
        compression = tf.where(tf.strings.regex_full_match(path, r".*\.gz"), "GZIP", "")
        reader = tf.data.TFRecordDataset if layout.format == "tfrecord" else tf.data.TextLineDataset
        numbers = tf.data.Dataset.range(1, 2**62).batch(PARSE_BATCH)
        lines = reader(path, compression_type=compression).batch(PARSE_BATCH)
        name = tf.strings.regex_replace(path, r".*/", "")
        return tf.data.Dataset.zip(numbers, lines).map(
            lambda number, record: parse(path, name, number, record),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )

    def parse(path, name, numbers, records):
        numbers = tf.strings.as_string(numbers[: tf.shape(records)[0]])
        held = held_out(tf.strings.join([name, numbers], ":"), fraction, seed)
        keep = {"train": tf.logical_not(held), "validation": held}.get(side, tf.ones_like(held))
        if layout.header:
            keep = tf.logical_and(keep, numbers != "1")
        if layout.format != "tfrecord":
            keep = tf.logical_and(keep, tf.strings.length(tf.strings.strip(records)) > 0)  # blank lines are no rows
        numbers, records, held = (tf.boolean_mask(values, keep) for values in (numbers, records, held))
        texts, labels, problems = tf.numpy_function(
            lambda batch: _parse(layout, batch), [records], [tf.string] * 3, stateful=False
        )
        shape = tf.shape(records)
        keys = tf.strings.join([path, numbers], ":")
        return keys, tf.reshape(texts, shape), tf.reshape(labels, shape), tf.reshape(problems, shape), held

    names = tf.data.Dataset.from_tensor_slices(list(paths))
    return names.interleave(
        batches, cycle_length=min(len(paths), 8), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )


def labelled(batches, label_ids):
    """`(text, label id)` rows of the readable records of `batches` (`record_batches`), labels
    mapped by `label_ids` (label as written to id)."""
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(list(label_ids), np.array(list(label_ids.values()), "int32")), -1
    )

    def select(key, text, label, problem, held):
        keep = tf.equal(problem, "")
        ids = table.lookup(tf.boolean_mask(label, keep))
        texts = tf.boolean_mask(text, keep)
        return tf.boolean_mask(texts, ids >= 0), tf.boolean_mask(ids, ids >= 0)

    return batches.map(select, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()


@dataclasses.dataclass
class Survey:
    """What one streamed pass over a split found: labels and row counts of the readable rows
    (`held_out`: of them, those the validation carve takes), and the rows and files skipped."""

    labels: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    rows: int = 0
    held_out: int = 0
    bad_rows: int = 0
    unreadable: list = dataclasses.field(default_factory=list)
    first_problem: str = None

    def add(self, other):
        self.labels.update(other.labels)
        self.rows += other.rows
        self.held_out += other.held_out
        self.bad_rows += other.bad_rows
        self.first_problem = self.first_problem or other.first_problem

    def summary(self):
        """For metrics.json and the run's messages: None when nothing was skipped."""
        if not (self.bad_rows or self.unreadable):
            return None
        return {"rows": self.bad_rows, "files": list(self.unreadable), "first": self.first_problem}


def first_pass(
    paths,
    layout,
    *,
    seed=0,
    validation_fraction=None,
    skip_bad_rows=False,
    known_labels=None,
    known_as="seen in the training data",
):
    """One streamed pass over a split, shard by shard: the labels and the rows of each side of the
    validation carve. An unreadable row, and a shard that cannot be read to its end (a corrupt
    TFRecord; a truncated gzip, which `tf.data` would silently read up to the cut), is a
    `DataError` naming the file and the row; with `skip_bad_rows`, such rows are counted and
    such shards left out (`Survey.unreadable`: the caller streams the other shards only).
    Labels not in `known_labels` (the training labels, or the ids of the label names given: the
    error says it is `known_as`) make a row bad."""
    survey = Survey()
    for path in paths:
        found, row = Survey(), 0
        dataset = record_batches([path], layout, seed=seed, validation_fraction=validation_fraction)
        try:
            if path.endswith(".gz") and not _whole_gzip(path):
                raise _Unreadable("it ends early (truncated?)")
            cut = layout.format == "tfrecord" and tfrecord_cut(path)
            if cut:
                raise _Unreadable(cut)
            for keys, _, labels, problems, held in dataset.prefetch(2).as_numpy_iterator():
                for key, label, problem, out in zip(keys, labels, problems, held):
                    row = int(key.rsplit(b":", 1)[1])
                    label = label.decode("utf-8")
                    if not problem and known_labels is not None and label not in known_labels:
                        problem = f"label {label!r} was not {known_as}. Known labels: {sorted(known_labels)}".encode()
                    if problem:
                        message = f"{path}, row {row}: {problem.decode('utf-8')}"
                        if not skip_bad_rows:
                            raise DataError(message)
                        found.bad_rows += 1
                        found.first_problem = found.first_problem or message
                        continue
                    found.labels[label] += 1
                    found.rows += 1
                    found.held_out += bool(out)
        except (tf.errors.OpError, _Unreadable) as error:
            message = f"{path}: cannot be read{f' after row {row}' if row else ''}: {tf_reason(error)}"
            if not skip_bad_rows:
                raise DataError(message) from None
            survey.unreadable.append(path)
            survey.first_problem = survey.first_problem or message + " (the file is left out)"
            continue
        survey.add(found)
    return survey


class _Unreadable(Exception):
    pass


def _whole_gzip(path, chunk=1 << 20):
    """Whether a gzip file decompresses to its end."""
    try:
        with open_bytes(path) as data:
            while data.read(chunk):
                pass
    except (EOFError, OSError, zlib.error):
        return False
    return True


def load_streamed(files, splits, label_names=None, validation_fraction=None, seed=0, skip_bad_rows=False):
    """`load_dataset` for `LocalFile`s read as streams: a `first_pass` over each file, then each
    split as `labelled` rows. `validation_fraction`: carve "validation" out of "train"."""
    reference = "train" if "train" in files else splits[0]
    carve = validation_fraction if "validation" not in files else None
    surveys, readable, layouts = {}, {}, {}
    label_ids = None if label_names is None else {str(i): i for i in range(len(label_names))}
    for split in dict.fromkeys([reference, *[s for s in splits if s in files]]):
        paths = shards(files[split].path)
        layouts[split] = layout(files[split], paths)
        surveys[split] = first_pass(
            paths,
            layouts[split],
            seed=seed,
            validation_fraction=carve if split == reference else None,
            skip_bad_rows=skip_bad_rows,
            known_labels=None if label_ids is None else set(label_ids),
            known_as=KNOWN_AS_NAMED if label_names is not None else "seen in the training data",
        )
        readable[split] = [path for path in paths if path not in surveys[split].unreadable]
        if not (surveys[split].rows or surveys[split].bad_rows or surveys[split].unreadable):
            raise DataError(f"{files[split].path}: no data rows")  # as read in memory (it said "0 classes")
        if split == reference:
            label_names, label_ids = label_ids_for(surveys[split].labels, label_names, files[split])

    def builder(source, side):
        cut = carve if source == reference else None
        return lambda paths: labelled(
            record_batches(paths, layouts[source], seed=seed, validation_fraction=cut, side=side), label_ids
        )

    datasets, counts, shard_files = {}, {}, {}
    for split in splits:
        source = split if split in files else reference  # "validation" carved out of the reference split
        side = split if source == reference and carve else "all"
        shard_files[split] = (readable[source], builder(source, side))
        datasets[split] = shard_files[split][1](readable[source])
        survey = surveys[source]
        counts[split] = {"validation": survey.held_out, "train": survey.rows - survey.held_out}.get(side, survey.rows)
    skipped = {split: survey.summary() for split, survey in surveys.items() if survey.summary()}
    return TextClassificationData(datasets, label_names, rows=counts, skipped=skipped or None, shard_files=shard_files)
