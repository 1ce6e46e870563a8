"""What the subcommands share: the parser classes, the flags of `TrainConfig`'s fields, the flags
that say how a file is read, and the helpers that read texts and check data options.

Nothing here imports TensorFlow: `--help` and argument errors answer before it is imported.
"""

import argparse
import sys

from keras_textattn_config import flags
from keras_textattn_config.checks import UserError
from keras_textattn_config.checks import valid_unicode
from keras_textattn_config.train_config import FIELDS
from keras_textattn_config.train_config import default_of
from keras_textattn_config.train_config import flag_of
from keras_textattn_config.train_config import option_of


class HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """`--help` shows each option's default, where it has one."""

    def _get_help_string(self, action):
        if action.default in (None, False, []):
            return action.help
        return super()._get_help_string(action)


class CommandLineParser(argparse.ArgumentParser):
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


class TextsAreArguments(argparse.Action):
    """`--text` of predict and explain, refused with the way to give texts: they are arguments
    (without abbreviations it is unknown; with them it was taken for `--text-column`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(
            f"texts are given as arguments, not with --text: {parser.prog} --run RUN 'a text' 'another' "
            "(- reads them from standard input); --text-column names the text column of --data"
        )


def add_config_flags(group, names, help=None):
    """Add the flags of `TrainConfig`'s fields `names` to `group` (a parser or an argument group);
    `help` replaces a field's help by name."""
    for name in names:
        field, option = FIELDS[name], option_of(FIELDS[name])
        default = {"store_true": False, "append": None}.get(option.parse.get("action"), default_of(field))
        group.add_argument(
            flag_of(field),
            dest=dest_of(field),
            help=(help or {}).get(name, option.help).replace("%", "%%"),  # argparse formats help with %
            **{"default": default, **option.parse},
        )


def dest_of(field):
    """Where argparse keeps a field's flag: its name as a Python name (`--no-header`: no_header)."""
    return flag_of(field)[2:].replace("-", "_")


def config_overrides(args, names):
    """The fields `names` as the parsed `args` give them: `{field: value}` for `TrainConfig`."""
    overrides = {}
    for name in names:
        from_flag = option_of(FIELDS[name]).from_flag
        value = getattr(args, dest_of(FIELDS[name]))
        overrides[name] = from_flag(value) if from_flag else value
    return overrides


# How a CSV/TSV file is read: the same flags for every subcommand that reads one.
FILE_FORMAT = ("text_column", "header", "delimiter")


def add_file_format_flags(parser, labels):
    """`--text-column`, `--no-header`, `--delimiter`, and with `labels` `--label-column`, `--label-offset`
    and `--label-delimiter`."""
    add_config_flags(parser, FILE_FORMAT[:1])
    if labels:
        add_config_flags(parser, ("label_column",))
    add_config_flags(parser, FILE_FORMAT[1:])
    if labels:
        add_config_flags(parser, ("label_offset", "label_delimiter"))


def text_column(args, default="text"):
    """`--text-column` as the API takes it: one name or index, a list of them, or `default`."""
    return flags.text_columns(args.text_column, default)


def given_texts(args):
    """The texts given on the command line, or with `-` the lines of standard input without their
    line ends, read as they come; bytes that are not UTF-8 become U+FFFD (as the encoder reads them)."""
    if args.texts != ["-"]:
        yield from map(valid_unicode, args.texts)
        return
    for line in sys.stdin.buffer:
        yield line.decode("utf-8", errors="replace").rstrip("\r\n")


def check_data_options(args, options, hint="", data="--data"):
    """Refuse options that only say how to read or write the file of `data` (an option) when it is not
    given, rather than ignoring them (`predict - --output preds.csv` would otherwise print and write nothing)."""

    def value(option):
        return getattr(args, option.lstrip("-").replace("-", "_"))

    given = [option for option in options if value(option) not in (None, False)]
    if given and not value(data):
        raise UserError(
            f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for {data} FILE, which is not given{hint}"
        )


def add_long_text_flags(parser):
    """predict's and evaluate's `--long-texts` and `--stride` (`inference.Classifier`'s arguments)."""
    parser.add_argument(
        "--long-texts",
        choices=["cut", "windows"],
        default="cut",
        help="a text longer than the model reads: cut (its start read), or windows (run folders: read "
        "whole in overlapping windows, their probabilities averaged)",
    )
    parser.add_argument(
        "--stride",
        type=flags.count,
        help="with --long-texts windows: tokens (HCAN: sentences) from one window to the next (default: half "
        "the model's length)",
    )


def longer_than_read_said(count, rows, long_texts):
    """The line that says how many of `rows` texts were longer than the model reads (None: none, or unknown)."""
    if not count:
        return None
    if long_texts == "windows":
        return f"{count:,} of the {rows:,} texts were longer than the model reads: each was read in windows"
    return (
        f"{count:,} of the {rows:,} texts were longer than the model reads: their ends were not read "
        "(--long-texts windows reads them whole)"
    )
