"""The shared checks: texts as TensorFlow takes them; arguments that are True or False refuse
anything else, before any work.

A string such as "False" or "no" is truthy: before `check_flag`, `overwrite="no"` replaced a
finished run, `header="no"` read the first row as column names and `TextEncoder(lowercase="no")`
lowercased.
"""

import numpy as np
import pytest

from keras_textattn.errors import UserError
from keras_textattn.errors import check_flag
from keras_textattn.errors import check_texts
from keras_textattn.errors import valid_unicode


def test_lone_surrogates_become_what_the_encoder_reads():
    """Bytes that are not UTF-8 in a command-line argument (U+DC80-U+DCFF, as Python keeps them)
    read as those bytes read from a file; JSON's lone "\\ud800" is U+FFFD; text is kept as it is."""
    assert valid_unicode(b"caf\xe9 \xe2\x82!".decode("utf-8", "surrogateescape")) == "caf\ufffd \ufffd!"
    assert valid_unicode("a \ud800 \udcff b") == "a \ufffd \ufffd b"
    assert valid_unicode("naïve 😀") == "naïve 😀"
    assert check_texts("x \ud800") == ["x \ufffd"] and check_texts([b"\xff", "y"]) == [b"\xff", "y"]


def test_check_flag_takes_python_and_numpy_bools():
    assert check_flag("overwrite", np.bool_(True)) is True and check_flag("overwrite", False) is False
    for value in ("False", "no", 0, 1, None):
        with pytest.raises(UserError, match=rf"^overwrite must be True or False; got {value!r}$"):
            check_flag("overwrite", value)


def _calls(tmp_path, data):
    from keras_textattn.datasets import LocalFile
    from keras_textattn.datasets import load_dataset
    from keras_textattn.export import saved_model
    from keras_textattn.export import tflite
    from keras_textattn.inference import evaluate
    from keras_textattn.inference import predict_file
    from keras_textattn.text import TextEncoder
    from keras_textattn.text.vectors import write_word2vec
    from keras_textattn.training import train
    from keras_textattn.tuning import tune

    run, out = str(tmp_path / "run"), str(tmp_path / "out")
    calls = {
        f"train {name}": (name, lambda name=name: train("lama", data, run, **{name: "no"}))
        for name in ("header", "skip_bad_rows", "split_long_sentences", "freeze_embeddings", "shuffle", "overwrite")
    }
    calls.update(
        {
            f"TextEncoder {name}": (f"TextEncoder: {name}", lambda name=name: TextEncoder(**{name: "no"}))
            for name in ("lowercase", "strip_html", "hierarchical", "split_cjk", "split_long_sentences")
        }
    )
    calls.update(
        {
            "LocalFile header": (f"{data}: header", lambda: LocalFile(data, header="no")),
            "LocalFile stream": (f"{data}: stream", lambda: LocalFile(data, stream="no")),
            "load_dataset": ("skip_bad_rows", lambda: load_dataset(LocalFile(data), skip_bad_rows="no")),
            "predict_file": ("overwrite", lambda: predict_file(run, data, out + ".csv", overwrite="no")),
            "evaluate": ("overwrite", lambda: evaluate(run, data, out, overwrite="no")),
            "saved_model": ("overwrite", lambda: saved_model(run, out, overwrite="no")),
            "tflite": ("overwrite", lambda: tflite(run, out, overwrite="no")),
            "write_word2vec lines": ("lines", lambda: write_word2vec(data, out + ".vec", 8, lines="no")),
            "write_word2vec overwrite": ("overwrite", lambda: write_word2vec(data, out + ".vec", 8, overwrite="no")),
            "tune": ("freeze_embeddings", lambda: tune("tuner_configs/lama.yaml", data, out, freeze_embeddings="no")),
        }
    )
    return calls


CALLS = [
    "train header",
    "train skip_bad_rows",
    "train split_long_sentences",
    "train freeze_embeddings",
    "train shuffle",
    "train overwrite",
    "TextEncoder lowercase",
    "TextEncoder strip_html",
    "TextEncoder hierarchical",
    "TextEncoder split_cjk",
    "TextEncoder split_long_sentences",
    "LocalFile header",
    "LocalFile stream",
    "load_dataset",
    "predict_file",
    "evaluate",
    "saved_model",
    "tflite",
    "write_word2vec lines",
    "write_word2vec overwrite",
    "tune",
]


@pytest.mark.parametrize("call", CALLS)
def test_a_flag_given_a_string_is_refused_first(shared_data, tmp_path, call):
    """Each refuses "no" in one line naming the argument, before reading a file or a run (the run
    folder here does not exist, and would be the error were the flag read later)."""
    name, function = _calls(tmp_path, str(shared_data / "trec" / "test.csv.gz"))[call]
    with pytest.raises(UserError, match=rf"^{name} must be True or False; got 'no'$"):
        function()
    assert sorted(_calls(tmp_path, "x.csv")) == sorted(CALLS)
