"""How the command line reads option values: argparse `type=` functions, and the field values
they become. Shared by `TrainConfig`'s fields, the command line and the example scripts."""

import argparse
import json
import os
import sys


def path_argument(text):
    """A path as given, with a leading `~` or `~user` expanded: a shell leaves `--output=~/runs`
    as written, which would otherwise make a folder named `~` in the working directory."""
    return os.path.expanduser(text)


def column(text):
    """A column's index (digits) or name."""
    return int(text) if text.isdigit() else text


def delimiter(text):
    """One character; `tab` (or the two characters `\\t`) for a tab, which a shell passes awkwardly."""
    text = {"tab": "\t", "\\t": "\t"}.get(text, text)
    if len(text) != 1:
        raise argparse.ArgumentTypeError(f"expected one character, or tab; got {text!r}")
    return text


def class_weight(text):
    """ "balanced", or a JSON object of class name to weight."""
    if text == "balanced":
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected balanced or a JSON object such as '{{\"spam\": 5}}', got {text!r}")
    return value


def model_setting(text):
    """`key=value`, value read as JSON when it parses (numbers, true, lists), else a string."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def count(text):
    """A positive whole number."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return number


def text_columns(columns, default=None):
    """Repeated `--text-column`s (or `--label-column`s) as the API takes them: one name or index, a
    list, or `default`."""
    if not columns:
        return default
    return columns[0] if len(columns) == 1 else columns


def comma_separated(text):
    """`a, b,c` as `["a", "b", "c"]`; None as None."""
    return [name.strip() for name in text.split(",")] if text else None


def progress_verbosity(quiet=False):
    """Keras's `verbose` for fit: a progress bar on a terminal; one line per epoch when the output
    goes to a file or a pipe (a bar redrawn there writes a line per step: ~100 KB an epoch on IMDB)."""
    return 0 if quiet else 1 if sys.stdout.isatty() else 2
