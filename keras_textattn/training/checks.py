"""The checks of a run's options that need more than one value: the model's spec, another
option, the vectors on disk. Each value alone is checked by `TrainConfig`."""

import os

import numpy as np

from keras_textattn.datasets import check_class_weight
from keras_textattn.models import SPECS
from keras_textattn.models.spec import GIVEN_BY_TRAINING
from keras_textattn.run_folder import RunError
from keras_textattn.text.lengths import TOKENS
from keras_textattn.text.vectors import PACKAGED_VECTORS
from keras_textattn.text.vectors import is_vectors_source
from keras_textattn.text.vectors import vectors_dimension
from keras_textattn.training.adversarial import check_epsilon
from keras_textattn.training.model_setup import classifier_loss
from keras_textattn_config.checks import check_count
from keras_textattn_config.train_config import RANDOM_EMBEDDINGS
from keras_textattn_config.train_config import check_model
from keras_textattn_config.train_config import check_preset  # noqa: F401 (tuning's)


def check_run_options(model, config):
    """The `ModelSpec` of `model` (a name), after the checks of `config` against it and of its
    options against each other; a `RunError` naming the option otherwise."""
    check_model(model)
    spec = SPECS[model]
    _check_model_kwargs(spec, config.model_kwargs)
    hierarchical = spec.is_hierarchical(config.model_kwargs)
    if config.max_sentences is not None and not hierarchical:
        raise RunError(f"max_sentences (--max-sentences) is for hierarchical models; {model} reads flat texts")
    if config.split_long_sentences and not hierarchical:
        raise RunError(
            f"split_long_sentences (--split-long-sentences) is for hierarchical models; {model} reads flat texts"
        )
    has_bigrams = spec.encoder_options(config.model_kwargs, bigram_buckets=config.bigram_buckets).get("bigram_buckets")
    if config.bigrams_of is not None and not has_bigrams:
        raise RunError(
            f"bigrams_of (--bigrams-of) is for a run with bigrams; {model} has none here: give "
            "bigram_buckets (--bigram-buckets)"
        )
    check_embeddings(config.embeddings, config.freeze_embeddings, config.vectors_vocabulary)
    if config.adversarial is not None:
        try:
            check_epsilon(config.adversarial)
        except ValueError as error:
            raise RunError(f"{error} (--adversarial)") from None
    try:
        classifier_loss(config.label_smoothing)
    except ValueError as error:
        raise RunError(f"{error} (--label-smoothing)") from None
    check_class_weight(config.class_weight)
    _check_distribution(config)
    return spec


def check_sizes_fit(spec, config):
    """A `RunError` where a size given (`config`, after the preset's recipe) makes a tensor that every
    model holds larger than this machine's memory: a batch of token ids, its embedded tokens, the
    embedding table with Adam's two slots. Such a run segfaulted inside `fit` (a length of 10^9)
    instead of failing; the line says the largest that fits. Model-specific tensors (attention
    over length x length) are left to TensorFlow's out-of-memory error, said in one line too."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    model_kwargs = {**spec.preset_arguments(config.preset), **config.model_kwargs}
    argument, width = spec.embedding_size_argument, spec.embedding_size(model_kwargs)
    rows = config.batch_size * (config.max_sentences or 1)
    length = config.sequence_length or TOKENS[0]  # a length chosen from the data is at least this
    per_token = 4 * width + 8 * 2  # float32 embeddings; int64 ids, and as many bigram ids at most
    if rows * length * per_token > memory:
        longest = max(memory // (rows * per_token), 0)
        given = "--sequence-length" if config.sequence_length else "--batch-size"
        raise RunError(
            f"{given}: a batch of {rows:,} rows of {length:,} tokens embedded in {width} dimensions needs "
            f"{_gigabytes(rows * length * per_token)}, more than this machine's {_gigabytes(memory)} of memory; "
            f"at --batch-size {config.batch_size} at most {longest:,} tokens fit (a smaller --batch-size, or "
            f"--set {argument}=..., fits more)"
        )
    table = (config.max_tokens + (config.vectors_vocabulary or 0) + (config.bigram_buckets or 0)) * width * 4 * 3
    if table > memory:
        raise RunError(
            f"an embedding table of {config.max_tokens + (config.vectors_vocabulary or 0):,} tokens and "
            f"{config.bigram_buckets or 0:,} bigram buckets in {width} dimensions, with Adam's two slots, needs "
            f"{_gigabytes(table)}, more than this machine's {_gigabytes(memory)} of memory; at {width} dimensions "
            f"at most {memory // (width * 12):,} rows fit (--max-tokens, --bigram-buckets, --set {argument}=...)"
        )


def _gigabytes(count):
    return f"{count / 2**30:,.1f} GiB"


def _check_model_kwargs(spec, model_kwargs):
    for name, value in model_kwargs.items():
        if GIVEN_BY_TRAINING.get(name):
            raise RunError(
                f"model_kwargs (--set) {name}: the encoder gives the model its {name}; give "
                f"{GIVEN_BY_TRAINING[name]} instead"
            )
        if name not in spec.settable_arguments():
            raise RunError(
                f"model_kwargs (--set) {name}: not an argument of the {spec.name} builder that a run sets; "
                f"it takes: {', '.join(spec.settable_arguments())}"
            )
        if name in spec.flag_arguments() and not isinstance(value, (bool, np.bool_)):
            raise RunError(
                f"model_kwargs (--set) {name} must be True or False (--set {name}=true or {name}=false); got {value!r}"
            )


def _check_distribution(config):
    distribute, workers = config.distribute or "none", config.workers
    if (distribute == "ray") != (workers is not None) or (
        workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1)
    ):
        raise RunError(
            f"--distribute ray takes --workers N (N >= 1), and --workers only goes with it; got "
            f"distribute {distribute!r}, workers {workers!r}"
        )
    if config.ray_address is not None and distribute != "ray":
        raise RunError(f"--ray-address names the Ray cluster of --distribute ray; got distribute {distribute!r}")


def check_embeddings(embeddings, freeze_embeddings, vectors_vocabulary=None):
    """`embeddings` is None, "random", "word2vec", a `PACKAGED_VECTORS` name or a vectors file;
    `freeze_embeddings` needs embeddings, and `vectors_vocabulary` (a count) vectors to take words from."""
    if embeddings not in (None, RANDOM_EMBEDDINGS, "word2vec") and (
        isinstance(embeddings, bool)
        or not isinstance(embeddings, (str, os.PathLike))
        or not is_vectors_source(embeddings)
    ):
        raise RunError(
            f"embeddings (--embeddings) must be {RANDOM_EMBEDDINGS!r}, 'word2vec', "
            f"{', '.join(map(repr, PACKAGED_VECTORS))} or a vectors file; {embeddings!r} is none of them"
        )
    if embeddings in PACKAGED_VECTORS:
        vectors_dimension(embeddings)  # a missing package is refused before any data is read
    if freeze_embeddings and embeddings in (None, RANDOM_EMBEDDINGS):
        raise RunError("freeze_embeddings (--freeze-embeddings) needs embeddings (--embeddings) to freeze")
    if vectors_vocabulary is not None:
        check_count("vectors_vocabulary", vectors_vocabulary)
        if embeddings in (None, RANDOM_EMBEDDINGS, "word2vec"):
            raise RunError(
                f"vectors_vocabulary (--vectors-vocabulary) adds words of pretrained vectors to the "
                f"vocabulary: give them with --embeddings (a vectors file or "
                f"{', '.join(PACKAGED_VECTORS)}); embeddings is {embeddings!r}"
            )
