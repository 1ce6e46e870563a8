"""`keras-textattn train|export|tune|explain|predict|evaluate|vectors ...`: the command line.

A package of its own, beside `keras_textattn`: importing `keras_textattn` registers its
layers with Keras, which imports TensorFlow (seconds, and a screen of C++ log lines), so
`--help` and argument errors answer from here before any of that is imported. One module
per subcommand (`add_parser`, and `run`; `prepare` for checks before TensorFlow), sharing
`common`; `main` ties them together.
"""

from keras_textattn_cli.main import build_parser
from keras_textattn_cli.main import command_line
from keras_textattn_cli.main import main

__all__ = ["build_parser", "command_line", "main"]
