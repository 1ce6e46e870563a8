"""`train()`: data to a finished run folder, resumable and distributable (TensorFlow backend).

What a run folder holds, and how it is read: `keras_textattn.run_folder`.
"""

import contextlib
import dataclasses
import functools
import inspect
import json
import math
import os
import shutil
import signal
import tempfile
import threading
import time

import keras
import numpy as np
import tensorflow as tf

from keras_textattn import _backend
from keras_textattn._files import check_path
from keras_textattn._files import locked
from keras_textattn._files import write_text
from keras_textattn._scores import macro_f1
from keras_textattn.datasets import ADAPT_ROWS
from keras_textattn.datasets import check_class_weight
from keras_textattn.datasets import inference_batch_size
from keras_textattn.datasets import LocalFile
from keras_textattn.datasets import load_labelled_data
from keras_textattn.datasets import make_batches
from keras_textattn.datasets import sample_rows
from keras_textattn.datasets import weigh_classes
from keras_textattn.datasets.loading import tf_reason
from keras_textattn.errors import check_flag
from keras_textattn.errors import check_seed
from keras_textattn.errors import check_verbose
from keras_textattn.errors import check_whole
from keras_textattn.losses import SmoothedSparseCategoricalCrossentropy
from keras_textattn.models import PRESETS
from keras_textattn.models import SPECS
from keras_textattn.models import build_model
from keras_textattn.models import check_dtype_policy
from keras_textattn.models import get_spec
from keras_textattn.models.spec import GIVEN_BY_TRAINING
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import foreign_entries
from keras_textattn.run_folder import is_finished
from keras_textattn.run_folder import load_encoder
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import read_json
from keras_textattn.run_folder import recover_replacement
from keras_textattn.run_folder import remove_temporary_files
from keras_textattn.run_folder import replace_aside
from keras_textattn.run_folder import save_encoder
from keras_textattn.run_folder import save_run
from keras_textattn.text import TextEncoder
from keras_textattn.text import choose_open_lengths
from keras_textattn.text.lengths import TOKENS
from keras_textattn.text.lengths import texts_cut
from keras_textattn.text.vectors import PACKAGED_VECTORS
from keras_textattn.text.vectors import coverage
from keras_textattn.text.vectors import initial_embedding
from keras_textattn.text.vectors import is_vectors_source
from keras_textattn.text.vectors import vectors_dimension
from keras_textattn.text.vectors import vectors_words
from keras_textattn.training.adversarial import adversarial_gradients
from keras_textattn.training.adversarial import check_epsilon
from keras_textattn.training.adversarial import use_adversarial_training
from keras_textattn.training.backup import BestEpoch
from keras_textattn.training.backup import RunBackup
from keras_textattn.training.backup import copy_from_chief
from keras_textattn.training.backup import restore
from keras_textattn.training.schedules import parse_schedule
from keras_textattn.training.schedules import schedule_callbacks

# The arguments that define a run: a resume must repeat them (`--epochs` may grow).
# They are `train()`'s parameters of these names, saved in run.json.
RUN_ARGUMENTS = ("model", "preset", "data", "test_data", "validation_data", "text_column", "label_column", "header",
                 "label_offset", "label_names", "data_dir", "model_kwargs", "max_tokens", "min_frequency",
                 "sequence_length", "max_sentences", "split_long_sentences", "bigram_buckets", "bigrams_of",
                 "embeddings", "freeze_embeddings", "vectors_vocabulary", "batch_size", "optimizer", "learning_rate",
                 "weight_decay", "lr_schedule", "clip_norm", "adversarial", "label_smoothing", "class_weight",
                 "early_stopping", "early_stopping_monitor", "validation_fraction", "seed", "shuffle", "stream",
                 "skip_bad_rows", "adapt_rows", "group_column", "dtype_policy", "init_from", "delimiter")
# What a run started from another (`init_from`) takes from it: the model's sizes, the encoder and
# the initial weights. Given as well, they are refused.
FROM_SOURCE_RUN = ("preset", "model_kwargs", "max_tokens", "min_frequency", "adapt_rows", "sequence_length",
                   "max_sentences", "split_long_sentences", "bigram_buckets", "bigrams_of", "embeddings",
                   "freeze_embeddings", "vectors_vocabulary")


def configure_cpu_devices(count):
    """Split the CPU into `count` logical devices (for MirroredStrategy without GPUs).

    Must run before TensorFlow initialises its devices, i.e. first in a process.
    """
    check_whole("cpu-devices", count)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)


def make_strategy(distribute):
    """None, "mirrored" (all visible GPUs, else all logical CPUs) or "multi-worker" (TF_CONFIG)."""
    if distribute in (None, "none"):
        return tf.distribute.get_strategy()
    if distribute == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]
        return tf.distribute.MirroredStrategy(devices)
    if distribute == "multi-worker":
        if not os.environ.get("TF_CONFIG"):
            raise RunError(
                "--distribute multi-worker needs TF_CONFIG (the cluster and this worker's task); "
                "see README, 'Training on several machines'"
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise RunError(f"unknown distribute {distribute!r} (--distribute); use none, mirrored or multi-worker")


def _is_chief(strategy):
    """The chief writes the run folder: task "chief", else worker 0 of a cluster without one."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


class _DeferredInterrupt(keras.callbacks.Callback):
    """Ctrl-C during `fit` stops training at the end of the current batch.

    Python raises `KeyboardInterrupt` wherever the main thread is; inside TensorFlow's
    input pipeline it reads as the end of the data, and Keras would end the epoch early
    and carry on. So while `fit` runs (`deferred`), SIGINT only sets a flag, and this
    callback raises `KeyboardInterrupt` at the next batch's end.
    """

    requested = False

    def on_train_batch_end(self, batch, logs=None):
        if self.requested:
            raise KeyboardInterrupt

    on_test_batch_end = on_train_batch_end
    on_epoch_end = on_train_batch_end

    @contextlib.contextmanager
    def deferred(self):
        if threading.current_thread() is not threading.main_thread():
            yield  # signal handlers belong to the main thread
            return

        def request(signum, frame):
            self.requested = True

        previous = signal.signal(signal.SIGINT, request)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
        self.on_train_batch_end(None)  # a Ctrl-C after the last batch


class _EpochSeconds(keras.callbacks.Callback):
    """Adds each epoch's wall time to its logs as `seconds` (a column of history.csv)."""

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["seconds"] = time.perf_counter() - self._start


class _EpochRateTensorBoard(keras.callbacks.TensorBoard):
    """Keras's TensorBoard callback, whose `epoch_learning_rate` is the rate the run's history
    records for the epoch (its first, set by the schedule's callbacks). Keras's reads the
    optimizer's after the epoch: a cosine's of the epoch's last batch, and a plateau's already
    halved, so TensorBoard drew each plateau cut one epoch early."""

    def _collect_learning_rate(self, logs):
        return logs if "learning_rate" in logs else super()._collect_learning_rate(logs)


def divergence(model, loss):
    """How an epoch that ended with training `loss` diverged ("its loss is nan"), or None: a loss
    that is NaN or infinite, or weights that are (a loss computed on clipped probabilities can
    stay finite while they are not numbers)."""
    if not math.isfinite(loss):
        return f"its loss is {loss}"
    if not weights_are_numbers(model):
        return "its weights are no longer numbers"
    return None


def check_converging(model, loss, epoch, learning_rate):
    """A `RunError` when an epoch ends diverged (`divergence`): a run of such weights predicts NaN
    ("Finished", with an accuracy of chance, it was written all the same)."""
    what = divergence(model, loss)
    if what is not None:
        raise _diverged_run(epoch, what, learning_rate)


def _diverged_run(epoch, what, learning_rate):
    """The `RunError` of a run whose epoch `epoch` (from 0) diverged as `what` says."""
    return RunError(f"training diverged in epoch {epoch + 1}: {what}; a lower --learning-rate (this run's: "
                    f"{learning_rate:g}) trains stably. Checkpoints of earlier epochs, if any, stay in the run folder: "
                    "start again with --overwrite")


def weights_are_numbers(model):
    """Whether every weight of `model` is finite (none NaN or infinite)."""
    return all(np.isfinite(weight).all() for weight in model.get_weights())


class StopOnDivergence(keras.callbacks.Callback):
    """Raises `error(epoch, what)` at the end of an epoch that diverged (`divergence`), before its
    history row and checkpoint are written (and, in a search, before keras-tuner scores it); a
    progress bar's line (fit's `verbose=1`), which the raise leaves unfinished, is ended first,
    so that the error is a line of its own."""

    def __init__(self, error):
        super().__init__()
        self.error = error

    def on_epoch_end(self, epoch, logs=None):
        what = divergence(self.model, float((logs or {}).get("loss", 0.0)))
        if what is None:
            return
        if self.params.get("verbose") == 1:
            print(flush=True)
        raise self.error(epoch, what)


def _jsonable(value):
    """`value` as JSON reads it back (tuples become lists, `LocalFile`s dicts, paths strings)."""
    if isinstance(value, LocalFile):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _run_state(output, overwrite, arguments):
    """"new", "resume" or "overwrite" for a run folder at `output`, or a `RunError`: for a
    folder that is not a run folder, a finished run without `overwrite`, and a resume
    whose arguments differ from those the run was started with (run.json)."""
    if os.path.exists(output) and not os.path.isdir(output):
        raise RunError(f"{output} is a file, not a run folder; choose another output")
    if not os.path.isdir(output) or not os.listdir(output):
        return "new"
    foreign = foreign_entries(output)
    if foreign:
        raise RunError(f"{output} is not a run folder (it holds {', '.join(foreign[:3])}"
                       f"{', ...' if len(foreign) > 3 else ''}); nothing was changed; choose another output")
    if is_finished(output):
        if not overwrite:
            raise RunError(f"{output} already holds a finished run; pass overwrite=True (--overwrite) to replace it, "
                           f"or choose another output (with init_from={output!r}, --init-from, to train it further)")
        return "overwrite"
    if overwrite:
        return "overwrite"
    stored_path = os.path.join(output, "run.json")
    if os.path.exists(stored_path):
        # run.json written before these options: those runs trained with Adam, no weight decay, sentences cut.
        stored = {"optimizer": "adam", "weight_decay": 0.0, "split_long_sentences": False, "init_from": None,
                  "delimiter": None, **read_json(stored_path)}
        changed = [f"{name} {stored.get(name)!r} -> {arguments[name]!r}" for name in RUN_ARGUMENTS
                   if stored.get(name) != arguments[name]]
        if changed:
            raise RunError(f"{output} holds an unfinished run started with other arguments ({'; '.join(changed)}); "
                           "repeat its arguments to resume it, or pass overwrite=True (--overwrite) to start again")
    return "resume"


OPTIMIZERS = {"adam": 1e-3, "sgd": 0.01}  # name: learning rate when neither the user nor the recipe gives one


def _with_fallbacks(arguments):
    """The training arguments a run uses when neither the user nor the paper's recipe set them."""
    optimizer = arguments["optimizer"] or "adam"
    return {**arguments, "optimizer": optimizer,
            "learning_rate": arguments["learning_rate"] or OPTIMIZERS[optimizer],
            "batch_size": arguments["batch_size"] or 32,
            "weight_decay": arguments["weight_decay"] or 0.0,
            "min_frequency": 1 if arguments["min_frequency"] is None else arguments["min_frequency"]}


def _optimizer(arguments):
    """Adam, or SGD with momentum 0.9, at the run's rate, weight decay and gradient clipping."""
    options = dict(learning_rate=arguments["learning_rate"], weight_decay=arguments["weight_decay"] or None,
                   global_clipnorm=arguments["clip_norm"])
    if arguments["optimizer"] == "sgd":
        return keras.optimizers.SGD(momentum=0.9, **options)
    return keras.optimizers.Adam(**options)


def _check_positive(**values):
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value <= 0):  # nan trained a model of nans
            raise RunError(f"{name.replace('_', '-')} must be a positive number; got {value!r}")


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
        print(f"Chosen from the training texts (95th percentile; give {' / '.join(map(setting, chosen))}{where} to "
              "set): " + ", ".join(f"{name} {value}" for name, value in chosen.items()))
    given = options.get("sequence_length")
    if verbose and "sequence_length" not in chosen and given > 2 * TOKENS[1] and not options.get("hierarchical"):
        # A length given far past the texts pads each one to it: time and memory for nothing (a typo's extra
        # zero, say). LAMA at 100,000 tokens on TREC's questions took 18 GB.
        whole = texts_cut(texts, given)[1]
        if given > 4 * whole:
            print(f"{setting('sequence_length', given)}{where} is over 4x the {whole} tokens that read 95% of the "
                  "training texts whole: every text is padded to it, which costs time and memory for little")
    length = chosen.get("sequence_length")
    if verbose and length == (spec.longest_text or TOKENS[1]) and not options.get("hierarchical"):
        # The chosen length stopped at the model's most (below it, it holds 95% whole by construction).
        share, whole = texts_cut(texts, length)
        if share > 0.05:
            print(f"{share:.0%} of the training texts are longer than the {length} tokens {spec.name} reads by "
                  f"default and are cut; {setting('sequence_length', whole)}{where} reads 95% of them whole "
                  "(slower; on IMDB, 768 tokens instead of 256 gave about 2 points: BENCHMARKS.md)")
    return chosen


def train(
    model=None,
    data=None,
    output="runs/run",
    *,
    test_data=None,
    validation_data=None,
    text_column=None,
    label_column=None,
    header=True,
    label_offset=0,
    label_names=None,
    delimiter=None,
    data_dir=None,
    group_column=None,
    stream=None,
    skip_bad_rows=False,
    model_kwargs=None,
    preset="cpu",
    max_tokens=20000,
    min_frequency=None,
    adapt_rows=ADAPT_ROWS,
    sequence_length=None,
    max_sentences=None,
    split_long_sentences=False,
    bigram_buckets=None,
    bigrams_of=None,
    embeddings=None,
    freeze_embeddings=False,
    vectors_vocabulary=None,
    init_from=None,
    epochs=3,
    early_stopping=None,
    early_stopping_monitor=None,
    batch_size=None,
    optimizer=None,
    learning_rate=None,
    weight_decay=None,
    lr_schedule=None,
    clip_norm=None,
    adversarial=None,
    label_smoothing=None,
    dtype_policy=None,
    class_weight=None,
    validation_fraction=0.1,
    seed=0,
    shuffle=True,
    distribute=None,
    workers=None,
    ray_address=None,
    checkpoint_every=None,
    overwrite=False,
    verbose=1,
):
    """Train `model` on `data` and write a run folder at `output` (see the module docstring).

    Args:
        model: a name of `keras_textattn.models.SPECS`; None: "lama", or with `init_from` the
            model of that run.
        data: a TFDS name, a local CSV/TSV file, or a dict of split name to
            `LocalFile` (for files in different formats); `test_data`,
            `validation_data`: local files in the format of `data` (without a
            validation file, `validation_fraction` of the training rows is held out).
        text_column: the text column(s) of local files, or the TFDS text feature(s).
        label_column, header, label_offset, label_names, delimiter: for local files (see
            `LocalFile`; the delimiter of CSV files, e.g. ";"); `data_dir`: for TFDS. `data` may also be a glob or a folder of
            shards, JSONL or TFRecord: those are streamed, and so is a single CSV/TSV file
            with `stream=True` (`LocalFile`'s `stream`); nothing of them is held in memory.
        group_column: a column of the local training file whose rows belong together
            (a film's reviews, an author's messages): the carved validation split holds out
            whole groups (`LocalFile`'s `group_column`). Without it the carve picks rows,
            and on grouped data the held-out score overstates the score on new groups (on
            IMDB by about 3 points, which also misleads early stopping and model choice:
            BENCHMARKS.md).
        skip_bad_rows: streamed data: count the rows that cannot be read (and leave out
            the shards that cannot be read to their end) instead of stopping at the first
            (metrics.json: `skipped`).
        model_kwargs: passed to the builder (e.g. `{"num_heads": 4}`); they win over
            the preset's. Not those the encoder gives it (`sequence_length`,
            `max_sentences`, `bigram_buckets`, `vocabulary_size`: this function's own
            arguments, `max_tokens` for the vocabulary).
        preset: "cpu" (sizes that train in minutes on 2 cores, each model's
            `ModelSpec.cpu_defaults`: those BENCHMARKS.md measures) or "paper"
            (the builders' defaults, the papers' sizes, and for the arguments left
            None the paper's training recipe, `ModelSpec.paper_training`: LAMA word2vec,
            words seen fewer than 5 times unknown, early stopping 5, SGD at 0.05 with
            weight decay 1e-4; HCAN word2vec, words seen fewer than 5 times unknown; CSPAN
            "step:20,25", weight decay 1e-4, batches of 64).
        adapt_rows: the vocabulary is counted on a seeded sample of at most this many
            training rows (all of them when there are fewer).
        max_tokens, min_frequency, sequence_length: of the encoder (`min_frequency` None: the
            paper's under preset "paper", LAMA's and HCAN's 5, else 1); HCAN uses
            `sequence_length` words per sentence and `max_sentences`; the dual-axial
            model gets `bigram_buckets` hashed bigrams (50,000 by default), any other
            model when given them (0: none; HCAN's pair the words of a sentence row);
            `bigrams_of`: what they pair, "vocabulary" (None: the encoder's default) or
            "tokens" (`TextEncoder`). `sequence_length` and
            `max_sentences` default to the 95th percentile of the training texts
            (`keras_textattn.text.choose_lengths`), printed and saved with the encoder.
        split_long_sentences: HCAN: rows left over by a text's sentences hold the rest of
            its sentences longer than `sequence_length` words instead of cutting them
            (`TextEncoder`'s; the chosen `max_sentences` then counts rows). Not the default:
            it gained on AG News and lost on IMDB (BENCHMARKS.md, "HCAN and long sentences").
        embeddings: initial vectors of the token embedding: "word2vec" (trained on the
            training split, tokenised as the encoder tokenises, the embedding's size,
            seeded; `keras_textattn.text.vectors.train_word2vec`), the path of a
            vectors file (GloVe, word2vec text or fastText `.vec`; plain or gzip), or
            "glove-6b-50d" (GloVe 6B 50-d from a pip package: `PACKAGED_VECTORS`); their
            dimension must be the embedding's. Words without a vector start random.
            `metrics.json` records the vocabulary's coverage. None: Keras's random init.
        freeze_embeddings: keep the token embedding fixed during training.
        vectors_vocabulary: with vectors `embeddings` (a file or "glove-6b-50d"): those of the
            vectors' first this many words (most frequent first) that the vocabulary lacks join
            it after the training texts' words (`max_tokens` counts only those), each with its
            pretrained vector (`TextEncoder.extend_vocabulary`). A word seen only after training,
            in validation, test or served texts, then reads as its vector instead of as unknown:
            with AG News's 5,000 training rows 4% of the test words are unknown, and with GloVe
            6B 50-d and 100,000 words scalable attention went from 0.875 to 0.885 on test (from
            0.871 to 0.879 cross-validated; BENCHMARKS.md). Each word added is an embedding row:
            with 100,000 of GloVe's, about 88,000 rows (18 MB of weights; model.keras, which also
            holds Adam's two slots for them, 55 MB). None: the training texts' words only.
        init_from: a finished run folder to fine-tune (transfer learning): the new run takes its
            model (builder and sizes), its encoder (vocabulary, lengths, bigrams) and the weights
            of every layer but the output layer ("logits"), which starts afresh for the new
            data's classes, and trains them all with this run's training options (the cpu
            preset's training defaults where not given). The options of `FROM_SOURCE_RUN`
            (preset, model_kwargs, the encoder's, embeddings) come from that run and are refused
            here. `metrics.json` records it (`initialised_from`); the new run folder holds the
            weights and needs the other no more, but resuming an unfinished run reads it again.
            On SST-2, scalable attention fine-tuned from a run on IMDB's reviews: BENCHMARKS.md.
        epochs: the most epochs to train.
        early_stopping: a patience: stop when that many epochs pass without a lower
            validation loss, and keep the weights of the epoch with the lowest one
            (`metrics.json`: `best_epoch`, `stopped_early`). Survives a kill and resume.
            None: train every epoch, keep the last weights.
        early_stopping_monitor: "loss" (None: the validation loss) or "accuracy" (the validation
            accuracy: on small sentence data the loss turns up epochs before the accuracy
            stops improving; BENCHMARKS.md, SST-2).
        batch_size: global; None: the paper's (preset "paper"), else 32. Validation and the
            final scores predict in larger batches (`datasets.inference_batch_size`: 256 for 32).
        optimizer: "adam" (None) or "sgd" (momentum 0.9, the LAMA paper's); learning_rate:
            None is the paper's, else 1e-3 for Adam and 0.01 for SGD; weight_decay: Keras's
            decoupled decay (each step shrinks the weights by rate x decay; None: the paper's,
            else none). The L2 form (PyTorch's `weight_decay`; CSPAN's framework) adds decay x
            weight to the gradient instead, which momentum 0.9 amplifies ~10x and Adam rescales:
            our choice keeps the decay independent of the gradient statistics (AdamW's argument).
        validation_fraction, seed.
        lr_schedule: "constant" (None), "cosine", "plateau" or "step:E1,E2,..."
            (`keras_textattn.training.schedules`); resumable.
        clip_norm: clip the gradients to this global norm (the optimizer's `global_clipnorm`).
        adversarial: an epsilon in (0, 1]: adversarial training on the embedded tokens
            (Miyato et al., 2017; `keras_textattn.training.adversarial`): each step also trains
            on its examples moved by epsilon times the norm of their embeddings in the direction
            that raises the loss fastest. An epoch takes 1.1-1.3x as long where the embedding
            tables dominate (scalable attention on IMDB), about 2x where the layers do (HCAN,
            LAMA+ctx, CSPAN). On IMDB's film-disjoint carves 0.02 and 0.05 raised scalable
            attention's held-out accuracy by 0.7 points (test: 0.896 to 0.902; HCAN 0.901 to
            0.906), and 0.1 left one carve of three at chance; on R8 LAMA+ctx's held-out figures
            did not rise (BENCHMARKS.md, "Adversarial training"). None: none.
        label_smoothing: a number in [0, 1): train against targets of 1 - label_smoothing +
            label_smoothing / K on the label and label_smoothing / K on each of the K classes
            (`keras_textattn.losses.SmoothedSparseCategoricalCrossentropy`); the validation loss,
            which early stopping watches, is of the same targets. None or 0: the plain
            cross-entropy.
        dtype_policy: the model's Keras dtype policy: "float32", or "mixed_float16" /
            "mixed_bfloat16" for GPUs and TPUs (float32 weights, 16-bit compute; with
            mixed_float16 Keras scales the loss). None: Keras's global policy
            (`keras.config.dtype_policy()`, float32 unless set). Recorded in metrics.json;
            the exports compute such a model in float32.
        class_weight: "balanced" (each class weighs n / (classes * its count in the
            training split), as scikit-learn's) or `{class name: weight}` (others 1):
            Keras's `class_weight`, the loss of each example scaled by its class's
            weight. Recorded in metrics.json. None: every example weighs 1.
        shuffle: shuffle the training rows each epoch (with `seed`). The shuffled
            order under a tf.distribute strategy differs from a single device's, so
            compare strategies with `shuffle=False`.
        distribute: None, "mirrored", "multi-worker" (see `make_strategy`) or "ray": a
            multi-worker run of `workers` processes that Ray Train starts (on the cluster at
            `ray_address` or `RAY_ADDRESS`, else a local one); see
            `keras_textattn.training.ray_launcher`. A multi-worker run resumes as others do,
            every worker from the chief's backup (`backup.copy_from_chief`).
        checkpoint_every: also back up every N steps (the end of every epoch always is).
        overwrite: replace the run at `output` (finished, or unfinished to start it
            again); the old run is kept aside until the new one is written, and
            restored if it fails. Without it a finished run is refused and an unfinished
            one resumed, if its arguments (run.json) are these. A folder that holds
            anything a run folder does not is refused either way, and a folder in
            use by another process (a lock beside it) too. See README, "What happens when...".

    Returns:
        The metrics dict written to metrics.json.
    """
    call = dict(locals())  # the arguments as given, for the Ray workers
    _backend.require_tensorflow("Training")
    check_path(output, "output (--output)")
    check_verbose(verbose)
    for name, flag in (("header", header), ("skip_bad_rows", skip_bad_rows), ("split_long_sentences",
                       split_long_sentences), ("freeze_embeddings", freeze_embeddings), ("shuffle", shuffle),
                       ("overwrite", overwrite)):
        check_flag(name, flag)
    if model_kwargs is not None and not isinstance(model_kwargs, dict):
        raise RunError(f"model_kwargs (--set) must be a dict of builder argument to value (e.g. {{'num_heads': 4}}); "
                       f"got {model_kwargs!r}")
    source_run = None  # with init_from: that run's metrics.json
    if init_from is not None:
        if isinstance(init_from, bool) or not isinstance(init_from, (str, os.PathLike)):
            raise RunError(f"init_from (--init-from) must be the path of a run folder; got {init_from!r}")
        if os.path.abspath(init_from) == os.path.abspath(output):
            raise RunError(f"init_from (--init-from) is the output folder {output}; write the new run to another "
                           "--output")
        source_run = _source_run(init_from, model)
        model = source_run["model"]
        defaults = inspect.signature(train).parameters
        given_here = locals()
        taken = [name for name in FROM_SOURCE_RUN if (given_here[name] or None) != (defaults[name].default or None)]
        if taken:
            flags = ["--set" if name == "model_kwargs" else "--" + name.replace("_", "-") for name in taken]
            raise RunError(f"a run started from another (--init-from) takes its model's sizes, encoder and weights "
                           f"from {init_from}; leave out {', '.join(flags)}")
    model = model or "lama"
    if model not in SPECS:
        raise RunError(f"unknown model {model!r} (--model); choose one of {', '.join(sorted(SPECS))}")
    check_preset(preset)
    _check_positive(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, sequence_length=sequence_length,
                    max_sentences=max_sentences, max_tokens=max_tokens, checkpoint_every=checkpoint_every,
                    early_stopping=early_stopping, clip_norm=clip_norm, adapt_rows=adapt_rows)
    parse_schedule(lr_schedule)
    check_seed(seed)
    if early_stopping_monitor not in (None, "loss", "accuracy"):
        raise RunError(f"early_stopping_monitor (--early-stopping-monitor) must be loss or accuracy; "
                       f"got {early_stopping_monitor!r}")
    counts = dict(epochs=epochs, batch_size=batch_size, sequence_length=sequence_length, max_sentences=max_sentences,
                  max_tokens=max_tokens, checkpoint_every=checkpoint_every, early_stopping=early_stopping,
                  adapt_rows=adapt_rows)
    for name, value in counts.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise RunError(f"{name.replace('_', '-')} must be a whole number; got {value!r}")
    check_dtype_policy(dtype_policy)  # here, before the data is read
    if optimizer not in (None, *OPTIMIZERS):
        raise RunError(f"optimizer (--optimizer) must be one of {', '.join(OPTIMIZERS)}; got {optimizer!r}")
    if weight_decay is not None and (isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float))
                                     or not 0 <= weight_decay < 1):
        raise RunError(f"weight-decay must be a number in [0, 1); got {weight_decay!r}")
    model_kwargs = dict(model_kwargs or {})
    spec = SPECS[model]
    for name in model_kwargs:
        if GIVEN_BY_TRAINING.get(name):
            raise RunError(f"model_kwargs (--set) {name}: the encoder gives the model its {name}; give "
                           f"{GIVEN_BY_TRAINING[name]} instead")
        if name not in spec.settable_arguments():
            raise RunError(f"model_kwargs (--set) {name}: not an argument of the {model} builder that a run sets; it "
                           f"takes: {', '.join(spec.settable_arguments())}")
        if name in spec.flag_arguments() and not isinstance(model_kwargs[name], (bool, np.bool_)):
            raise RunError(f"model_kwargs (--set) {name} must be True or False (--set {name}=true or {name}=false); "
                           f"got {model_kwargs[name]!r}")
    if max_sentences is not None and not spec.is_hierarchical(model_kwargs):
        raise RunError(f"max_sentences (--max-sentences) is for hierarchical models; {model} reads flat texts")
    if split_long_sentences and not spec.is_hierarchical(model_kwargs):
        raise RunError(f"split_long_sentences (--split-long-sentences) is for hierarchical models; {model} reads "
                       "flat texts")
    if bigram_buckets is not None and (isinstance(bigram_buckets, bool) or not isinstance(bigram_buckets, int)
                                       or bigram_buckets < 0):
        raise RunError(f"bigram-buckets must be a whole number >= 0; got {bigram_buckets!r}")
    if bigrams_of not in (None, "vocabulary", "tokens"):
        raise RunError(f"bigrams-of must be 'vocabulary' or 'tokens'; got {bigrams_of!r}")
    has_bigrams = spec.encoder_options(model_kwargs, bigram_buckets=bigram_buckets).get("bigram_buckets")
    if bigrams_of is not None and not has_bigrams:
        raise RunError(f"bigrams_of (--bigrams-of) is for a run with bigrams; {model} has none here: give "
                       "bigram_buckets (--bigram-buckets)")
    check_embeddings(embeddings, freeze_embeddings, vectors_vocabulary)
    if adversarial is not None:
        try:
            check_epsilon(adversarial)
        except ValueError as error:
            raise RunError(f"{error} (--adversarial)") from None
    try:
        classifier_loss(label_smoothing)
    except ValueError as error:
        raise RunError(f"{error} (--label-smoothing)") from None
    check_class_weight(class_weight)
    given = locals()
    arguments = _jsonable({name: given[name] for name in RUN_ARGUMENTS})
    # The paper's recipe fills what the user left unset (preset "paper"); run.json keeps what was given.
    recipe = {name: value for name, value in spec.training_defaults(preset).items()
              if arguments[name] is None and (init_from is None or name not in FROM_SOURCE_RUN)}
    arguments_used = _with_fallbacks({**arguments, **recipe})
    if early_stopping_monitor is not None and arguments_used["early_stopping"] is None:
        raise RunError(f"early_stopping_monitor (--early-stopping-monitor) is what early stopping watches; give its "
                       f"patience too (--early-stopping N); got monitor {early_stopping_monitor!r} without it")
    if (distribute == "ray") != (workers is not None) or (workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1)):
        raise RunError(f"--distribute ray takes --workers N (N >= 1), and --workers only goes with it; got "
                       f"distribute {distribute!r}, workers {workers!r}")
    if ray_address is not None and distribute != "ray":
        raise RunError(f"--ray-address names the Ray cluster of --distribute ray; got distribute {distribute!r}")
    if distribute == "ray":
        from keras_textattn.training.ray_launcher import PATH_ARGUMENTS
        from keras_textattn.training.ray_launcher import train_on_ray
        from keras_textattn.training.ray_launcher import worker_arguments

        on_workers = worker_arguments({name: value for name, value in call.items()
                                       if name not in ("workers", "ray_address")})
        # The output's refusals before Ray starts (the workers would make them half a minute later).
        _run_state(on_workers["output"], overwrite,
                   {**arguments, **_jsonable({name: on_workers[name] for name in PATH_ARGUMENTS})})
        return train_on_ray(on_workers, workers, ray_address)
    if recipe and verbose:
        whose = f"The {model} paper's recipe (--preset paper; " if preset == "paper" else f"The {model} cpu preset's training ("
        print(whose + "give the option to change it): " + ", ".join(f"{name} {value}" for name, value in recipe.items()))
    strategy = make_strategy(distribute)  # first: MultiWorkerMirroredStrategy must precede other ops
    chief = _is_chief(strategy)
    replicas = strategy.num_replicas_in_sync
    if arguments_used["batch_size"] % replicas:
        size = arguments_used["batch_size"]
        lower = size - size % replicas
        raise RunError(f"batch size {size} (--batch-size: the global batch) does not split evenly over the {replicas} "
                       f"replicas of --distribute {distribute}; give a multiple of {replicas}, e.g. "
                       + (f"{lower} or {lower + replicas}" if lower else f"{replicas}"))
    _run_state(output, overwrite, arguments)  # a quick first look, before the data is read
    # Bad data fails here, before anything on disk changes.
    dataset, source = load_labelled_data(
        data, test_data=test_data, validation_data=validation_data, text_column=text_column, label_column=label_column, header=header,
        label_offset=label_offset, label_names=label_names, data_dir=data_dir,
        validation_fraction=validation_fraction, seed=seed, stream=stream, skip_bad_rows=skip_bad_rows,
        group_column=group_column, delimiter=delimiter,
    )
    if dataset.skipped and verbose:
        for split, skipped in dataset.skipped.items():
            print(f"Skipped in {split}: {skipped['rows']} rows, {len(skipped['files'])} files; first: {skipped['first']}")
    with locked(output) if chief else contextlib.nullcontext(), _out_of_memory_said(model):
        if chief:
            recover_replacement(output)
        state = _run_state(output, overwrite, arguments)
        keras.utils.set_random_seed(seed)
        run = dict(model=model, output=output, dataset=dataset, source=source, strategy=strategy, chief=chief,
                   resume=state == "resume", given=arguments, arguments=arguments_used, epochs=epochs,
                   distribute=distribute, checkpoint_every=checkpoint_every, verbose=verbose, source_run=source_run)
        if state == "overwrite" and chief:
            # The old run is kept aside until the new one is written, and restored if it fails.
            with replace_aside(output):
                return _train_run(**run)
        if state == "new" and chief:
            with _removed_if_nothing_trained(output):
                return _train_run(**run)
        return _train_run(**run)


@contextlib.contextmanager
def _out_of_memory_said(model):
    """TensorFlow's out-of-memory error while building or training (say `--sequence-length 100000`
    for dual-axial, whose feature-axial weights are length x length, or `--set embedding_dim=100000000`,
    whose embedding is vocabulary x 10^8) as one line saying what needs less; the run folder is
    left as any failure leaves it."""
    try:
        yield
    except tf.errors.ResourceExhaustedError as error:
        # In a traced step the allocation is on a later line, after "Graph execution error:".
        allocation = next((line for line in str(error).splitlines() if line.startswith("OOM when allocating")), None)
        raise RunError(f"{model} ran out of memory ({allocation or tf_reason(error)}); a shorter sequence length "
                       "(--sequence-length; HCAN: --max-sentences too), a smaller --batch-size, or smaller weights "
                       "(--set embedding_dim=..., --max-tokens) need less") from None


@contextlib.contextmanager
def _removed_if_nothing_trained(output):
    """A new run that fails before its first checkpoint leaves no folder behind (an empty
    folder that was there stays), so that the corrected command starts afresh."""
    existed = os.path.isdir(output)
    try:
        yield
    except BaseException:
        if not os.path.isdir(os.path.join(output, "backup")):
            shutil.rmtree(output, ignore_errors=True)
            if existed:
                os.makedirs(output)
        raise


def _train_run(model, output, dataset, source, strategy, chief, resume, given, arguments, epochs, distribute,
               checkpoint_every, verbose, source_run):
    """The part of `train()` that writes `output`: encoder, fit (resumed from the backup), evaluation, files.
    `given`: the run's arguments as given (run.json, what a resume must repeat); `arguments`: the
    same with the preset's recipe filled in; `source_run`: the metrics of the `init_from` run, or None."""
    os.makedirs(output, exist_ok=True)
    rows = {split: (dataset.rows or {}).get(split) for split in ("train", "validation", "test") if split in dataset.splits}
    rows = {split: _count(dataset[split]) if count is None else count for split, count in rows.items()}
    if chief:
        remove_temporary_files(output)  # of a write that a kill interrupted
        write_text(os.path.join(output, "run.json"), json.dumps(given, indent=2, sort_keys=True))
    early_stopping = arguments["early_stopping"]
    batch_size = arguments["batch_size"]
    spec = get_spec(model)
    source_model = None
    if source_run is not None:  # the sizes, encoder and weights of the init_from run
        source_model, source_encoder, _ = load_run(arguments["init_from"])
        if not weights_are_numbers(source_model):
            raise RunError(f"{arguments['init_from']} (--init-from) holds weights that are not numbers (a run that "
                           "diverged): start from another run, or without one")
        preset, model_kwargs = source_run["preset"], source_run["model_kwargs"]
    else:
        preset = arguments["preset"]
        model_kwargs = {**spec.preset_arguments(preset), **arguments["model_kwargs"]}
    encoder_path = os.path.join(output, "encoder.keras")
    if resume and os.path.exists(encoder_path):
        encoder = load_encoder(encoder_path)
    elif source_model is not None:
        encoder = source_encoder
        if chief:
            save_encoder(encoder_path, encoder)
    else:
        options = spec.encoder_options(model_kwargs, **{k: arguments[k] for k in (
            "max_tokens", "min_frequency", "sequence_length", "max_sentences", "split_long_sentences", "bigram_buckets",
            "bigrams_of")
            if arguments[k] is not None})
        chosen = choose_lengths_saying_so(spec, options, dataset["train"], verbose)
        try:
            encoder = TextEncoder(**{**options, **chosen})
        except ValueError as error:
            raise RunError(str(error)) from None
        encoder.adapt(sample_rows(dataset["train"], arguments["adapt_rows"], rows["train"], seed=arguments["seed"]))
        if arguments["vectors_vocabulary"]:
            encoder.extend_vocabulary(vectors_words(arguments["embeddings"], arguments["vectors_vocabulary"]))
        if chief:
            save_encoder(encoder_path, encoder)

    with strategy.scope():
        classifier = _build(spec, dataset.num_classes, encoder, model_kwargs, arguments["model_kwargs"],
                            arguments["dtype_policy"])
        embeddings = _initialise_embeddings(classifier, encoder, dataset["train"], arguments, verbose)
        initialised_from = _initialise_from(classifier, source_model, arguments["init_from"], verbose)
        compile_classifier(classifier, _optimizer(arguments), arguments["label_smoothing"])
        # Built here, not by Keras inside the first trace of the training step: a traced function
        # that creates variables is traced a second time (HCAN on 300 SST-2 sentences: 22.7 s ->
        # 16.2 s with `accuracy_metric`).
        classifier.optimizer.build(classifier.trainable_variables)
        if arguments["adversarial"]:
            use_adversarial_training(classifier, arguments["adversarial"])

    seed = arguments["seed"]
    cache = not dataset.streamed  # streamed rows are read again each epoch, never held

    def train_batches_of(rows_dataset, batch, count=None):
        return make_batches(rows_dataset, encoder, batch, shuffle=arguments["shuffle"], seed=seed, rows=count,
                            cache=cache)

    train_batches = train_batches_of(dataset["train"], batch_size, rows["train"])
    predict_batch_size = inference_batch_size(batch_size)  # validation and the scores below: no gradients
    validation_batches = make_batches(dataset["validation"], encoder, predict_batch_size, rows=rows["validation"],
                                      cache=cache)
    if distribute == "mirrored":
        train_batches, validation_batches = (_even_first_batch(batches, rows[split], size, strategy, split)
                                             for batches, split, size in ((train_batches, "train", batch_size),
                                                                          (validation_batches, "validation",
                                                                           predict_batch_size)))
    history_path, logs = os.path.join(output, "history.csv"), os.path.join(output, "logs")
    backup = os.path.join(output, "backup")
    monitor = arguments["early_stopping_monitor"] or "loss"
    class_weights, class_weight = weigh_classes(arguments["class_weight"], dataset["train"], dataset.label_names)
    if distribute == "multi-worker":
        if chief and not resume:  # what an earlier try, which started again, left
            for folder in (logs, backup):
                shutil.rmtree(folder, ignore_errors=True)
        # Every worker keeps the run's state: the chief in the run folder, the others in a temporary
        # folder, into which the chief's backup and history (a resumed run's) are copied first. So all
        # resume alike from the chief's disk alone: the same epoch, weights, and plateau's and early
        # stopping's state (which then decide alike, on the same validation figures), and each
        # restores the best epoch's weights at the end.
        with contextlib.nullcontext(backup) if chief else tempfile.TemporaryDirectory() as state:
            kept = sorted(os.path.join(backup, name) for name in os.listdir(backup)
                          if not name.startswith(".")) if chief and os.path.isdir(backup) else []
            copy_from_chief(strategy, chief, [*kept, history_path], state)
            worker_history = history_path if chief else os.path.join(state, os.path.basename(history_path))
            best = BestEpoch(state, early_stopping, monitor) if early_stopping else None
            resumed_from_epoch = restore(classifier, state)
            _keep_history_before(worker_history, resumed_from_epoch)
            if resumed_from_epoch < epochs and not (best and best.stopped):
                callbacks = [
                    *schedule_callbacks(arguments["lr_schedule"], arguments["learning_rate"], epochs, state),
                    # history.csv (the other workers' copy in `state`) and the chief's TensorBoard logs,
                    # epoch by epoch as `fit` writes them.
                    keras.callbacks.CSVLogger(worker_history, append=True),
                    *([_EpochRateTensorBoard(logs)] if chief else []),
                    *([best] if best else []),  # before the checkpoint: a resumed run knows the best epoch
                    *([RunBackup(backup, every=checkpoint_every)] if chief else []),
                ]
                _fit_multi_worker(strategy, classifier, dataset, train_batches_of, epochs, batch_size,
                                  math.ceil(rows["train"] / batch_size), callbacks, verbose=verbose and chief,
                                  validation_batches_of=lambda part, size: make_batches(part, encoder, size,
                                                                                        cache=cache),
                                  validation_batch_size=predict_batch_size, class_weights=class_weights,
                                  adversarial=arguments["adversarial"], label_smoothing=arguments["label_smoothing"],
                                  initial_epoch=resumed_from_epoch)
            history = _read_history(worker_history)
            if best:
                best.set_model(classifier)
                best.restore_best()
        # Evaluate locally on each worker (Keras's evaluate cannot reduce across workers either):
        # the trained weights in a model built outside the strategy.
        trained = classifier
        classifier = _build(spec, dataset.num_classes, encoder, model_kwargs, {}, arguments["dtype_policy"])
        classifier.set_weights(trained.get_weights())
        # The run's optimizer and its trained state, so that model.keras trains on as a one-device run's does.
        compile_classifier(classifier, _optimizer(arguments), arguments["label_smoothing"])
        classifier.optimizer.build(classifier.trainable_variables)
        for variable, value in zip(classifier.optimizer.variables, trained.optimizer.variables, strict=True):
            variable.assign(value)
    else:
        best = BestEpoch(backup, early_stopping, monitor) if early_stopping else None
        resumed_from_epoch = restore(classifier, backup) if resume else 0
        _keep_history_before(history_path, resumed_from_epoch)  # rows of epochs trained again are dropped
        if resumed_from_epoch < epochs and not (best and best.stopped):
            interrupt = _DeferredInterrupt()
            callbacks = [
                _EpochSeconds(),
                StopOnDivergence(functools.partial(_diverged_run, learning_rate=arguments["learning_rate"])),
                # Before the history row (they log each epoch's learning rate) and the checkpoint (its state).
                *schedule_callbacks(arguments["lr_schedule"], arguments["learning_rate"], epochs, backup),
                keras.callbacks.CSVLogger(history_path, append=True),
                # Before the checkpoint too, so no epoch a resumed run skips misses its point (a kill between
                # the two trains the epoch again, and TensorBoard shows it twice at that step).
                _EpochRateTensorBoard(logs),
                # After the history row: a kill between the two trains the epoch again, and its row is dropped.
                *([best] if best else []),  # before the checkpoint: a resumed run knows the best epoch
                RunBackup(backup, every=checkpoint_every),
                interrupt,  # last: a finished epoch is recorded and backed up before Ctrl-C stops the run
            ]
            with interrupt.deferred():
                classifier.fit(
                    train_batches,
                    validation_data=validation_batches,
                    epochs=epochs,
                    initial_epoch=resumed_from_epoch,
                    callbacks=callbacks,
                    verbose=verbose,
                    shuffle=False,  # make_batches shuffles, with the seed
                    class_weight=class_weights,
                )
        history = _read_history(history_path)
        if best:
            best.set_model(classifier)
            best.restore_best()

    accuracy, f1 = {}, {}
    for split, count in rows.items():
        batches = make_batches(dataset[split], encoder, predict_batch_size, rows=count, cache=False)
        accuracy[split], f1[split] = _scores(classifier, dataset[split], batches)
    seconds = history.get("seconds", [])
    metrics = {
        "model": model,
        "preset": preset,
        "model_kwargs": model_kwargs,
        "data": source if isinstance(source, str) else {k: str(v.path) for k, v in source.items()},
        "label_names": dataset.label_names,
        "accuracy": accuracy,
        "macro_f1": f1,
        "rows": rows,
        "skipped": dataset.skipped,
        "class_weight": class_weight,
        "history": history,
        "seconds_per_epoch": seconds,
        "examples_per_second": float(rows["train"] / np.mean(seconds)) if seconds else None,
        "parameters": int(classifier.count_params()),
        "epochs": epochs,
        "resumed_from_epoch": resumed_from_epoch,
        "early_stopping": early_stopping,
        "early_stopping_monitor": monitor if early_stopping else None,
        "optimizer": arguments["optimizer"],
        "learning_rate": arguments["learning_rate"],
        "weight_decay": arguments["weight_decay"],
        "lr_schedule": arguments["lr_schedule"] or "constant",
        "clip_norm": arguments["clip_norm"],
        "adversarial": arguments["adversarial"],
        "label_smoothing": arguments["label_smoothing"],
        "dtype_policy": classifier.dtype_policy.name,
        "embeddings": embeddings,
        "initialised_from": initialised_from,
        "best_epoch": best.best["epoch"] if best and best.best else None,
        "stopped_early": bool(best and best.stopped),
        "batch_size": batch_size,
        "seed": seed,
        "distribute": distribute or "none",
        "replicas": strategy.num_replicas_in_sync,
        "encoder": encoder.get_config(),
    }
    if chief:
        save_run(output, classifier, encoder, dataset.label_names, metrics)
        shutil.rmtree(backup, ignore_errors=True)
    return metrics


def _fit_multi_worker(strategy, model, dataset, batches_of, epochs, global_batch_size, batches, callbacks=(),
                      verbose=False, validation_batches_of=None, validation_batch_size=None, class_weights=None,
                      adversarial=None, label_smoothing=None, initial_epoch=0):
    """Data-parallel training across workers with a plain distributed loop.

    Keras 3's `fit` fails under MultiWorkerMirroredStrategy (it reduces a data batch
    and scalar logs across workers; keras-team/keras#20585), so this loop runs the
    same forward pass, loss and optimizer through `strategy.run`. Each worker reads its
    own part of the training rows (`TextClassificationData.worker_split`: its own shards
    when there are at least as many as workers, else every n-th row), batched by
    `batches_of(rows, per-worker batch size)`; a worker whose part has run out gets empty
    batches until every part has (TensorFlow's distributed iterator). The loss of each replica
    is averaged over the global batch (`tf.nn.compute_average_loss`), so the summed gradients
    equal single-device gradients. `class_weights` (`{label id: weight}`, as `fit`'s
    `class_weight`) weigh each row's loss, as `fit` does (not the accuracy). `adversarial`: an
    epsilon, to train as `use_adversarial_training` makes `fit` train. `label_smoothing`: as
    `classifier_loss`'s, to train with the loss `compile_classifier` gives `fit`.
    `batches`: the global batches of an epoch. `initial_epoch`: the first epoch to train (a
    resumed run's, as `fit`'s).

    With `validation_batches_of` (as `batches_of`, unshuffled; `validation_batch_size` the global
    batch), each epoch ends with the validation split's loss and accuracy, `fit`'s `val_loss`
    and `val_accuracy`: each worker scores its part of it and the sums are added up across
    workers, so every worker gets the same figures and callbacks that act on them (early
    stopping, the plateau) decide alike on all of them.

    `callbacks` (Keras callbacks, the run's schedule among them: `schedules.schedule_callbacks`)
    get the beginning and end of each epoch and training batch, as in `fit` (each epoch's end with
    its history row as the logs: a checkpoint's callback, `RunBackup`, saves there and every few
    batches); one that sets `model.stop_training` ends training there. `verbose` prints that row,
    a line an epoch.
    """

    def distributed(split, batches_of_split, global_size):
        def worker_batches(context):
            rows, description = dataset.worker_split(split, context.input_pipeline_id, context.num_input_pipelines)
            if split == "train":
                print(description, flush=True)  # also with verbose=0 (--quiet: no progress bars): one line per worker
            return batches_of_split(rows, context.get_per_replica_batch_size(global_size))

        return strategy.distribute_datasets_from_function(worker_batches)

    train_batches = distributed("train", batches_of, global_batch_size)
    validation_batches = (distributed("validation", validation_batches_of, validation_batch_size)
                          if validation_batches_of else None)
    loss_function = classifier_loss(label_smoothing, reduction=None)
    weights_of_classes = tf.constant([(class_weights or {}).get(label, 1.0) for label in range(dataset.num_classes)],
                                     tf.float32)

    def correct(labels, probabilities):
        return tf.reduce_sum(tf.cast(tf.equal(tf.argmax(probabilities, -1, output_type=tf.int32),
                                              tf.cast(labels, tf.int32)), tf.float32))

    adversarial_gradients_of = adversarial_gradients(model, adversarial) if adversarial else None

    def replica_step(ids, labels):
        weights = tf.gather(weights_of_classes, tf.cast(labels, tf.int32))

        def loss_of(probabilities):
            loss = tf.nn.compute_average_loss(weights * loss_function(labels, probabilities),
                                              global_batch_size=global_batch_size)
            if model.losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
            return loss

        if adversarial_gradients_of:
            loss, probabilities, gradients = adversarial_gradients_of(list(tf.nest.flatten(ids)), loss_of)
        else:
            with tf.GradientTape() as tape:
                probabilities = model(ids, training=True)
                loss = loss_of(probabilities)
                # Under mixed_float16 the optimizer is Keras's LossScaleOptimizer: it unscales the
                # gradients it applies, so they must be of the scaled loss (as `fit` does).
                scaled_loss = model.optimizer.scale_loss(loss)
            gradients = tape.gradient(scaled_loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss, correct(labels, probabilities), tf.cast(tf.size(labels), tf.float32)

    def replica_scores(ids, labels):
        """The batch's summed loss (with the model's own losses per row, as `evaluate` adds them),
        right answers and rows."""
        probabilities = model(ids, training=False)
        rows = tf.cast(tf.size(labels), tf.float32)
        loss = tf.reduce_sum(loss_function(labels, probabilities))
        if model.losses:
            loss += tf.cast(tf.add_n(model.losses), tf.float32) * rows
        return loss, correct(labels, probabilities), rows

    def summed(replica_function, batches):
        """A traced step that runs `replica_function` on every replica and adds up its values.
        Traced once, for the batches' own shapes: a worker whose part has run out gets a batch of
        a known 0 rows, and a step traced for it apart left some of HCAN's and CSPAN's gradients
        None, so that worker sent fewer to the gradients' all-reduce than the others and the run
        failed ("Shape mismatch in the collective instance")."""

        @tf.function(input_signature=list(batches.element_spec))
        def run(ids, labels):
            return [strategy.reduce("SUM", value, axis=None)
                    for value in strategy.run(replica_function, args=(ids, labels))]

        return run

    step = summed(replica_step, train_batches)
    scores = summed(replica_scores, validation_batches) if validation_batches is not None else None
    history = keras.callbacks.History()  # last: each epoch's logs as the callbacks leave them
    callbacks = keras.callbacks.CallbackList([*callbacks, history], model=model, epochs=epochs, steps=batches)
    model.stop_training = False

    def optimizer_rate():
        return float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))

    learning_rate = optimizer_rate()  # the run's, for a message
    callbacks.on_train_begin()
    for epoch in range(initial_epoch, epochs):
        callbacks.on_epoch_begin(epoch)
        start, losses, right, rows = time.perf_counter(), [], 0.0, 0.0
        for batch, (ids, labels) in enumerate(train_batches):
            callbacks.on_train_batch_begin(batch)
            loss, batch_right, batch_rows = step(ids, labels)
            callbacks.on_train_batch_end(batch)
            losses.append(float(loss))
            right, rows = right + float(batch_right), rows + float(batch_rows)
        # The rate logged is the optimizer's (constant, the plateau's); a schedule's callback logs its own.
        logs = {"loss": float(np.mean(losses)), "accuracy": right / rows if rows else 0.0,
                "learning_rate": optimizer_rate()}
        check_converging(model, logs["loss"], epoch, learning_rate)
        if validation_batches is not None:
            totals = np.zeros(3)
            for ids, labels in validation_batches:
                totals += [float(value) for value in scores(ids, labels)]
            logs.update(val_loss=totals[0] / totals[2], val_accuracy=totals[1] / totals[2])
        logs["seconds"] = time.perf_counter() - start
        callbacks.on_epoch_end(epoch, logs)
        if verbose:
            print(f"Epoch {epoch + 1}/{epochs} - " + " - ".join(f"{name}: {history.history[name][-1]:.4g}"
                                                                for name in logs), flush=True)
        if model.stop_training:
            break
    callbacks.on_train_end()
    return {"epoch": [float(epoch) for epoch in history.epoch],
            **{name: [float(value) for value in values] for name, values in history.history.items()}}


def _build(spec, num_classes, encoder, model_kwargs, given, dtype_policy=None):
    """The model of `spec` for `encoder`'s ids, under `dtype_policy` (None: the global one).
    A builder's `TypeError` or `ValueError` is the user's mistake when they gave builder
    arguments (`given`, `--set`)."""
    try:
        return build_model(spec.name, num_classes, dtype_policy=dtype_policy, vocabulary_size=encoder.vocabulary_size(),
                           **spec.shape_arguments(encoder), **model_kwargs)
    except (TypeError, ValueError) as error:
        if not given:
            raise
        raise RunError(f"{spec.name} cannot be built with {given} ({error}); it takes: "
                       f"{', '.join(spec.settable_arguments())}") from None


def _even_first_batch(batches, rows, batch_size, strategy, split):
    """`batches` of a split of `rows` rows whose first batch splits evenly over the strategy's
    replicas: Keras's `fit` reduces the first batch across replicas to build its step, which fails
    when their parts differ in size (keras-team/keras#19246); later partial batches are fine. A
    split of fewer rows than a batch, and not a multiple of the replicas, comes in two batches
    (the most rows that split evenly, then the rest); one of fewer rows than replicas is an error."""
    replicas = strategy.num_replicas_in_sync
    if rows < replicas:
        raise RunError(f"the {split} split holds {rows} row{'s' * (rows != 1)}, fewer than the {replicas} replicas of "
                       "--distribute mirrored (each needs one); give more rows, or train on one device")
    if rows >= batch_size or rows % replicas == 0:
        return batches  # the first batch is a full one (a multiple of the replicas) or splits evenly
    even = rows - rows % replicas

    def two_batches(*batch):
        parts = [tf.nest.map_structure(lambda tensor: tensor[start:end], batch) for start, end in ((0, even), (even, rows))]
        return tf.data.Dataset.from_tensors(parts[0]).concatenate(tf.data.Dataset.from_tensors(parts[1]))

    return batches.flat_map(two_batches)


def classifier_loss(label_smoothing=None, reduction="sum_over_batch_size"):
    """The cross-entropy of integer labels a run trains with: with `label_smoothing` (in [0, 1)), of
    the smoothed targets (`SmoothedSparseCategoricalCrossentropy`); without it (None or 0), Keras's."""
    if label_smoothing is None or (label_smoothing == 0 and not isinstance(label_smoothing, bool)):
        return keras.losses.SparseCategoricalCrossentropy(reduction=reduction)
    return SmoothedSparseCategoricalCrossentropy(label_smoothing, reduction=reduction)


def compile_classifier(model, optimizer, label_smoothing=None):
    """Compile `model` for integer labels (`classifier_loss`) with `optimizer` and `accuracy_metric`, the optimizer
    wrapped in Keras's LossScaleOptimizer when the model computes in float16. Keras's `compile`
    wraps it too, but the saved compile config then names the bare optimizer, and
    `keras.models.load_model` rebuilds a functional model under the loader's global dtype policy
    (its config keeps none): the model came back with the bare optimizer (no loss scaling when
    trained further) and its saved optimizer state was skipped, with Keras's warning."""
    if model.dtype_policy.name == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer, name="loss_scale_optimizer")
    model.compile(optimizer=optimizer, loss=classifier_loss(label_smoothing), metrics=[accuracy_metric()])


def accuracy_metric():
    """Keras's "accuracy" for integer labels, its variables made now: the string "accuracy" makes
    them inside the first trace of the training step, which tf.function then traces again."""
    return keras.metrics.SparseCategoricalAccuracy(name="accuracy")


def _scores(classifier, rows, batches):
    """Accuracy and macro F1 (`macro_f1`) of `classifier` on `batches`, the unshuffled
    batches of the `(text, label)` `rows`."""
    labels = rows.map(lambda _, label: label).batch(65_536)  # in blocks: row by row took a second per 10,000
    truth = np.concatenate([np.zeros(0, np.int64), *labels.as_numpy_iterator()]).astype(np.int64)
    predicted = np.argmax(classifier.predict(batches, verbose=0), axis=-1)
    return float(np.mean(truth == predicted)), macro_f1(truth, predicted)


def check_preset(preset):
    """`preset` is one of `PRESETS` ("cpu", "paper")."""
    if preset not in PRESETS:
        raise RunError(f"unknown preset {preset!r} (--preset); choose one of {', '.join(PRESETS)}")


def check_embeddings(embeddings, freeze_embeddings, vectors_vocabulary=None):
    """`embeddings` is None, "word2vec", a `PACKAGED_VECTORS` name or a vectors file;
    `freeze_embeddings` needs embeddings, and `vectors_vocabulary` (a count) vectors to take words from."""
    if embeddings not in (None, "word2vec") and (isinstance(embeddings, bool) or not isinstance(
            embeddings, (str, os.PathLike)) or not is_vectors_source(embeddings)):
        raise RunError(f"embeddings (--embeddings) must be 'word2vec', {', '.join(map(repr, PACKAGED_VECTORS))} or a "
                       f"vectors file; {embeddings!r} is none of them")
    if embeddings in PACKAGED_VECTORS:
        vectors_dimension(embeddings)  # a missing package is refused before any data is read
    if freeze_embeddings and embeddings is None:
        raise RunError("freeze_embeddings (--freeze-embeddings) needs embeddings (--embeddings) to freeze")
    if vectors_vocabulary is not None:
        _check_positive(vectors_vocabulary=vectors_vocabulary)
        if not isinstance(vectors_vocabulary, int):
            raise RunError(f"vectors-vocabulary must be a whole number; got {vectors_vocabulary!r}")
        if embeddings in (None, "word2vec"):
            raise RunError(f"vectors_vocabulary (--vectors-vocabulary) adds words of pretrained vectors to the "
                           f"vocabulary: give them with --embeddings (a vectors file or "
                           f"{', '.join(PACKAGED_VECTORS)}); embeddings is {embeddings!r}")


def _initialise_embeddings(classifier, encoder, train_rows, arguments, verbose):
    """Set the token embedding (the builders' layer "embedding") from `arguments["embeddings"]`;
    freeze it with `freeze_embeddings`. Returns what metrics.json records, or None."""
    source = arguments["embeddings"]
    if source is None:
        return None
    layer = classifier.get_layer("embedding")
    dimension = layer.output_dim
    if source != "word2vec" and (found := vectors_dimension(source)) != dimension:
        size = get_spec(arguments["model"]).embedding_size_argument
        raise RunError(f"{source} has {found}-dimensional vectors; the {arguments['model']} embedding has "
                       f"{dimension} (set its size to match: --set {size}={found})")
    rows, covered = initial_embedding(source, encoder, train_rows, dimension, seed=arguments["seed"])
    layer.embeddings.assign(rows)
    layer.trainable = not arguments["freeze_embeddings"]
    added = encoder.added_tokens
    share = coverage(covered, encoder.counted_vocabulary_size())  # of the training texts' words
    if verbose:
        print(f"Embeddings from {source}: {share:.1%} of the vocabulary has a vector"
              + (f"; {added:,} more of its words added to the vocabulary" if added else "")
              + (" (frozen)" if arguments["freeze_embeddings"] else ""))
    return {"source": source, "dimension": dimension, "coverage": share, "words_added": added,
            "frozen": bool(arguments["freeze_embeddings"])}


def _source_run(folder, model):
    """The metrics.json of the finished run at `folder` (`init_from`), whose model `model` (None:
    any) must be."""
    metrics_path = os.path.join(os.fspath(folder), "metrics.json")
    if not os.path.isfile(metrics_path):
        raise RunError(f"init_from (--init-from) must be a finished run folder; {folder} has no metrics.json")
    metrics = read_json(metrics_path)
    if model is not None and model != metrics.get("model"):
        raise RunError(f"{folder} trained {metrics.get('model')}, and a run started from it trains the same model; "
                       f"leave out --model or give {metrics.get('model')}; got {model}")
    return metrics


def _initialise_from(classifier, source, folder, verbose):
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
        print(f"Initialised from {folder}: its encoder and {copied:,} weights, every layer but the output layer, "
              "which starts afresh")
    return {"run": os.path.abspath(folder), "weights": copied, "new_layers": ["logits"]}


def _count(rows):
    """The number of rows of a dataset: its cardinality if known, else one pass."""
    known = int(rows.cardinality())
    return known if known >= 0 else int(rows.reduce(0, lambda count, _: count + 1))


def _keep_history_before(path, epoch):
    """Drop the rows of history.csv for epochs from `epoch` on (they are trained again)."""
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if not lines:
        return
    kept = [lines[0]] + [line for line in lines[1:] if line and float(line.split(",")[0]) < epoch]
    if len(kept) == 1:
        os.remove(path)  # CSVLogger writes the header again
    elif len(kept) < len(lines):
        write_text(path, "\n".join(kept) + "\n")


def _read_history(path):
    """history.csv as {column: [values per epoch]}."""
    if not os.path.exists(path):
        return {}
    rows = np.genfromtxt(path, delimiter=",", names=True, ndmin=1)
    return {name: [float(v) for v in rows[name]] for name in rows.dtype.names}
