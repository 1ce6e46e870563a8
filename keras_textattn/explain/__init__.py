"""Attention maps of trained models: per text (HTML, PNG) and per class (top tokens).

`from keras_textattn.explain import explain`, then `explain(run_folder, texts)`.
"""

from keras_textattn.explain.attention_maps import Explanation
from keras_textattn.explain.attention_maps import explain
from keras_textattn.explain.attention_maps import top_tokens
from keras_textattn.explain.render import to_html
from keras_textattn.explain.render import to_png
from keras_textattn.explain.render import write_top_tokens
from keras_textattn.run_folder import load_run

__all__ = ["Explanation", "explain", "load_run", "to_html", "to_png", "top_tokens", "write_top_tokens"]
