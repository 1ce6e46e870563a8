"""`python -m keras_textattn_cli`: the same as the `keras-textattn` command."""

import sys

from keras_textattn_cli import main

sys.exit(main())
