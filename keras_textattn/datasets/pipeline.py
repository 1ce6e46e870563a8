"""Batches of encoded texts for training and evaluation, and class weights (TensorFlow backend only)."""

import math
import numbers
import os

import numpy as np
import tensorflow as tf

from keras_textattn.datasets.formats import DataError
from keras_textattn.datasets.splits import split_by_index
from keras_textattn.vocabulary import PAD_ID

SHUFFLE_ROWS = 100_000

# Rows per batch when a model only predicts (validation, the scores at the end of a run): no
# gradients or activations are kept for a backward pass, and each batch costs Keras and tf.data a
# fixed overhead, so larger batches are several times faster on a CPU.
INFERENCE_ROWS = 256


def inference_batch_size(batch_size):
    """Rows per batch for predicting with a model trained on batches of `batch_size`: the
    largest multiple of `batch_size` up to `INFERENCE_ROWS` (256) and at most 8x it, so a batch
    chosen small to fit a device's memory stays small, and one that splits evenly over a
    strategy's replicas still does; `batch_size` itself when it is larger."""
    return batch_size * max(1, min(8, INFERENCE_ROWS // batch_size))


def make_batches(
    dataset,
    encoder,
    batch_size=32,
    *,
    shuffle=False,
    seed=0,
    cache=True,
    bucket_boundaries=None,
    rows=None,
    shuffle_buffer=None,
    cut_padding=False,
    sample_windows=False,
):
    """`(text, label)` rows to prefetched batches of `(token_ids, label)`.

    Texts are batched first and encoded a batch at a time (vectorised tf-text ops
    on parallel calls), so each batch is padded to its own longest text unless the
    encoder has a fixed `sequence_length`.

    Args:
        dataset: unbatched `(text, label)` pairs, e.g. from `load_dataset`, or the
            `(ids, label)` pairs of `encoded_rows` (kept in memory already: `cache` is moot).
        encoder: a `TextEncoder` with a vocabulary.
        batch_size: rows per batch.
        shuffle: shuffle rows before batching (training), with `seed`, anew each epoch:
            all of them when `rows` is at most `SHUFFLE_ROWS` (100,000), else in a buffer of
            that many (a file sorted by label, as IMDB's is, needs a buffer as long as its
            runs of one label; the buffer is the only memory that grows with the data, up to
            its cap). Without `rows`, a buffer of 10,000; `shuffle_buffer` sets it.
        cache: keep the rows in memory after the first pass: their token ids where `keeps_ids`,
            so that each text is encoded once and not every epoch (the batches are the same);
            else the raw texts.
        bucket_boundaries: word counts; when given, texts of similar length are
            batched together (less padding for long, uneven texts such as IMDB).
        rows: the number of rows, when known: the batches then have a known
            cardinality (Keras shows the epoch's length and does not warn that the
            data "ran out" at its end). Not with `bucket_boundaries`.
        cut_padding: for a model that reads ids shorter than the encoder's length
            (`ModelSpec.reads_any_length`): rows of similar length batched together
            (`length_sorted_batches`), each batch cut to its longest text (hierarchical:
            to its most sentences and its longest sentence). The rows come in another order.
        sample_windows: for training `(text, label)` rows: a text longer than the encoder reads
            is read at a window of it drawn at random (`TextEncoder.sampled_window_ids`), anew
            each epoch (from `seed`), with its label; the texts are cached rather than their ids
            (which change), and the padding is not cut.

    Returns:
        A `tf.data.Dataset` of `(ids, labels)`; `ids` is `(token_ids, bigram_ids)`
        when the encoder makes bigrams.
    """
    encoded = tf.nest.flatten(dataset.element_spec)[0].dtype != tf.string
    if sample_windows and encoded:
        raise ValueError("make_batches: sample_windows draws windows of texts; the rows given are token ids")
    if sample_windows:
        dataset = dataset.cache() if cache else dataset
    elif not encoded and keeps_ids(encoder, rows, cache, bucket_boundaries):
        dataset, encoded = encoded_rows(dataset, encoder), True
    elif cache and not encoded:
        dataset = dataset.cache()
    if shuffle:
        buffer = shuffle_buffer or (10_000 if rows is None else max(1, min(rows, SHUFFLE_ROWS)))
        dataset = dataset.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    if cut_padding and not sample_windows:
        dataset = length_sorted_batches(dataset, batch_size, shuffle=shuffle, seed=seed, encoder=encoder)
        if rows is not None:
            dataset = dataset.apply(tf.data.experimental.assert_cardinality(math.ceil(rows / batch_size)))
        return dataset.prefetch(tf.data.AUTOTUNE)
    if bucket_boundaries:
        dataset = dataset.bucket_by_sequence_length(
            lambda text, label: tf.size(tf.strings.split(text)),
            bucket_boundaries=list(bucket_boundaries),
            bucket_batch_sizes=[batch_size] * (len(bucket_boundaries) + 1),
        )
    else:
        dataset = dataset.batch(batch_size)
        if rows is not None:
            dataset = dataset.apply(tf.data.experimental.assert_cardinality(math.ceil(rows / batch_size)))
    if sample_windows:  # a seed per batch, other each epoch
        draws = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
        dataset = tf.data.Dataset.zip(dataset, draws).map(
            lambda batch, batch_seed: (encoder.sampled_window_ids(batch[0], batch_seed), batch[1]),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
    elif not encoded:
        dataset = dataset.map(_encoding(encoder), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


# `length_sorted_batches`: rows are sorted by length within chunks of this many batches, and
# a batch is cut to its longest text rounded up to a multiple of `LENGTH_STEP` tokens (a
# hierarchical batch: to its most sentences and its longest sentence, rounded up to multiples of
# `SENTENCE_STEP` and `WORD_STEP`): a few shapes, so that TensorFlow traces the step a few times,
# not once per batch.
SORTED_CHUNK_BATCHES = 32
LENGTH_STEP = 32
SENTENCE_STEP = 4
WORD_STEP = 8


def length_sorted_batches(rows, batch_size, shuffle=False, seed=0, encoder=None):
    """Batches of `batch_size` of the `(ids, label)` `rows` (flat ids, or `(token ids, bigram
    ids)`, padded with `PAD_ID` after each text; or `(text, label)` rows, encoded by `encoder` as
    they come, none held longer than its chunk) in which texts of similar length go together,
    each batch cut to its longest text (rounded up to `LENGTH_STEP`): a model whose cost grows
    with the length reads little padding. Hierarchical ids `(rows, sentences, words)` go together
    by their number of sentences, and a batch is cut to its most sentences and its longest
    sentence. The rows are sorted by length within chunks of `SORTED_CHUNK_BATCHES` batches; with
    `shuffle` (training, rows shuffled before), the batches are shuffled in a buffer of as many,
    so an epoch does not run from short texts to long ones. Every batch holds `batch_size` rows
    but the last: an epoch has as many steps as plain batches."""

    def sorted_by_length(ids, labels):
        order = tf.argsort(_text_lengths(ids), stable=True)
        return tf.nest.map_structure(lambda tensor: tf.gather(tensor, order), (ids, labels))

    if tf.nest.flatten(rows.element_spec)[0].dtype == tf.string:
        rows = _encoded(rows, encoder)
    # Padded to the chunk's longest (ids of a fixed length are already); a chunk's rows are a
    # whole number of batches, so no batch spans two chunks of other widths.
    chunks = rows.padded_batch(batch_size * SORTED_CHUNK_BATCHES)
    batches = chunks.map(sorted_by_length).unbatch().batch(batch_size)
    if shuffle:
        batches = batches.shuffle(SORTED_CHUNK_BATCHES, seed=seed, reshuffle_each_iteration=True)
    return batches.map(_cut_to_longest, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def _text_lengths(ids):
    """Tokens of each row of flat `(rows, length)` ids, sentences of each row of hierarchical
    `(rows, sentences, words)` ids (or of their `(token ids, bigram ids)`): ids hold their text
    first, then `PAD_ID`."""
    tokens = tf.nest.flatten(ids)[0]
    if tokens.shape.rank == 3:
        return _last_real(tf.reduce_any(tokens != PAD_ID, axis=-1))
    return tf.reduce_sum(tf.cast(tokens != PAD_ID, tf.int32), axis=-1)


def _last_real(real):
    """Per row of the booleans `real` (`(..., steps)`), one past the last True step (0: none)."""
    steps = tf.range(1, tf.shape(real)[-1] + 1)
    return tf.reduce_max(tf.where(real, steps, 0), axis=-1)


def _rounded_up(length, step, most):
    """`length` rounded up to a multiple of `step`, at least `step` and at most `most`."""
    return tf.minimum(tf.maximum(-(-length // step) * step, step), most)


def _cut_to_longest(ids, labels):
    tokens = tf.nest.flatten(ids)[0]
    shape = tf.shape(tokens)
    if tokens.shape.rank == 3:
        sentences = _rounded_up(tf.reduce_max(_text_lengths(ids)), SENTENCE_STEP, shape[1])
        words = _rounded_up(tf.reduce_max(_last_real(tokens != PAD_ID)), WORD_STEP, shape[2])
        return tf.nest.map_structure(lambda tensor: tensor[:, :sentences, :words], ids), labels
    cut = _rounded_up(tf.reduce_max(_text_lengths(ids)), LENGTH_STEP, shape[-1])
    return tf.nest.map_structure(lambda tensor: tensor[:, :cut], ids), labels


def encoded_rows(dataset, encoder, cache_file=None):
    """`(text, label)` rows as `(ids, label)` rows, encoded in batches of `INFERENCE_ROWS` (for an
    encoder of ids of a fixed shape) and kept after the first pass: in memory, or with
    `cache_file` in files of that path (tf.data's cache; a pass that stops before the end
    discards what it wrote)."""
    return _encoded(dataset, encoder).cache(cache_file or "")


def _encoded(dataset, encoder):
    """`(text, label)` rows as `(ids, label)` rows, encoded in batches of `INFERENCE_ROWS`."""
    encoded = dataset.batch(INFERENCE_ROWS).map(
        _encoding(encoder), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return encoded.unbatch()


def _encoding(encoder):
    return lambda texts, labels: (encoder(texts), labels)


# Token ids are kept in memory (`make_batches`) when they take at most this share of the machine's.
IDS_MEMORY_SHARE = 0.25


def keeps_ids(encoder, rows, cache=True, bucket_boundaries=None):
    """Whether `make_batches` keeps the token ids of `rows` texts in memory: with `cache`, without
    `bucket_boundaries`, for an encoder whose ids have a fixed shape (texts of another length are
    padded or cut to it), a known number of rows, and ids (and bigram ids) that fit in
    `IDS_MEMORY_SHARE` of this machine's memory."""
    if not cache or bucket_boundaries or rows is None or not has_fixed_shape(encoder):
        return False
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return ids_bytes(encoder, rows) <= IDS_MEMORY_SHARE * memory


def has_fixed_shape(encoder):
    """Whether `encoder`'s ids have one shape whatever the text (its lengths are all set)."""
    return encoder.sequence_length is not None and not (encoder.hierarchical and encoder.max_sentences is None)


def ids_bytes(encoder, rows):
    """The bytes of the ids (and bigram ids) of `rows` texts of `encoder` (of a fixed shape), and their labels."""
    shape = [encoder.sequence_length] + ([encoder.max_sentences] if encoder.hierarchical else [])
    return rows * (math.prod(shape) * 4 * (2 if encoder.bigram_buckets else 1) + 8)


FLOAT32_MAX = float(np.finfo("float32").max)


def check_class_weight(class_weight):
    """`class_weight` is None, "balanced" or a mapping of class name to weight, else a `DataError`
    before any data is read (the names and weights are checked against the data by `weigh_classes`)."""
    if class_weight is not None and class_weight != "balanced" and not isinstance(class_weight, dict):
        raise DataError(
            f"class_weight (--class-weight) must be 'balanced' or a mapping of class name to weight; "
            f"got {class_weight!r}"
        )


def weigh_classes(class_weight, train_rows, label_names):
    """`{label id: weight}` for Keras's `fit` from `class_weight` ("balanced": scikit-learn's
    n / (classes * count of the class), counted on the training split; or a mapping of class
    name to weight, classes left out weigh 1), and the same by class name for metrics.json."""
    if class_weight is None:
        return None, None
    if class_weight == "balanced":
        labels = np.fromiter((int(label) for label in train_rows.map(lambda _, label: label)), dtype=np.int64)
        counts = np.bincount(labels, minlength=len(label_names))
        weights = {i: (len(labels) / (len(label_names) * count) if count else 1.0) for i, count in enumerate(counts)}
    else:
        given = _given_weights(class_weight, label_names, "classes")
        weights = {i: given.get(name, 1.0) for i, name in enumerate(label_names)}
    return weights, {label_names[i]: weight for i, weight in weights.items()}


def weigh_labels(class_weight, train_rows, label_names):
    """`(positive weights, negative weights, the same by label name for metrics.json)` of multi-label
    data, one of each per label, for `LabelWeightedBinaryCrossentropy`; None for no `class_weight`.
    "balanced" weighs each label as scikit-learn's balanced weights weigh a binary problem:
    n / (2 * positives) its positive rows, n / (2 * negatives) its negative rows, counted on the
    training split (1 for a side with no row); a mapping of label name to weight weighs that label's
    positive rows (its negatives, and labels left out, weigh 1)."""
    if class_weight is None:
        return None, None, None
    if class_weight == "balanced":
        truth = np.concatenate([*train_rows.map(lambda _, label: label).batch(65_536).as_numpy_iterator()])
        rows, positives = len(truth), np.sum(truth, axis=0)
        negatives = rows - positives
        positive = np.where(positives > 0, rows / (2 * np.maximum(positives, 1)), 1.0).tolist()
        negative = np.where(negatives > 0, rows / (2 * np.maximum(negatives, 1)), 1.0).tolist()
    else:
        given = _given_weights(class_weight, label_names, "labels")
        positive, negative = [given.get(name, 1.0) for name in label_names], [1.0] * len(label_names)
    record = {name: {"positive": p, "negative": n} for name, p, n in zip(label_names, positive, negative)}
    return positive, negative, record


def _given_weights(class_weight, label_names, what):
    """`{name: weight}` of a `class_weight` mapping, each name one of `label_names` (the data's
    `what`: classes or labels) and each weight positive and finite in float32; a `DataError` otherwise."""
    unknown = sorted(set(map(str, class_weight)) - set(label_names))
    if unknown:
        raise DataError(
            f"class_weight (--class-weight) names {what} the data does not have: {unknown}; "
            f"the {what} are {label_names}"
        )
    bad = {
        k: v
        for k, v in class_weight.items()  # inf (JSON's 1e400) weighed every other class as 0
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 < v < FLOAT32_MAX
    }
    if bad:
        raise DataError(f"class weights must be positive numbers (finite in float32); got {bad}")
    return {str(name): float(weight) for name, weight in class_weight.items()}


# The vocabulary is counted on at most this many training rows (`sample_rows`): every shared
# dataset (IMDB's 25,000 reviews the largest) is counted whole, as before streaming.


def sample_rows(dataset, limit, total, seed=0):
    """About `limit` of the `total` rows of `dataset`, chosen by a seeded hash of each row's
    index (the same rows for the same seed); all of them when `total <= limit`."""
    if limit is None or total <= limit:
        return dataset
    return split_by_index(dataset, limit / total, seed)[1]
