"""`python -m keras_textattn_cli`: the same as the `keras-textattn` command."""

from keras_textattn_cli import command_line

command_line()
