"""TFDS names and local files to `tf.data` datasets of `(text, label)` (TensorFlow backend only):
`load_dataset` and `load_labelled_data`; streamed sources are `streaming`'s."""

import numbers
import os
import re
import socket
import urllib.parse
import urllib.request
import warnings

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_textattn import _backend
from keras_textattn.datasets.formats import DataError
from keras_textattn.datasets.formats import LocalFile
from keras_textattn.datasets.formats import is_local_path
from keras_textattn.datasets.formats import read_labelled_texts
from keras_textattn.datasets.splits import KNOWN_AS_NAMED
from keras_textattn.datasets.splits import TextClassificationData
from keras_textattn.datasets.splits import checked_label_names
from keras_textattn.datasets.splits import held_out
from keras_textattn.datasets.splits import label_ids_for
from keras_textattn.datasets.splits import label_set_ids_for
from keras_textattn.datasets.splits import multi_hot
from keras_textattn.datasets.splits import split_by_index
from keras_textattn.datasets.streaming import load_streamed
from keras_textattn.errors import check_flag


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
    if (
        isinstance(validation_fraction, bool)
        or not isinstance(validation_fraction, numbers.Real)
        or not (0 < validation_fraction < 1)
    ):
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
            raise DataError(
                f"`data_dir` (--data-dir) is where TFDS keeps its datasets; the data here are local "
                f"files. Received: data_dir={data_dir!r}"
            )
        data = _load_local(
            source, splits, carve, checked_label_names(label_names), validation_fraction, seed, skip_bad_rows
        )
    if carve and "validation" not in data.splits:
        data.splits["train"], data.splits["validation"] = split_by_index(
            data.splits["train"], validation_fraction, seed
        )
    data.splits = {name: data.splits[name] for name in splits}
    empty = [name for name in splits if (data.rows or {}).get(name) == 0]
    if empty:
        reason = ""
        if carve and empty[0] in ("train", "validation"):
            reason = (
                f": the validation carve (about {validation_fraction:.0%} of the training rows, or of their "
                f"groups) left {data.rows['train']} rows to train on and {data.rows['validation']} to validate "
                "on; give more rows, another validation fraction (--validation-fraction) or a validation file "
                "(--validation-data)"
            )
        raise DataError(f"the {empty[0]} split has no rows{reason}")
    return data


def resolve_source(
    data,
    test_data=None,
    text_column=None,
    label_column=None,
    header=True,
    label_offset=0,
    validation_data=None,
    stream=None,
    group_column=None,
    delimiter=None,
    label_delimiter=None,
):
    """The `load_dataset` arguments for a run's data: `(source, splits, tfds_text_column)`.

    `data` is a TFDS name, a local file (then `test_data` and `validation_data` are
    files in the same format, read with the same column options; `group_column` is the
    training file's, see `LocalFile`), a `LocalFile`, or a dict of split name to a
    `LocalFile` or a file (read with the column options given here). A validation split is
    always asked for (carved from train when the source has none).
    """
    if data is None:
        raise DataError("no data: give a TFDS name or a CSV/TSV file")
    _check_source(data, test_data, validation_data)
    if group_column is not None and isinstance(data, (LocalFile, dict)):
        raise DataError("give the group column of LocalFile data as LocalFile(..., group_column=...)")
    if group_column is not None and (validation_data is not None or not is_local_path(os.fspath(data))):
        raise DataError(
            "a group column (--group-column) decides which rows of a local training file (--data) are "
            "held out for validation; it goes with neither a validation file nor a TFDS name"
        )
    options = dict(
        header=header, label_offset=label_offset, stream=stream, delimiter=delimiter, label_delimiter=label_delimiter
    )
    if text_column is not None:
        options["text_column"] = text_column
    if label_column is not None:
        options["label_column"] = label_column
    if isinstance(data, LocalFile):
        data = {"train": data}
    if isinstance(data, dict):
        data = {
            split: part if isinstance(part, LocalFile) else LocalFile(os.fspath(part), **options)
            for split, part in data.items()
        }
        return data, tuple(data) + ("validation",), None
    data = os.fspath(data)
    if not is_local_path(data):
        if label_delimiter is not None:
            raise DataError(f"multi-label data (--multi-label) is read from local files; {data!r} is a TFDS name")
        if validation_data is not None:
            raise DataError(
                "a validation file (--validation-data) goes with a local training file; "
                f"{data!r} is a TFDS name, whose validation split is used or carved"
            )
        return data, ("train", "validation", "test"), text_column
    for name, other in (("test", test_data), ("validation", validation_data)):
        if other is not None and os.path.exists(data) and os.path.exists(other) and os.path.samefile(data, other):
            warnings.warn(
                f"the {name} file is the training file {data}: its scores are on rows the model trained on, "
                "not held out",
                stacklevel=2,
            )
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
        wrong = {
            split: type(part).__name__ for split, part in data.items() if not isinstance(part, (LocalFile, *paths))
        }
        if wrong:
            raise DataError(f"a dict of data maps split names to files or LocalFiles; got {wrong}")
    elif not isinstance(data, (*paths, LocalFile)):
        hint = (
            " (write a DataFrame to a file first: df.to_csv('train.csv', index=False))"
            if type(data).__name__ == "DataFrame"
            else ""
        )
        raise DataError(
            "data must be a TFDS name, a file, glob or folder of shards, a LocalFile or a dict of split "
            f"name to file or LocalFile; got {type(data).__name__}{hint}"
        )
    for name, value in (("test_data", test_data), ("validation_data", validation_data)):
        if value is not None and not isinstance(value, paths):
            raise DataError(f"{name} must be a file, as data is; got {type(value).__name__}")


def load_labelled_data(
    data,
    test_data=None,
    text_column=None,
    label_column=None,
    header=True,
    label_offset=0,
    label_names=None,
    data_dir=None,
    validation_fraction=0.1,
    seed=0,
    validation_data=None,
    stream=None,
    skip_bad_rows=False,
    group_column=None,
    delimiter=None,
    multi_label=None,
    label_delimiter=",",
):
    """`(dataset, source)`: the splits of a run (train, the validation file or a seeded
    validation carve, test if there is one) from `train()`'s data arguments (see
    `resolve_source`; `stream`, `group_column`, `delimiter`: see `LocalFile`). With `multi_label`,
    each label cell holds labels separated by `label_delimiter` (`LocalFile.label_delimiter`);
    several label columns are multi-label without it."""
    if validation_data is not None and validation_fraction != 0.1:
        raise DataError(
            f"validation_fraction (--validation-fraction) is the share of the training rows held out when "
            f"there is no validation file; got {validation_fraction} with one (--validation-data)"
        )
    source, splits, tfds_text_column = resolve_source(
        data,
        test_data,
        text_column,
        label_column,
        header,
        label_offset,
        validation_data,
        stream,
        group_column,
        delimiter,
        label_delimiter if multi_label else None,
    )
    dataset = load_dataset(
        source,
        splits,
        validation_fraction=validation_fraction,
        seed=seed,
        data_dir=data_dir,
        text_column=tfds_text_column,
        label_names=label_names,
        skip_bad_rows=skip_bad_rows,
    )
    return dataset, source


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


_OFFLINE_HINT = (
    "Without internet, pass a local file instead (--data FILE; in Python a path or "
    "LocalFile('../shared/data/imdb/train.csv.gz'))."
)


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
        raise DataError(f"TFDS dataset {name!r} has no split {missing[0]!r}. Available: {sorted(builder.info.splits)}")

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
            f"TFDS dataset {name!r}: text feature {unknown[0] if unknown else None!r} not found. Text features: {texts}"
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
    multi_label = {file.multi_label for file in files.values()}
    if len(multi_label) > 1:
        raise DataError(
            "the files of a run are read alike: every one multi-label (a label delimiter, or 0/1 label "
            f"columns), or none; got {', '.join(f'{split} {file.multi_label}' for split, file in files.items())}"
        )
    if True in multi_label and any(file.streamed for file in files.values()):
        raise DataError(
            f"{next(iter(files.values())).path}: multi-label data is read into memory, one file a split "
            "(not a glob, a folder of shards or --stream)"
        )
    if any(file.streamed for file in files.values()):
        grouped = [file.path for file in files.values() if file.group_column is not None]
        if grouped:
            raise DataError(
                f"{grouped[0]}: a group column (--group-column) is for a file read into memory; streamed "
                "data is carved row by row (give a validation file of other groups instead)"
            )

        return load_streamed(
            files, splits if carve else wanted, label_names, validation_fraction if carve else None, seed, skip_bad_rows
        )
    if skip_bad_rows:
        raise DataError(
            "skip_bad_rows (--skip-bad-rows) is for streamed data (a glob, a folder, JSONL, TFRecord, "
            "or stream=True / --stream)"
        )
    reference = "train" if "train" in files else wanted[0]
    rows = {split: read_labelled_texts(files[split]) for split in dict.fromkeys([reference] + wanted)}
    named = label_names is not None
    multi_label = files[reference].multi_label
    label_names, label_ids = (label_set_ids_for if multi_label else label_ids_for)(
        rows[reference][1], label_names, files[reference]
    )
    datasets = {}
    for split in dict.fromkeys([reference] + wanted):
        texts, labels, row_numbers, groups = rows[split]
        for label_set, row_number in zip(labels, row_numbers):
            for label in label_set if multi_label else [label_set]:
                if label not in label_ids:
                    known_as = KNOWN_AS_NAMED if named else f"seen in {files[reference].path}"
                    raise DataError(
                        f"{files[split].path}, row {row_number}: column {files[split].label_column!r}: label "
                        f"{label!r} was not {known_as}. Known labels: {sorted(label_ids)}"
                    )
        texts = np.array(texts, dtype=object)
        ids = multi_hot(labels, label_ids) if multi_label else np.array([label_ids[label] for label in labels], "int32")
        if split == reference and carve and "validation" not in files:
            name = os.path.basename(os.fspath(files[split].path))
            keys = [f"group:{group}" if group else f"{name}:{row}" for row, group in zip(row_numbers, groups)]
            held = held_out(tf.constant(keys), validation_fraction, seed).numpy()
            datasets["validation"] = _pairs(texts[held], ids[held])
            texts, ids = texts[~held], ids[~held]
        datasets[split] = _pairs(texts, ids)
    return TextClassificationData(
        datasets, label_names, rows={name: len(d) for name, d in datasets.items()}, multi_label=multi_label
    )


def _pairs(texts, labels):
    return tf.data.Dataset.from_tensor_slices((tf.constant(texts.tolist(), tf.string), tf.constant(labels)))
