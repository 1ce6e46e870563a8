"""Labelled splits: `TextClassificationData`, the label names and ids, and the held-out carve."""

import collections
import dataclasses
import os
import warnings

import numpy as np
import tensorflow as tf

from keras_textattn.datasets.formats import DataError


@dataclasses.dataclass
class TextClassificationData:
    """What `load_dataset` returns.

    Attributes:
        splits: split name to a `tf.data.Dataset` of `(text: tf.string, label: tf.int32)`
            scalars, unbatched; with `multi_label`, each label is a float32 vector of 0s and 1s,
            one per label name.
        label_names: class names; label id i is `label_names[i]`.
        multi_label: each text has a set of labels (none, one or several).
    """

    splits: dict
    label_names: list
    rows: dict = None
    skipped: dict = None
    shard_files: dict = None
    multi_label: bool = False

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
                return build(mine), (
                    f"worker {worker} of {workers} reads {len(mine)} of {len(paths)} shards: "
                    f"{', '.join(os.path.basename(p) for p in mine[:5])}{' ...' if len(mine) > 5 else ''}"
                )
        description = "fewer shards than workers" if self.streamed else "one file"
        return self.splits[split].shard(workers, worker), (
            f"worker {worker} of {workers} reads one row in {workers}, from row {worker} ({description})"
        )

    @property
    def num_classes(self):
        return len(self.label_names)


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


def held_out(keys, fraction, seed):
    """Whether each row, named by its string key ("file name:row"), falls in a validation split
    of `fraction` of the rows: a seeded hash of the key, so the same seed gives the same rows
    however the rows are read (in memory, streamed, split among workers, the folder moved)."""
    buckets = 10000
    return tf.strings.to_hash_bucket_fast(tf.strings.join([keys, str(seed)], ":"), buckets) < int(
        round(fraction * buckets)
    )


KNOWN_AS_NAMED = "an id of the label names given (--label-names)"  # what the known labels are then, for errors


def checked_label_names(label_names):
    """`label_names` (`--label-names`) as a list of at least two distinct, non-empty names
    (stripped), else a `DataError`; None stays None."""
    if label_names is None:
        return None
    if isinstance(label_names, str):
        raise DataError(
            f"label names are a list of names, one per class; got the string {label_names!r} "
            "(the command line's --label-names is split at commas)"
        )
    names = [str(name).strip() for name in label_names]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if len(names) < 2 or "" in names or repeated:
        problem = (
            "two or more"
            if len(names) < 2
            else "no empty one"
            if "" in names
            else f"each once ({', '.join(map(repr, repeated))} repeated)"
        )
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
        raise DataError(
            f"{file.path}: a classifier needs at least 2 classes; the label column "
            f"{file.label_column!r} has {len(found)}: {found}"
        )
    rows = sum(counts.values())
    if label_names is None and len(found) > max(MOST_CLASSES_UNCHECKED, rows / 2):
        alone = sum(count == 1 for count in counts.values())
        raise DataError(
            f"{file.path}: the label column {file.label_column!r} has {len(found):,} different values in "
            f"{rows:,} rows ({alone:,} of them on one row only), e.g. {str(found[0])[:40]!r}; is it the label "
            "column (--label-column)? A classifier learns a class from several rows of it"
        )
    if label_names is None:
        label_names = label_names_of(found, file.path)
        return label_names, {name: i for i, name in enumerate(label_names)}
    ids = {str(i): i for i in range(len(label_names))}
    other = [label for label in found if label not in ids]
    if other:
        raise DataError(
            f"{file.path}: the {len(label_names)} label names given (--label-names) are for the labels "
            f"0..{len(label_names) - 1}; the label column {file.label_column!r} also has {other[:5]}"
        )
    unseen = [name for label, name in enumerate(label_names) if str(label) not in found]
    if unseen:
        warnings.warn(
            f"{file.path}: no training row is labelled {unseen} (the label names given name "
            f"{len(label_names)} classes); the model will not learn to predict them",
            stacklevel=2,
        )
    return label_names, ids


def label_names_of(labels, path=None):
    """The class names of these labels (strings): sorted, numerically when all are integers."""
    unique = set(labels)
    try:
        return [str(v) for v in sorted(unique, key=int)]
    except ValueError:
        numbers = sorted(v for v in unique if v.lstrip("-").isdigit())
        if numbers:
            warnings.warn(
                f"{path}: the labels mix integers {numbers[:5]} and names "
                f"{sorted(unique - set(numbers))[:5]}; each is a class of its own",
                stacklevel=2,
            )
        spellings = collections.defaultdict(list)
        for label in sorted(unique):
            spellings[label.casefold()].append(label)
        alike = [group for group in spellings.values() if len(group) > 1]
        if alike:
            warnings.warn(
                f"{path}: labels that differ only in case are classes of their own: "
                f"{', '.join(' and '.join(map(repr, group)) for group in alike[:5])}",
                stacklevel=2,
            )
        return sorted(unique)


def label_set_ids_for(label_sets, label_names, file):
    """`(label_names, {label as written: id})` for the label sets (tuples) of the multi-label
    training file `file`: for 0/1 columns, the columns in their order (named by `label_names`
    when given, one per column); else the given `label_names` (labels are then ids 0..n-1) or
    `label_names_of` the labels found. Fewer than two labels is a `DataError`."""
    if isinstance(file.label_column, (list, tuple)):
        written = [str(column) for column in file.label_column]
        if label_names is not None and len(label_names) != len(written):
            raise DataError(
                f"{file.path}: {len(label_names)} label names given (--label-names) for the "
                f"{len(written)} label columns {written}"
            )
        return list(label_names or written), {label: i for i, label in enumerate(written)}
    found = sorted({label for labels in label_sets for label in labels})
    if len(found) < 2 and label_names is None:
        raise DataError(
            f"{file.path}: a multi-label classifier needs at least 2 labels; the label column "
            f"{file.label_column!r} has {len(found)}: {found}"
        )
    counts = collections.Counter(label for labels in label_sets for label in labels)
    return label_ids_for(counts, label_names, file)


def multi_hot(label_sets, label_ids):
    """float32 `(rows, labels)`: 1 where a row's label set holds the label of that id."""
    hot = np.zeros((len(label_sets), len(set(label_ids.values()))), np.float32)
    for row, labels in enumerate(label_sets):
        hot[row, [label_ids[label] for label in labels]] = 1.0
    return hot
