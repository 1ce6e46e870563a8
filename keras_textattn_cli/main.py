"""`keras-textattn`'s entry point: parse, check what needs no TensorFlow, import it quietly, run
the subcommand, and turn a user's mistake into one line.

Every command runs on Keras's TensorFlow backend (the text encoder and the data pipeline are
TensorFlow ops), whatever `KERAS_BACKEND` says; the layers and models run on any backend from
Python. TensorFlow's C++ log lines are hidden unless `--verbose`.
"""

import argparse
import atexit
import contextlib
import errno
import functools
import importlib.metadata
import os
import sys
import threading
import warnings

from keras_textattn_cli import evaluate
from keras_textattn_cli import explain
from keras_textattn_cli import export
from keras_textattn_cli import predict
from keras_textattn_cli import train
from keras_textattn_cli import tune
from keras_textattn_cli import vectors
from keras_textattn_cli.common import CommandLineParser
from keras_textattn_cli.common import HelpWithDefaults
from keras_textattn_config.checks import UserError

COMMANDS = {
    "train": train,
    "vectors": vectors,
    "export": export,
    "tune": tune,
    "predict": predict,
    "evaluate": evaluate,
    "explain": explain,
}


def build_parser():
    # No abbreviated options (argparse's default took `--text` for `--text-column`, and a later option
    # could make a user's abbreviation ambiguous): each is written in full.
    parser = CommandLineParser(
        prog="keras-textattn", description="Attention models for text classification.", allow_abbrev=False
    )
    parser.add_argument(
        "--version",
        action="version",
        version=_versions(),
        help="keras-textattn's version, and those of the Keras and TensorFlow installed",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument(
        "--verbose", dest="tf_logs", action="store_true", help="show TensorFlow's own log lines (hidden by default)"
    )
    subcommand = functools.partial(
        commands.add_parser, formatter_class=HelpWithDefaults, parents=[common], allow_abbrev=False
    )
    for command in COMMANDS.values():
        command.add_parser(subcommand)
    return parser


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
    args = build_parser().parse_args(argv)  # --help and argument errors end here, before TensorFlow is imported
    command = COMMANDS[args.command]
    warnings.formatwarning = _warning_line  # one line, without the source line of the warning
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend != "tensorflow":  # e.g. set for one's own JAX work: the encoder and tf.data need TensorFlow
        print(
            f"keras-textattn: note: the command line runs on TensorFlow; KERAS_BACKEND={backend} is not used here",
            file=sys.stderr,
        )
    os.environ["KERAS_BACKEND"] = "tensorflow"
    if not args.tf_logs:
        # TensorFlow's C++ messages while it runs (e.g. oneDNN's "supports DT_BOOL only ..." at the first
        # prediction); errors that matter reach Python as exceptions.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        prepared = command.prepare(args) if hasattr(command, "prepare") else {}  # checks that need no TensorFlow
        _start_tensorflow(args)
        return command.run(args, **prepared)
    except KeyboardInterrupt:  # at any moment, TensorFlow's import included: one line
        print(f"keras-textattn: interrupted{_after_interrupt(args)}", file=sys.stderr)
        return 130
    except (UserError, OSError) as error:
        # A user's mistake (see keras_textattn.errors), or a file system's refusal (a missing or
        # existing path, no permission, a full disk): one line. Anything else is a bug: its traceback shows.
        print(f"keras-textattn: error: {_error_line(error, args)}", file=sys.stderr)
        return 2


def command_line():
    """The `keras-textattn` command (and `python -m keras_textattn_cli`): `main` on the process's
    arguments, then `exit_without_teardown` with its status."""
    exit_without_teardown(main())


def exit_without_teardown(status):
    """End the process with `status` (None: 0) once its exit handlers have run and its output is
    flushed, without the interpreter's teardown: after TensorFlow is imported, freeing its modules
    and libraries at exit is slow, and nothing a command wrote depends on it (each file is closed
    when written). Where a thread that is not a daemon still runs, the process
    exits as usual, which waits for it."""
    status = status or 0
    if any(
        thread.is_alive() and not thread.daemon
        for thread in threading.enumerate()
        if thread is not threading.main_thread()
    ):
        sys.exit(status)
    atexit._run_exitfuncs()  # what a normal exit runs first: logging.shutdown, weakref finalizers, Ray's shutdown
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`) or stream: the output has nowhere to go
            pass
    os._exit(status)


def _start_tensorflow(args):
    """Import TensorFlow (and register the layers) with its C++ log lines hidden unless `--verbose`,
    and set up its devices."""
    with contextlib.nullcontext() if args.tf_logs else _without_native_logs():
        import keras_textattn  # noqa: F401 (imports Keras and TensorFlow, and registers the layers)

        if getattr(args, "cpu_devices", None) is not None:
            from keras_textattn.training import configure_cpu_devices

            configure_cpu_devices(args.cpu_devices)  # a positive count (`flags.count`)
        if getattr(args, "distribute", None) != "multi-worker":  # its strategy must set the devices up itself
            import tensorflow as tf

            tf.config.list_logical_devices()  # initialises the devices: cuInit and its kind log here


def _after_interrupt(args):
    """What the line of an interrupted command adds: how to go on, and what was kept."""
    if args.command == "train":
        kept = " (a replaced run was kept)" if args.overwrite else ""
        return f"; run the same command to resume from the last checkpoint{kept}"
    return {
        "tune": "; run the same command to resume the search",
        "export": "; nothing was written",
        "vectors": "; nothing was written",
    }.get(args.command, "")


# After a full disk: what to do once there is space again.
NO_SPACE_THEN = {
    "train": "run the same command again: it resumes from the last checkpoint, if any",
    "tune": "run the same command again: the search resumes",
}
# The flags naming what a command writes, for a full disk's message when the error names no file.
WRITTEN = ("output", "directory", "html", "png", "top_tokens_csv", "top_tokens_md")


def _error_line(error, args):
    """The one line printed for a `UserError` or `OSError`: its message's first line; for a full
    disk or a used-up quota (ENOSPC, EDQUOT; h5py's message runs over lines of buffer addresses)
    where and what next, and for a read-only one (EROFS) the folder, not the lock or temporary
    file that found it."""
    if not isinstance(error, OSError):
        return str(error).splitlines()[0]
    from keras_textattn._files import NO_SPACE_ERRNOS

    if error.errno not in NO_SPACE_ERRNOS | {errno.EROFS}:
        return str(error).splitlines()[0]
    written = error.filename or next((getattr(args, flag) for flag in WRITTEN if getattr(args, flag, None)), ".")
    folder = os.path.abspath(os.fsdecode(written))
    while not os.path.isdir(folder):  # a temporary file or folder is gone by now
        folder = os.path.dirname(folder)
    if error.errno == errno.EROFS:
        return f"{folder} is on a read-only file system: write the output somewhere else"
    then = NO_SPACE_THEN.get(args.command, "run the command again (nothing half-written was left)")
    if error.errno == errno.EDQUOT:
        return (
            f"your disk quota is used up on the device that holds {folder}: free some of your space there, then {then}"
        )
    return f"no space left on the device that holds {folder}: free some space there, then {then}"
