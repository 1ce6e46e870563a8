import html.parser
import io
import os
import re
import struct

import numpy as np
import pytest

from keras_textattn.errors import UserError
from keras_textattn.explain import explain
from keras_textattn.explain import to_html
from keras_textattn.explain import to_png
from keras_textattn.explain import top_tokens
from keras_textattn.explain import write_top_tokens
from keras_textattn.models import build_model
from keras_textattn.text import TextEncoder
from keras_textattn_cli import main

TEXTS = [
    "Stocks <b>rallied</b> after the Fed's decision; Nasdaq up 2%.",
    "Zürich's café owners — and Ünïcode fans — cheered. Then they left!",
    "",
]


def _assert_same_explanations(ours, theirs):
    assert [e.label for e in ours] == [e.label for e in theirs]
    for one, other in zip(ours, theirs):
        assert one.probabilities == pytest.approx(other.probabilities, abs=1e-6)
        for maps in ("attention", "sentence_attention", "dimension_attention"):
            assert getattr(one, maps).keys() == getattr(other, maps).keys()
            for name, value in getattr(one, maps).items():
                np.testing.assert_allclose(value, getattr(other, maps)[name], atol=1e-6)


def test_trained_lama_maps_and_offsets(lama_run):
    explanations = explain(lama_run, TEXTS)
    _assert_same_explanations(explain(lama_run, TEXTS, batch_size=2), explanations)  # in batches, the same
    with pytest.raises(ValueError, match="batch-size must be a positive whole number; got 0"):
        explain(lama_run, TEXTS, batch_size=0)
    assert len(explanations) == 3
    from keras_textattn.inference import Classifier

    predicted = Classifier(lama_run).probabilities(TEXTS)  # the same pass gives the maps and the prediction
    for row, explanation in enumerate(explanations):
        np.testing.assert_allclose(list(explanation.probabilities.values()), predicted[row], atol=1e-6)
    for text, explanation in zip(TEXTS, explanations):
        for token in explanation.tokens:  # offsets point at the original text, HTML and Unicode included
            assert text[token["start"] : token["end"]] == token["token"]
        assert explanation.label in explanation.probabilities
        assert sum(explanation.probabilities.values()) == pytest.approx(1.0, abs=1e-5)
        (weights,) = explanation.attention.values()
        assert weights.shape == (4, len(explanation.tokens))  # one row per head
        if explanation.tokens:  # softmax over the real tokens: padded steps got nothing
            np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert [t["token"] for t in explanations[0].tokens][:3] == ["Stocks", "rallied", "after"]
    assert explanations[2].tokens == [] and explanations[2].attention["attention"].shape == (4, 0)
    # Bytes, as check_texts takes them (it failed: 'bytes' object has no attribute 'encode'): read as UTF-8,
    # an invalid byte as U+FFFD, and explained as that string is.
    (raw,), (text,) = explain(lama_run, [TEXTS[0].encode() + b" \xff"]), explain(lama_run, [TEXTS[0] + " \ufffd"])
    assert raw.text == text.text and raw.tokens == text.tokens and raw.probabilities == text.probabilities


def test_trained_hcan_word_and_sentence_maps(hcan_run):
    (explanation,) = explain(hcan_run, [TEXTS[1]])
    text = TEXTS[1]
    assert [text[s["start"] : s["end"]] for s in explanation.sentences] == [
        "Zürich's café owners — and Ünïcode fans — cheered",
        "Then they left",
    ]
    (sentence_weights,) = explanation.sentence_attention.values()
    assert sentence_weights.shape == (4, 2)  # heads x sentences
    np.testing.assert_allclose(sentence_weights.sum(-1), 1.0, rtol=1e-5)
    (word_weights,) = explanation.attention.values()
    assert word_weights.shape == (4, len(explanation.tokens))
    # The word-level target attention is a softmax within each sentence.
    first = sum(token["start"] < explanation.sentences[1]["start"] for token in explanation.tokens)
    assert first == 11
    np.testing.assert_allclose(word_weights[:, :first].sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(word_weights[:, first:].sum(-1), 1.0, rtol=1e-5)
    # One text a model call: the word-level maps (texts x sentences first) come apart as in one call.
    _assert_same_explanations(explain(hcan_run, TEXTS, batch_size=1), explain(hcan_run, TEXTS))


@pytest.mark.parametrize("run_fixture", ["lama_run", "hcan_run"])
def test_a_long_text_explained_in_windows_covers_it_whole(run_fixture, request, capsys):
    """With windows, a text longer than the model reads (LAMA: 64 tokens; HCAN: 6 sentences) is
    explained whole: every token of it, the windows' mean probabilities (what predict answers),
    each map averaged over the windows that read a token; a flat map sums to 1 over the text and
    keeps a window's proportions among tokens only it read; a text that fits is explained as cut."""
    from keras_textattn.datasets.formats import read_labelled_texts
    from keras_textattn.inference import Classifier
    from keras_textattn.run_folder import load_run
    from tests.conftest import ag_news_files

    run = request.getfixturevalue(run_fixture)
    stories = read_labelled_texts(ag_news_files()["test"])[0][:12]
    texts = [". ".join(stories), stories[0]]
    encoder = load_run(run)[1]
    assert encoder.longer_than_read(texts).tolist() == [True, False]
    long, short = explain(run, texts, long_texts="windows")
    _assert_same_explanations([short], explain(run, [stories[0]]))
    np.testing.assert_allclose(
        [list(e.probabilities.values()) for e in (long, short)],
        Classifier(run, long_texts="windows").probabilities(texts),
        atol=1e-5,
    )
    for token in long.tokens:
        assert texts[0][token["start"] : token["end"]] == token["token"] and isinstance(token["start"], int)
    if not encoder.hierarchical:  # HCAN reads a sentence's first words only, in a window too
        assert long.tokens[-1]["end"] == len(texts[0])  # to the end of the text
    assert len(long.tokens) > len(explain(run, texts[:1])[0].tokens)  # more than the cut text's
    pieces, owners, starts = encoder.windows(texts[:1], offsets=True)
    assert len(pieces) > 1 and all(texts[0][s : s + len(p)] == p for p, s in zip(pieces, starts))
    (name, weights), *_ = long.attention.items()
    assert weights.shape[-1] == len(long.tokens)
    if encoder.hierarchical:
        np.testing.assert_allclose(next(iter(long.sentence_attention.values())).sum(-1), 1.0, rtol=1e-5)
        assert len(long.sentences) > encoder.max_sentences  # the sentences of every window
        assert all(any(s["start"] <= t["start"] < s["end"] for s in long.sentences) for t in long.tokens)
        return
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    first = explain(run, pieces[:1])[0]
    only_first = [i for i, t in enumerate(long.tokens) if t["end"] <= starts[1]]  # the second window starts after
    assert len(only_first) >= 2
    ratio = weights[:, only_first] / first.attention[name][:, : len(only_first)]
    np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones_like(ratio), rtol=1e-4)  # one scale per head
    assert main(["explain", "--run", str(run), texts[0], "--long-texts", "windows"]) == 0
    assert long.label in capsys.readouterr().out


@pytest.mark.parametrize("max_sentences, words", [(1, 8), (2, 8), (3, 3)])
def test_hcan_word_maps_at_every_shape(max_sentences, words):
    """HCAN's word-level maps (a row per sentence) and sentence-level maps, told apart also where
    one sentence a text (the shape `train()` chooses for single sentences) makes their rows as
    many as the texts, and where the words and sentences are as many."""
    texts = ["good fine great film", "dull slow bad acting"]
    encoder = TextEncoder(sequence_length=words, max_sentences=max_sentences, hierarchical=True)
    encoder.adapt(texts)
    model = build_model(
        "hcan",
        2,
        vocabulary_size=encoder.vocabulary_size(),
        sequence_length=words,
        max_sentences=max_sentences,
        units=8,
        num_heads=2,
    )
    explanations = explain(model, texts, encoder=encoder)
    for explanation in explanations:
        assert list(explanation.attention) == ["word_target_attention"]
        assert list(explanation.sentence_attention) == ["sentence_target_attention"]
        words_weights = explanation.attention["word_target_attention"]
        assert words_weights.shape == (2, 3 if words == 3 else 4)  # heads x the text's words (3 read of 4)
        np.testing.assert_allclose(words_weights.sum(-1), 1.0, rtol=1e-5)  # one sentence: a softmax over its words
        np.testing.assert_allclose(explanation.sentence_attention["sentence_target_attention"], 1.0, rtol=1e-6)
    table = top_tokens(explanations, min_count=1)
    assert sorted(table) == sorted({e.label for e in explanations}) and all(table.values())


@pytest.mark.parametrize(
    "name, kwargs, rows",
    [
        ("scalable_attention", {"attention_activation": "softmax"}, {"attention": 1}),
        ("dual_axial", {}, {"attention/text": 1, "attention/feature": 1}),
        ("dual_axial", {"bigram_buckets": 16}, {"attention/text": 1, "attention/feature": 1}),  # once crashed
        ("cspan", {"num_queries": 3}, {"multi_query": 3}),
        ("lama", {"num_heads": 2, "use_context": True}, {"attention": 2}),
    ],
)
def test_every_paper_model_is_explained(name, kwargs, rows):
    encoder = TextEncoder(sequence_length=10, bigram_buckets=kwargs.get("bigram_buckets", 0))
    encoder.adapt(TEXTS)
    shape = {"sequence_length": 10}
    model = build_model(name, 2, vocabulary_size=encoder.vocabulary_size(), embedding_dim=8, **shape, **kwargs)
    (explanation,) = explain(model, [TEXTS[0]], encoder=encoder, label_names=["a", "b"])
    assert {k: v.shape for k, v in explanation.attention.items()} == {k: (r, 10) for k, r in rows.items()}
    if name != "dual_axial":
        np.testing.assert_allclose(next(iter(explanation.attention.values())).sum(-1), 1.0, rtol=1e-5)
    else:  # Figure 5: a weight per word and dimension, whose mean is the word's row value
        for key in rows:
            per_dimension = explanation.dimension_attention[key]
            assert per_dimension.shape == (10, 8)
            np.testing.assert_allclose(per_dimension.mean(-1), explanation.attention[key][0], rtol=1e-6)


def _png_size(path):
    with open(path, "rb") as handle:
        header = handle.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and header[12:16] == b"IHDR"
    return struct.unpack(">II", header[16:24])


def test_html_png_and_top_token_tables(lama_run, tmp_path):
    explanations = explain(lama_run, TEXTS)
    page = to_html(explanations)

    class Collector(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.text, self.tags = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            assert tag not in ("script", "link", "img")  # self-contained, nothing external

        def handle_data(self, data):
            self.text.append(data)

    collector = Collector()
    collector.feed(page)
    shown = "".join(collector.text)
    for explanation in explanations:
        for token in explanation.tokens:
            assert token["token"] in shown
    assert collector.tags.count("section") == 3
    to_png(explanations[0], tmp_path / "map.png", width=900, height=300)
    assert _png_size(tmp_path / "map.png") == (900, 300)
    table = top_tokens(explanations * 2, k=3)
    assert set(table) <= {"World", "Sports", "Business", "Sci/Tech", "0", "1", "2", "3"}
    write_top_tokens(table, tmp_path / "top.csv", tmp_path / "top.md")
    assert (tmp_path / "top.csv").read_text().startswith("label,rank,token,score")
    assert (tmp_path / "top.md").read_text().startswith("| label | top attended tokens |")


def test_explain_command(lama_run, tmp_path, capsys):
    code = main(
        [
            "explain",
            "--run",
            str(lama_run),
            TEXTS[0],
            "--html",
            str(tmp_path / "a.html"),
            "--png",
            str(tmp_path / "a.png"),
        ]
    )
    assert code == 0
    assert (tmp_path / "a.html").read_text().startswith("<!DOCTYPE html>")
    assert _png_size(tmp_path / "a.png") == (1200, 400)
    assert main(["explain", "--run", str(tmp_path / "missing"), "x"]) == 2
    assert "is not a finished run folder" in capsys.readouterr().err
    assert main(["explain", "--run", str(lama_run), "--run", str(tmp_path / "missing"), "x"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "explain reads one run; 2 given would be an ensemble" in error[0], error
    with pytest.raises(UserError, match="explain reads one run; 0 given"):
        explain([], ["x"])
    assert (
        explain([lama_run], [TEXTS[0]])[0].probabilities == explain(lama_run, [TEXTS[0]])[0].probabilities
    )  # a list of one
    (tmp_path / "exported").mkdir()  # a SavedModel folder has no attention scores to show
    (tmp_path / "exported" / "saved_model.pb").write_bytes(b"")
    assert main(["explain", "--run", str(tmp_path / "exported"), "x"]) == 2
    assert (
        "is an exported SavedModel, which keeps only the predictions; give the run folder it was exported from"
        in capsys.readouterr().err
    )
    (tmp_path / "exported" / "saved_model.pb").unlink()  # a TFLite folder neither: it was "missing model.keras, ..."
    (tmp_path / "exported" / "model.tflite").write_bytes(b"")
    assert main(["explain", "--run", str(tmp_path / "exported"), "x"]) == 2
    assert (
        "is an exported TFLite model, which keeps only the predictions; give the run folder it was exported from"
        in capsys.readouterr().err
    )


def test_explain_checks_its_files_and_numbers_before_the_work(lama_run, tmp_path, monkeypatch, capsys):
    """Bad numbers and files to write are refused in one line before the run is even read (a
    missing run is not what the line names), and nothing is written; files go whole into
    folders made for them, in the format of their extension, and replace a file only with
    --overwrite."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "existing.html").write_text("mine")
    cases = [
        (["--top", "0"], "top must be a positive whole number; got 0"),
        (["--limit", "0"], "limit must be a positive whole number; got 0"),
        (["--show", "-1"], "show must be a whole number of at least 0; got -1"),
        (["--delimiter", ";"], "--delimiter is for --data FILE, which is not given"),
        # The formats listed are the installed Matplotlib's (3.11 adds .avif and .gif to 3.10's).
        (["--png", "map.txt"], "map.txt: cannot draw a .txt image; give a path ending in "),
        (["--png", "map.txt"], ".pdf, .pgf, .png, .ps, "),
        (["--html", "x.html", "--top-tokens-md", "x.html"], "give each file its own path; got x.html, x.html"),
        (["--html", str(tmp_path)], f"{tmp_path} is a folder; give the path of a file to write"),
        (["--top-tokens-csv", "existing.html"], "existing.html already exists; pass overwrite=True (--overwrite)"),
    ]
    for extra, message in cases:
        assert main(["explain", "--run", "missing", "a text", *extra]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and message in error[0], error
    assert sorted(os.listdir(tmp_path)) == ["existing.html"]

    assert (
        main(
            [
                "explain",
                "--run",
                str(lama_run),
                TEXTS[0],
                TEXTS[1],
                "--html",
                "existing.html",
                "--overwrite",
                "--png",
                "new/heat",
                "--top-tokens-csv",
                "new/deeper/top.csv",
            ]
        )
        == 0
    )
    assert "Wrote existing.html, new/heat, new/deeper/top.csv" in capsys.readouterr().out
    assert (tmp_path / "existing.html").read_text().startswith("<!DOCTYPE html>")
    assert _png_size(tmp_path / "new" / "heat") == (1200, 400)  # no extension: a PNG, at the path given
    assert (tmp_path / "new" / "deeper" / "top.csv").read_text().startswith("label,rank,token,score")
    assert main(["explain", "--run", str(lama_run), TEXTS[0], "--png", "heat.JPG"]) == 0
    assert (tmp_path / "heat.JPG").read_bytes()[:3] == b"\xff\xd8\xff"  # what the extension says: a JPEG
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]  # no temporary file left

    explanations = explain(lama_run, TEXTS[:1])
    with pytest.raises(UserError, match="cannot draw a .txt image"):
        to_png(explanations[0], tmp_path / "map.txt")
    with pytest.raises(UserError, match=r"k \(--top\) must be a positive whole number; got -3"):
        top_tokens(explanations, -3)
    assert not (tmp_path / "map.txt").exists()


def test_explain_reads_files_with_the_shared_flags(lama_run, shared_data, tmp_path, monkeypatch, capsys):
    """The headerless AG News test file (class, title, description), read with the flags every
    file-reading subcommand shares; the printed lines say what they show, and how many."""
    code = main(
        [
            "explain",
            "--run",
            str(lama_run),
            "--data",
            str(shared_data / "ag_news" / "test.csv.gz"),
            "--no-header",
            "--text-column",
            "1",
            "--text-column",
            "2",
            "--limit",
            "30",
            "--show",
            "3",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].startswith("predicted label (its probability): the 5 most attended tokens")
    assert len(lines) == 5 and lines[-1].startswith("(3 of 30 texts shown")
    assert lines[1].split(" (")[0] in {"World", "Sports", "Business", "Sci/Tech"}
    # A file to write that is the file read is refused (with --overwrite it replaced the texts).
    (tmp_path / "read.csv").write_text("text\nstocks fell\n")
    assert (
        main(
            [
                "explain",
                "--run",
                str(lama_run),
                "--data",
                str(tmp_path / "read.csv"),
                "--html",
                str(tmp_path / "read.csv"),
                "--overwrite",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.strip() == (
        f"keras-textattn: error: {tmp_path / 'read.csv'} is a file this command "
        "reads (--data); give another path to write"
    )
    assert (tmp_path / "read.csv").read_text() == "text\nstocks fell\n"
    # A file of a header alone, and empty standard input, say so (both said "give texts to explain").
    (tmp_path / "header.csv").write_text("text\n")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    for arguments, message in (
        (["--data", str(tmp_path / "header.csv")], f"{tmp_path / 'header.csv'}: no data rows"),
        (["-"], "standard input held no texts (one per line)"),
    ):
        assert main(["explain", "--run", str(lama_run), *arguments]) == 2
        assert capsys.readouterr().err.strip() == f"keras-textattn: error: {message}"


def test_explain_takes_a_run_or_a_keras_model():
    """An int was "Give the model's `encoder`", as if it were a model."""
    with pytest.raises(UserError, match="^explain takes a run folder or a Keras classifier; got int$"):
        explain(3, ["a"])


def test_label_names_name_each_class_once_and_nan_is_no_answer():
    """With a model, one name per class: three names for two classes were cut to two, one name
    was an IndexError after the work, and a string was read as its letters. A run folder names
    its classes itself: names given with one were ignored, silently."""
    encoder = TextEncoder(sequence_length=10)
    encoder.adapt(TEXTS)
    model = build_model(
        "scalable_attention", 2, vocabulary_size=encoder.vocabulary_size(), embedding_dim=8, sequence_length=10
    )
    (explanation,) = explain(model, [TEXTS[0]], encoder=encoder, label_names=["no", "yes"])
    assert sorted(explanation.probabilities) == ["no", "yes"] and explanation.label in {"no", "yes"}
    for names, message in (
        (
            ["no", "yes", "maybe"],
            "explain: label_names name the model's 2 classes, one each; got 3: ['no', 'yes', 'maybe']",
        ),
        (["yes"], "two or more; got ['yes']"),
        ("ny", "a list of names, one per class; got the string 'ny'"),
    ):
        with pytest.raises(UserError, match=re.escape(message)):
            explain(model, [TEXTS[0]], encoder=encoder, label_names=names)
    with pytest.raises(UserError, match=re.escape("a run folder names its classes (labels.json); label_names is for")):
        explain("any-run-folder", [TEXTS[0]], label_names=["no", "yes"])
    # Weights that are not numbers (a run that diverged) were explained as "0 (nan)", every weight nan.
    model.set_weights([np.full_like(weights, np.nan) for weights in model.get_weights()])
    with pytest.raises(UserError, match=re.escape(f"Model {model.name!r} gives no probabilities (NaN) for 1 of the 1")):
        explain(model, [TEXTS[0]], encoder=encoder)


def test_explain_is_a_plain_module(lama_run):
    import keras_textattn
    import keras_textattn.explain as module

    assert type(module).__name__ == "module" and keras_textattn.explain is module
    (explanation,) = module.explain(lama_run, ["Oil prices rose."])
    assert [t["token"] for t in explanation.tokens] == ["Oil", "prices", "rose", "."]
