"""`keras-textattn tune`: a keras-tuner search from a tuner config."""

from keras_textattn_cli.common import add_config_flags
from keras_textattn_cli.common import config_overrides
from keras_textattn_config import flags
from keras_textattn_config.train_config import PRESETS
from keras_textattn_config.train_config import SEARCH_DATA_OPTIONS
from keras_textattn_config.train_config import SEARCH_TRIAL_OPTIONS

AS_FOR_TRAIN = {
    "embeddings": "every trial's initial word vectors, as for train; the file's dimension must be the embedding size "
    "the config fixes",
    "freeze_embeddings": "keep them fixed in every trial (or search freeze_embeddings in the config)",
    "vectors_vocabulary": "as for train: the first N words of the --embeddings vectors that the vocabulary lacks join "
    "it (not with a searched max_tokens)",
    "verbose": "no progress bars (as for train)",
}


def add_parser(subcommand):
    tune = subcommand("tune", help="search hyperparameters with keras-tuner")
    tune.add_argument(
        "--config",
        type=flags.path_argument,
        required=True,
        help="a tuner config: a YAML file, or a paper model's name for the one shipped with "
        "keras-textattn (e.g. lama: tuner_configs/lama.yaml in a checkout)",
    )
    tune.add_argument(
        "--data", type=flags.path_argument, required=True, help="a TFDS name or a CSV/TSV file, as for train"
    )
    tune.add_argument(
        "--directory",
        type=flags.path_argument,
        required=True,
        help="the search folder; rerun the same command to resume",
    )
    tune.add_argument("--tuner", choices=["random", "bayesian", "hyperband"], default="random")
    tune.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="the sizes a trial takes where the config neither fixes nor searches them, as for train: "
        "cpu, fast (in a search the cpu preset: the search sets its trials' epochs) or paper; default: the "
        "config's (cpu when it says none)",
    )
    tune.add_argument(
        "--max-trials", type=int, help="default: the config's (random and bayesian; hyperband's follow from --epochs)"
    )
    tune.add_argument("--epochs", type=int, help="per trial (hyperband: the most); default: the config's")
    add_config_flags(tune, SEARCH_TRIAL_OPTIONS, help=AS_FOR_TRAIN)
    add_config_flags(tune.add_argument_group("local files"), SEARCH_DATA_OPTIONS)


def run(args):
    from keras_textattn.tuning import tune

    rows = tune(
        args.config,
        args.data,
        args.directory,
        tuner=args.tuner,
        preset=args.preset,
        max_trials=args.max_trials,
        epochs=args.epochs,
        **config_overrides(args, SEARCH_TRIAL_OPTIONS + SEARCH_DATA_OPTIONS),
    )
    if rows:
        print(
            f"Finished {len(rows)} trials; best score {rows[0]['score']:.4f} (trial {rows[0]['trial']}). "
            f"Table: {args.directory}/trials.md; best model: {args.directory}/best/"
        )
    return 0
