"""A run's model: its encoder's lengths, the classifier built and compiled, its initial weights."""

import dataclasses
import math
import os

import keras
import numpy as np

from keras_textattn import multi_label
from keras_textattn._scores import macro_f1
from keras_textattn.datasets import sample_rows
from keras_textattn.datasets import weigh_classes
from keras_textattn.datasets import weigh_labels
from keras_textattn.losses import LabelWeightedBinaryCrossentropy
from keras_textattn.losses import SmoothedSparseCategoricalCrossentropy
from keras_textattn.metrics import BestThresholdMacroF1
from keras_textattn.metrics import SubsetAccuracy
from keras_textattn.models import build_model
from keras_textattn.models import get_spec
from keras_textattn.optimizers import LazyAdam
from keras_textattn.optimizers import LazySGD
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import read_json
from keras_textattn.text import TextEncoder
from keras_textattn.text import choose_open_lengths
from keras_textattn.text.lengths import TOKENS
from keras_textattn.text.lengths import texts_cut
from keras_textattn.text.vectors import coverage
from keras_textattn.text.vectors import initial_embedding
from keras_textattn.text.vectors import missing_package
from keras_textattn.text.vectors import vectors_dimension
from keras_textattn.text.vectors import vectors_words
from keras_textattn.text.vectors import vocabulary_coverage
from keras_textattn_config.train_config import BATCH_SIZES
from keras_textattn_config.train_config import DEFAULT_VECTORS
from keras_textattn_config.train_config import EPOCHS
from keras_textattn_config.train_config import FAST_ROWS
from keras_textattn_config.train_config import FAST_TRAINING
from keras_textattn_config.train_config import FROM_SOURCE_RUN
from keras_textattn_config.train_config import MULTI_LABEL_TRAINING
from keras_textattn_config.train_config import OPTIMIZERS
from keras_textattn_config.train_config import RANDOM_EMBEDDINGS
from keras_textattn_config.train_config import SPARSE_TABLE_ROWS
from keras_textattn_config.train_config import STEPS_PER_EPOCH
from keras_textattn_config.train_config import VECTORS_COVERAGE
from keras_textattn_config.train_config import options_said

TRAINING_ROWS_SCORED = 5_000  # the training split's scores are read off a sample of at most these (`scored_rows`)
# The fields of `TrainConfig` that are the encoder's options.
ENCODER_OPTIONS = (
    "max_tokens",
    "min_frequency",
    "sequence_length",
    "max_sentences",
    "split_long_sentences",
    "bigram_buckets",
    "bigrams_of",
)


def with_recipe(spec, config):
    """`(recipe, config used)`: the training options of `spec`'s preset recipe that `config` leaves
    unset (with `init_from`, but those the source run gives), and `config` with them and the
    fallbacks (`with_fallbacks`) filled in."""
    recipe = {
        name: value
        for name, value in spec.training_defaults(config.preset).items()
        if getattr(config, name) is None and (config.init_from is None or name not in FROM_SOURCE_RUN)
    }
    return recipe, with_fallbacks(dataclasses.replace(config, **recipe))


def fit_encoder(spec, config, model_kwargs, texts, rows):
    """A `TextEncoder` of `spec`'s options for `model_kwargs` and `config`, its lengths chosen from
    the `(text, label)` training rows `texts` (`rows` of them) where not given, its vocabulary
    counted on them (at most `config.adapt_rows`) and extended by the vectors' words."""
    options = spec.encoder_options(
        model_kwargs,
        **{name: getattr(config, name) for name in ENCODER_OPTIONS if getattr(config, name) is not None},
    )
    chosen = choose_lengths_saying_so(spec, options, texts, config.verbose)
    try:
        encoder = TextEncoder(**{**options, **chosen})
    except ValueError as error:
        raise RunError(str(error)) from None
    encoder.adapt(sample_rows(texts, config.adapt_rows, rows, seed=config.seed))
    if config.vectors_vocabulary:
        encoder.extend_vocabulary(vectors_words(config.embeddings, config.vectors_vocabulary))
    return encoder


def with_fallbacks(config):
    """`config` with the training options a run uses when neither the user nor the paper's recipe set them."""
    optimizer = config.optimizer or "adam"
    return dataclasses.replace(
        config,
        optimizer=optimizer,
        learning_rate=config.learning_rate or OPTIMIZERS[optimizer],
        batch_size=config.batch_size or BATCH_SIZES[0],
        epochs=config.epochs or EPOCHS,
        weight_decay=config.weight_decay or 0.0,
        min_frequency=1 if config.min_frequency is None else config.min_frequency,
    )


def with_multi_label_training(config, recipe, used):
    """`(used, what changed)`: the run's `used` config with `MULTI_LABEL_TRAINING` where neither
    `config` (the options given) nor the preset's `recipe` gives epochs or early stopping."""
    given = {name for name in MULTI_LABEL_TRAINING if getattr(config, name) is not None or name in recipe}
    if given:
        return used, {}
    return dataclasses.replace(used, **MULTI_LABEL_TRAINING), dict(MULTI_LABEL_TRAINING)


def batch_for_rows(rows):
    """The batch size for `rows` training rows: the largest of `BATCH_SIZES` that leaves an epoch
    `STEPS_PER_EPOCH` steps or more, the smallest for fewer rows."""
    return max((size for size in BATCH_SIZES if rows // size >= STEPS_PER_EPOCH), default=BATCH_SIZES[0])


def with_batch_for_rows(config, rows, scale_rate):
    """`(config, what changed)`: `config` (after `with_fallbacks`) with the batch size of
    `batch_for_rows(rows)` and, with `scale_rate` (the rate is the optimizer's default), the rate
    grown with it: by the square root of the batch's growth for Adam (the square-root rule for
    adaptive optimizers, Malladi et al. 2022), by the growth itself for SGD (Goyal et al. 2017)."""
    batch_size = batch_for_rows(rows)
    if batch_size == config.batch_size:
        return config, {}
    chosen = {"batch_size": batch_size}
    if scale_rate:
        growth = batch_size / config.batch_size
        chosen["learning_rate"] = config.learning_rate * (growth if config.optimizer == "sgd" else math.sqrt(growth))
    return dataclasses.replace(config, **chosen), chosen


def left_to_rows(config, recipe, multi_label_chosen):
    """The options the preset of `config` (as given) leaves to the training rows, once counted:
    with the cpu and fast presets the batch size and rate, and with the fast preset its
    `FAST_TRAINING`, each where neither the user nor the preset's `recipe` gives it (nor, on
    multi-label data, its epochs rule: `multi_label_chosen`)."""
    names = {"batch_size", "learning_rate"} if config.preset != "paper" else set()
    if config.preset == "fast":
        names |= set(FAST_TRAINING) - set(multi_label_chosen)
    return {name for name in names if getattr(config, name) is None and name not in recipe}


def with_fast_training(config, rows, left):
    """`(config, what changed)`: `config` with the fast preset's `FAST_TRAINING` options named in
    `left` (those neither the user nor the recipe gives) on `FAST_ROWS` training `rows` or more;
    unchanged on fewer."""
    if rows < FAST_ROWS:
        return config, {}
    chosen = {name: value for name, value in FAST_TRAINING.items() if name in left and getattr(config, name) != value}
    return dataclasses.replace(config, **chosen), chosen


def embedding_updates(config, classifier):
    """ "sparse" or "dense": `config.embedding_updates`, or for "auto", sparse when `classifier`'s
    trainable embedding tables hold `SPARSE_TABLE_ROWS` rows or more."""
    if config.embedding_updates != "auto":
        return config.embedding_updates
    rows = sum(int(v.shape[0]) for v in classifier.trainable_weights if v.path.endswith("embeddings"))
    return "sparse" if rows >= SPARSE_TABLE_ROWS else "dense"


def make_optimizer(config, updates="dense"):
    """Adam, or SGD with momentum 0.9, at the run's rate, weight decay and gradient clipping; with
    `updates` "sparse", their lazy versions (`keras_textattn.optimizers`: the embedding rows a batch
    did not use are left as they are)."""
    options = dict(
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay or None,
        global_clipnorm=config.clip_norm,
        clipvalue=config.clip_value,
    )
    if config.optimizer == "sgd":
        return (LazySGD if updates == "sparse" else keras.optimizers.SGD)(momentum=0.9, **options)
    return (LazyAdam if updates == "sparse" else keras.optimizers.Adam)(**options)


def build_classifier(spec, num_classes, encoder, model_kwargs, given, dtype_policy=None, multi_label=False):
    """The model of `spec` for `encoder`'s ids, under `dtype_policy` (None: the global one), with a
    sigmoid per label when `multi_label`.
    A builder's `TypeError` or `ValueError` is the user's mistake when they gave builder
    arguments (`given`, `--set`)."""
    try:
        return build_model(
            spec.name,
            num_classes,
            dtype_policy=dtype_policy,
            vocabulary_size=encoder.vocabulary_size(),
            multi_label=multi_label,
            **spec.shape_arguments(encoder),
            **model_kwargs,
        )
    except (TypeError, ValueError) as error:
        if not given:
            raise
        raise RunError(
            f"{spec.name} cannot be built with {given} ({error}); it takes: {', '.join(spec.settable_arguments())}"
        ) from None


def classifier_loss(label_smoothing=None, reduction="sum_over_batch_size", multi_label=False, label_weights=None):
    """The cross-entropy of integer labels a run trains with: with `label_smoothing` (in [0, 1)), of
    the smoothed targets (`SmoothedSparseCategoricalCrossentropy`); without it (None or 0), Keras's.
    With `multi_label`, the binary cross-entropy of each label's 0/1 (smoothed towards 1/2), its
    positive and negative rows weighed by `label_weights` (`(positive, negative)`, one of each per
    label: `LabelWeightedBinaryCrossentropy`) where given."""
    if multi_label and label_weights is not None:
        return LabelWeightedBinaryCrossentropy(*label_weights, label_smoothing or 0.0, reduction=reduction)
    if multi_label:
        return keras.losses.BinaryCrossentropy(label_smoothing=label_smoothing or 0.0, reduction=reduction)
    if label_smoothing is None or (label_smoothing == 0 and not isinstance(label_smoothing, bool)):
        return keras.losses.SparseCategoricalCrossentropy(reduction=reduction)
    return SmoothedSparseCategoricalCrossentropy(label_smoothing, reduction=reduction)


def compile_classifier(model, optimizer, label_smoothing=None, multi_label=False, label_weights=None):
    """Compile `model` for integer labels, or for 0/1 vectors when `multi_label` (`classifier_loss`,
    with `label_weights`), with `optimizer` and `classifier_metrics`, the optimizer wrapped
    in Keras's LossScaleOptimizer when the model computes in float16. Keras's `compile`
    wraps it too, but the saved compile config then names the bare optimizer, and
    `keras.models.load_model` rebuilds a functional model under the loader's global dtype policy
    (its config keeps none): the model came back with the bare optimizer (no loss scaling when
    trained further) and its saved optimizer state was skipped, with Keras's warning."""
    if model.dtype_policy.name == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer, name="loss_scale_optimizer")
    model.compile(
        optimizer=optimizer,
        loss=classifier_loss(label_smoothing, multi_label=multi_label, label_weights=label_weights),
        metrics=classifier_metrics(model.output_shape[-1], multi_label),
    )


def classifier_metrics(outputs, multi_label=False):
    """What a classifier of `outputs` classes (or labels) logs, its variables made now (the string
    "accuracy" makes them inside the first trace of the training step, which tf.function then
    traces again): Keras's accuracy for integer labels; with `multi_label`, the subset accuracy at
    threshold 1/2 (`SubsetAccuracy`: every label of a row right) and the macro F1 at each label's
    best threshold (`BestThresholdMacroF1`, "macro_f1": what a search of multi-label data maximises)."""
    if multi_label:
        return [SubsetAccuracy(), BestThresholdMacroF1(outputs)]
    return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


def predictions(classifier, batches, rows=None):
    """`(truth, probabilities)` of `classifier` on `batches`, the unshuffled batches of `(ids, label)`:
    the labels as the rows hold them (ids, or 0/1 rows of multi-label data) and the model's outputs.
    Without `rows`, both are read from the batches in one pass, in their order (length-sorted
    batches hold the rows in another order than the data's); with the `(text, label)` (or `(ids,
    label)`) `rows` the batches were made of, in the rows' order by Keras's `predict` (under a
    distribution strategy too)."""
    if rows is not None:
        labels = rows.map(lambda _, label: label).batch(65_536)  # in blocks: row by row took a second per 10,000
        blocks = list(labels.as_numpy_iterator())
        truth = np.concatenate(blocks) if blocks else np.zeros(0, np.int64)
        return truth, classifier.predict(batches, verbose=0)
    truth, probabilities = [], []
    for ids, labels in batches:
        probabilities.append(classifier.predict_on_batch(ids))
        truth.append(labels.numpy())
    if not truth:
        return np.zeros(0, np.int64), np.zeros((0, classifier.output_shape[-1]), "float32")
    return np.concatenate(truth), np.concatenate(probabilities)


def cuts_padding(spec, encoder, config, train_rows):
    """Whether the run batches its texts by length and cuts each batch's padding (`make_batches`'s
    `cut_padding`): for a model that `reads_any_length`, no distribution strategy (a batch of one
    shape is what a strategy splits over its replicas), shuffled rows (the cut sorts them by
    length; `--no-shuffle` keeps the file's order), and for hierarchical ids `FAST_ROWS` training
    rows or more. Below that, held-out accuracy was lower with the cut (its batches hold texts of
    one number of sentences, and short texts have few numbers), and an epoch takes seconds."""
    if not spec.reads_any_length or config.distribute is not None or not config.shuffle:
        return False
    return not encoder.hierarchical or train_rows >= FAST_ROWS


def accept_shorter_ids(classifier):
    """Let `classifier` (of a spec that `reads_any_length`) take token ids shorter than its inputs'
    length, as batches cut to their longest text are: Keras checks a functional model's inputs
    against the shapes it was built on. Nothing of it is saved: a loaded model checks them again."""
    classifier.input_spec = [
        keras.InputSpec(shape=(None,) * len(tensor.shape), allow_last_axis_squeeze=True, name=tensor.name)
        for tensor in classifier.inputs
    ]


def accuracy_of(truth, probabilities):
    """The share of rows whose most probable class is their label."""
    return float(np.mean(truth == np.argmax(probabilities, axis=-1)))


def class_weights_of(class_weight, dataset):
    """`(fit's class_weight, the loss's label weights, what metrics.json records)` of a run's
    `class_weight` ("balanced", `{name: weight}` or None) on `dataset`: for single-label data, weights
    of whole rows by class for `fit` (`weigh_classes`); for multi-label data, each label's positive
    and negative weights for the loss (`weigh_labels`), which `fit`'s one class per row cannot give."""
    if dataset.multi_label:
        positive, negative, record = weigh_labels(class_weight, dataset["train"], dataset.label_names)
        return None, (None if positive is None else (positive, negative)), record
    weights, record = weigh_classes(class_weight, dataset["train"], dataset.label_names)
    return weights, None, record


def scored_rows(split, rows, count):
    """`(rows, how many)` of a split of `count` rows (None: not counted) that its scores are read
    off: all of them, but of the training split every k-th row, k the least that leaves at most
    `TRAINING_ROWS_SCORED` (a fixed sample whatever the file's order, labels sorted included; all
    rows when they were not counted). The training split's score is a check of fit beside the
    held-out one, which scoring every row of a large split made cost a third of an epoch."""
    if split != "train" or not count or count <= TRAINING_ROWS_SCORED:
        return rows, count
    every = -(-count // TRAINING_ROWS_SCORED)
    return rows.shard(every, 0), -(-count // every)


def split_scores(predicted, label_names, multi_label=False):
    """`(accuracy, macro F1, the multi-label record or None)` by split, from `predicted` (split to
    `(truth, probabilities)`): of the most probable class, or for `multi_label` data of the label
    sets decided at thresholds chosen on the validation split (`multi_label_record`)."""
    if multi_label:
        return multi_label_record(predicted, label_names)
    accuracy = {split: accuracy_of(*pair) for split, pair in predicted.items()}
    f1 = {split: macro_f1(truth, np.argmax(probabilities, -1)) for split, (truth, probabilities) in predicted.items()}
    return accuracy, f1, None


def multi_label_record(predicted, label_names):
    """`(subset accuracy, macro F1, what metrics.json records of the multi-label decisions)` by
    split, from `predicted` (split to `(truth, probabilities)`): each label's threshold chosen on the
    validation split (`multi_label.choose_thresholds`), every split scored with them."""
    thresholds, global_threshold = multi_label.choose_thresholds(*predicted["validation"])
    split_scores = {
        split: multi_label.scores(truth, multi_label.decide(probabilities, thresholds))
        for split, (truth, probabilities) in predicted.items()
    }
    record = {
        "thresholds": dict(zip(label_names, thresholds.tolist())),
        "global_threshold": global_threshold,
        "scores": split_scores,
    }
    accuracy = {split: values["subset_accuracy"] for split, values in split_scores.items()}
    return accuracy, {split: values["macro_f1"] for split, values in split_scores.items()}, record


def choose_lengths_saying_so(spec, options, texts, verbose, in_config=False):
    """`choose_open_lengths` for `spec`'s encoder `options` on the training `texts`, printing (when
    `verbose`) what was chosen and, when the length stopped at the model's most, how many texts it cuts.
    The messages say how to set a length: `train`'s flags, or (`in_config`) a tuner config's `encoder`."""
    chosen = choose_open_lengths(options, texts, longest=spec.longest_text)

    def setting(name, value=None):
        if in_config:
            return f"encoder.{name}" + ("" if value is None else f": {value}")
        return f"--{name.replace('_', '-')}" + ("" if value is None else f" {value}")

    where = " in the config" if in_config else ""
    if chosen and verbose:
        print(
            f"Chosen from the training texts (95th percentile; give {' / '.join(map(setting, chosen))}{where} to "
            "set): " + options_said(chosen)
        )
    given = options.get("sequence_length")
    if verbose and "sequence_length" not in chosen and given > 2 * TOKENS[1] and not options.get("hierarchical"):
        # A length given far past the texts pads each one to it: time and memory for nothing (a typo's extra
        # zero, say).
        whole = texts_cut(texts, given)[1]
        if given > 4 * whole:
            print(
                f"{setting('sequence_length', given)}{where} is over 4x the {whole} tokens that read 95% of the "
                "training texts whole: every text is padded to it, which costs time and memory for little"
            )
    length = chosen.get("sequence_length")
    if verbose and length == (spec.longest_text or TOKENS[1]) and not options.get("hierarchical"):
        # The chosen length stopped at the model's most (below it, it holds 95% whole by construction).
        share, whole = texts_cut(texts, length)
        if share > 0.05:
            print(
                f"{share:.0%} of the training texts are longer than the {length} tokens {spec.name} reads by "
                f"default and are cut; {setting('sequence_length', whole)}{where} reads 95% of them whole "
                "(slower, and often more accurate: the docs' results page)"
            )
    return chosen


def vectors_left_to_texts(spec, config):
    """Whether the training texts decide if `spec`'s model starts from `DEFAULT_VECTORS`
    (`default_vectors_chosen`): with the cpu or fast preset, for a model of `vectors_arguments`,
    where the user gave no embeddings, no size they fix and no run to start from."""
    return bool(
        config.preset != "paper"
        and spec.vectors_arguments
        and config.embeddings is None
        and config.init_from is None
        and not set(spec.vectors_arguments) & set(config.model_kwargs)
    )


def default_vectors_chosen(spec, config, encoder):
    """Whether `spec`'s model starts from `DEFAULT_VECTORS`: where they have a vector for
    `VECTORS_COVERAGE` of the words `encoder` counted on the training texts and their package is
    installed. Says which, and why, when `config.verbose`."""
    source = DEFAULT_VECTORS["embeddings"]
    if package := missing_package(source):
        if config.verbose:
            print(f"{spec.name} starts from random vectors: {source}, its default for English texts, needs {package}")
        return False
    share = vocabulary_coverage(source, encoder)
    if share < VECTORS_COVERAGE:
        if config.verbose:
            print(
                f"{spec.name} starts from random vectors: {source} has a vector for {share:.1%} of the training "
                f"texts' vocabulary, below {VECTORS_COVERAGE:.0%} (its words are English ones)"
            )
        return False
    if config.verbose:
        print(
            f"Chosen from the training texts ({source} has a vector for {share:.1%} of their vocabulary, "
            f"{VECTORS_COVERAGE:.0%} or more; give --embeddings {RANDOM_EMBEDDINGS} to start from random "
            "vectors): " + options_said({**DEFAULT_VECTORS, **spec.vectors_arguments})
        )
    return True


def with_default_vectors(spec, config, model_kwargs):
    """`(config, model_kwargs)` with `DEFAULT_VECTORS` and the builder arguments that fit them."""
    return dataclasses.replace(config, **DEFAULT_VECTORS), {**model_kwargs, **spec.vectors_arguments}


def initialise_embeddings(classifier, model, encoder, train_rows, config):
    """Set the token embedding (the builders' layer "embedding") of `classifier`, a `model`, from
    `config.embeddings`; freeze it with `freeze_embeddings`. Returns what metrics.json records, or None."""
    source = config.embeddings
    if source in (None, RANDOM_EMBEDDINGS):
        return None
    layer = classifier.get_layer("embedding")
    dimension = layer.output_dim
    if source != "word2vec" and (found := vectors_dimension(source)) != dimension:
        size = get_spec(model).embedding_size_argument
        raise RunError(
            f"{source} has {found}-dimensional vectors; the {model} embedding has "
            f"{dimension} (set its size to match: --set {size}={found})"
        )
    rows, covered = initial_embedding(source, encoder, train_rows, dimension, seed=config.seed)
    layer.embeddings.assign(rows)
    layer.trainable = not config.freeze_embeddings
    added = encoder.added_tokens
    share = coverage(covered, encoder.counted_vocabulary_size())  # of the training texts' words
    if config.verbose:
        print(
            f"Embeddings from {source}: {share:.1%} of the vocabulary has a vector"
            + (f"; {added:,} more of its words added to the vocabulary" if added else "")
            + (" (frozen)" if config.freeze_embeddings else "")
        )
    return {
        "source": source,
        "dimension": dimension,
        "coverage": share,
        "words_added": added,
        "frozen": bool(config.freeze_embeddings),
    }


def source_run_metrics(folder, model):
    """The metrics.json of the finished run at `folder` (`init_from`), whose model `model` (None:
    any) must be."""
    metrics_path = os.path.join(os.fspath(folder), "metrics.json")
    if not os.path.isfile(metrics_path):
        raise RunError(f"init_from (--init-from) must be a finished run folder; {folder} has no metrics.json")
    metrics = read_json(metrics_path)
    if model is not None and model != metrics.get("model"):
        raise RunError(
            f"{folder} trained {metrics.get('model')}, and a run started from it trains the same model; "
            f"leave out --model or give {metrics.get('model')}; got {model}"
        )
    return metrics


def initialise_from(classifier, source, folder, verbose):
    """Set every layer of `classifier` but its output layer ("logits") to the weights of the same
    layer of `source`, the model of the run at `folder` (same builder, sizes and encoder).
    Returns what metrics.json records, or None without a source."""
    if source is None:
        return None
    copied = 0
    for layer in source.layers:
        if layer.name != "logits" and layer.weights:
            weights = layer.get_weights()
            classifier.get_layer(layer.name).set_weights(weights)
            copied += sum(int(np.size(weight)) for weight in weights)
    if verbose:
        print(
            f"Initialised from {folder}: its encoder and {copied:,} weights, every layer but the output layer, "
            "which starts afresh"
        )
    return {"run": os.path.abspath(folder), "weights": copied, "new_layers": ["logits"]}
