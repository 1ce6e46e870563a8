"""Attention maps of trained models: per text (HTML, PNG) and per class (top tokens).

`keras_textattn.explain(model_or_run, texts)` calls `explain`: this package is callable,
because importing it replaces the top-level function of the same name.
"""

import sys
import types

from keras_textattn.explain.attention_maps import Explanation
from keras_textattn.explain.attention_maps import explain
from keras_textattn.explain.attention_maps import load_run
from keras_textattn.explain.attention_maps import top_tokens
from keras_textattn.explain.render import to_html
from keras_textattn.explain.render import to_png
from keras_textattn.explain.render import write_top_tokens

__all__ = ["Explanation", "explain", "load_run", "to_html", "to_png", "top_tokens", "write_top_tokens"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return explain(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
