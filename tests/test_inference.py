"""predict and evaluate on a trained run (the shared LAMA run of tests/conftest.py) and its SavedModel."""

import csv
import gzip
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf
from sklearn import metrics as sk

from keras_textattn import inference
from keras_textattn.datasets.formats import read_labelled_texts
from keras_textattn.errors import UserError
from keras_textattn.export import saved_model
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import load_run
from keras_textattn_cli import main
from tests.conftest import ag_news_files
from tests.conftest import relabelled_copy


@pytest.fixture(scope="module")
def test_rows(shared_data):
    """The first 600 rows of AG News's official test file (label ids 0-3, after the file's offset)."""
    file = ag_news_files()["test"]
    texts, labels, _, _ = read_labelled_texts(file)
    return texts[:600], [int(label) for label in labels[:600]]


def _write_csv(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def test_predict_file_equals_the_model_row_for_row(lama_run, test_rows, tmp_path):
    """Ids and order kept; the labels and probabilities are the model's own; top-k sorted."""
    texts, _ = test_rows
    data = tmp_path / "texts.csv"
    _write_csv(data, ["id", "text"], [[f"doc-{i}", text] for i, text in enumerate(texts)])
    report = inference.predict_file(lama_run, str(data), str(tmp_path / "out.csv"), top_k=3, batch_size=64, verbose=0)
    assert report["rows"] == len(texts)
    model, encoder, names = load_run(lama_run)
    expected = np.asarray(model.predict(encoder(np.array(texts, dtype=object)), verbose=0))
    with open(tmp_path / "out.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["id", "label", "probability", "label_2", "probability_2", "label_3", "probability_3"]
    assert [row["id"] for row in rows] == [f"doc-{i}" for i in range(len(texts))]
    assert [row["label"] for row in rows] == [names[i] for i in expected.argmax(-1)]
    np.testing.assert_allclose([float(row["probability"]) for row in rows], expected.max(-1), atol=2e-6)
    second = np.sort(expected, -1)[:, -2]
    np.testing.assert_allclose([float(row["probability_2"]) for row in rows], second, atol=2e-6)


def test_one_string_is_one_text_and_a_non_string_is_named(lama_run):
    """`Classifier` and `explain` read one string as one text (it was read as a list of its
    characters: one row per character); a list holding None or a number is a one-line
    `UserError` naming the item (it was TensorFlow's error from inside the model call)."""
    from keras_textattn.explain import explain

    classifier = inference.Classifier(lama_run)
    text = "stocks fell sharply on wall street"
    one = classifier.probabilities(text)
    assert one.shape == (1, 4)
    np.testing.assert_allclose(one, classifier.probabilities([text]), atol=1e-6)
    np.testing.assert_allclose(
        classifier.probabilities(np.array([text, text.encode()], dtype=object)),
        classifier.probabilities((t for t in [text, text])),
        atol=1e-6,
    )
    assert classifier.predict(text) == classifier.predict([text]) == inference.predict(lama_run, text)
    assert len(classifier.predict(text)) == 1
    assert len(explain(lama_run, text)) == 1
    for texts, message in (
        ([text, None], "texts must be strings; item 1 is None (NoneType)"),
        ([3.5], "texts must be strings; item 0 is 3.5 (float)"),
        (42, "texts must be a string or a list of strings; got int"),
    ):
        for call in (classifier.probabilities, classifier.predict, lambda texts: explain(lama_run, texts)):
            with pytest.raises(UserError, match=re.escape(message)):
                call(texts)


def test_saved_model_predicts_as_the_run_folder(lama_run, tmp_path):
    """The JSONL output of an exported SavedModel equals the run folder's; empty and invalid
    UTF-8 texts get a prediction too."""
    export = tmp_path / "export"
    saved_model(lama_run, str(export))
    data = tmp_path / "texts.csv.gz"
    with gzip.open(data, "wb") as handle:
        handle.write(b'text\nstocks fell sharply\n""\nbad \xff\xfe bytes\nthe team won the final\n')
    outputs = {}
    for name, source in (("run", lama_run), ("saved", str(export))):
        inference.predict_file(source, str(data), str(tmp_path / f"{name}.jsonl"), top_k=4, verbose=0)
        with open(tmp_path / f"{name}.jsonl", encoding="utf-8") as handle:
            outputs[name] = [json.loads(line) for line in handle]
    assert len(outputs["run"]) == 4 and [r["label"] for r in outputs["run"]] == [r["label"] for r in outputs["saved"]]
    np.testing.assert_allclose(
        [p for r in outputs["run"] for _, p in r["top"]], [p for r in outputs["saved"] for _, p in r["top"]], atol=1e-5
    )
    assert all(abs(sum(p for _, p in r["top"]) - 1) < 1e-4 for r in outputs["run"])
    with pytest.raises(UserError, match="export is a SavedModel, which tokenises its texts itself: export it with"):
        inference.Classifier([lama_run, export], long_texts="windows")
    # The model file in either folder stands for its folder (a .tflite file already did).
    expected = inference.predict(lama_run, ["stocks fell sharply"], top_k=4)[0]["top"]
    for model_file in (os.path.join(lama_run, "model.keras"), str(export / "saved_model.pb")):
        top = inference.predict(model_file, ["stocks fell sharply"], top_k=4)[0]["top"]
        assert [label for label, _ in top] == [label for label, _ in expected]
        np.testing.assert_allclose([p for _, p in top], [p for _, p in expected], atol=1e-5)
    # A SavedModel of someone else's (no class names beside it) is named as such, not as "an older version".
    foreign = tf.Module()
    foreign.serve = tf.function(
        lambda text: {"probabilities": tf.ones([tf.size(text), 2]) / 2},
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(foreign, str(tmp_path / "foreign"), signatures={"serving_default": foreign.serve})
    with pytest.raises(
        RunError,
        match=re.escape(
            f"{tmp_path / 'foreign'} has no assets.extra/labels.json: it is not an "
            "export of keras-textattn, or one of an older version; export the run "
            "again (keras-textattn export)"
        ),
    ):
        inference.Classifier(tmp_path / "foreign")


def test_tflite_folder_predicts_and_evaluates_as_the_device_would(lama_run, test_rows, tmp_path):
    """A TFLite export runs in the LiteRT interpreter on the client tokenizer's ids: float gives the
    run folder's probabilities (hostile texts included), dynamic quantisation is scored on the
    same rows, which is what a user checks before shipping it; beside a run folder it is an
    ensemble member, its columns matched by name."""
    from keras_textattn.export import tflite

    texts, labels = test_rows
    texts = texts[:300] + ["", "\x00 <b>NUL</b> and tags", "oil " * 5000]
    expected = inference.Classifier(lama_run).probabilities(texts)  # 303 texts: two model calls of at most 256
    np.testing.assert_allclose(inference.Classifier(lama_run).probabilities(texts, batch_size=500), expected, atol=1e-6)
    with pytest.raises(UserError, match="batch-size must be a positive whole number; got 0"):
        inference.Classifier(lama_run).probabilities(texts, batch_size=0)
    for quantization in (None, "dynamic"):
        folder = tmp_path / f"tflite-{quantization}"
        tflite(lama_run, folder, quantization=quantization)
        classifier = inference.Classifier(folder / "model.tflite")  # the file or its folder
        assert (
            classifier.label_names
            == inference.Classifier(folder).label_names
            == ["World", "Sports", "Business", "Sci/Tech"]
        )
        predicted = classifier.probabilities(texts)
        assert predicted.shape == expected.shape and np.all(np.isfinite(predicted))
        if quantization is None:
            np.testing.assert_allclose(predicted, expected, atol=1e-4)
            floats = predicted
            # A long text read in windows of the client's ids, one interpreter call each, as the run reads it.
            long = [" ".join(texts[:12]), texts[0], "oil " * 100]
            on_device = inference.Classifier(folder, long_texts="windows", stride=16)
            np.testing.assert_allclose(
                on_device.probabilities(long),
                inference.Classifier(lama_run, long_texts="windows", stride=16).probabilities(long),
                atol=1e-4,
            )
            assert on_device.longer_than_read(long) == 2
        assert np.mean(predicted.argmax(-1) == expected.argmax(-1)) >= 0.98
    # From the command line, as quiet as a run folder: LiteRT's native INFO line at the first call is not shown.
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_textattn_cli",
            "predict",
            "--run",
            str(tmp_path / "tflite-None"),
            "stocks fell sharply on wall street",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0 and shown.stderr == "" and shown.stdout.startswith("Business "), shown
    # An ensemble as a device runs one (the docs' guide "Export and serving"): a TFLite folder beside a run whose
    # classes are named in reverse; lined up by name through labels.json, the mean is this.
    reversed_run = relabelled_copy(lama_run, tmp_path / "reversed", classifier.label_names[::-1])
    ensemble = inference.Classifier([tmp_path / "tflite-None", reversed_run])
    np.testing.assert_allclose(ensemble.probabilities(texts), (floats + expected[:, ::-1]) / 2, atol=1e-6)
    data = tmp_path / "test.csv"
    _write_csv(data, ["label", "text"], zip(labels[:300], texts[:300]))
    scores = {
        name: inference.evaluate(source, str(data), str(tmp_path / name))["accuracy"]
        for name, source in (("run", lama_run), ("int8", str(tmp_path / "tflite-dynamic")))
    }
    assert abs(scores["run"] - scores["int8"]) <= 0.02 and scores["run"] > 0.5, scores
    # A damaged export is named, file and reason, in one line (it was JSON's or LiteRT's traceback).
    damages = {"encoder.json": b"{", "labels.json": b"[", "model.tflite": b"TFL3 cut", "vocabulary.txt": None}
    for name, content in damages.items():
        damaged = tmp_path / f"damaged-{name}"
        shutil.copytree(tmp_path / "tflite-None", damaged)
        (damaged / name).unlink() if content is None else (damaged / name).write_bytes(content)
        with pytest.raises(
            RunError,
            match=rf"damaged-{re.escape(name)}: .*{re.escape(name)}.* cannot be read \(.+\); "
            "export the run again",
        ):
            inference.Classifier(damaged)


def test_predict_cli_texts_and_bad_input(lama_run, tmp_path, capsys):
    assert main(["predict", "--run", str(lama_run), "--top-k", "2", "stocks fell sharply on wall street"]) == 0
    assert capsys.readouterr().out.startswith("Business ")
    cases = [
        (["--data", str(tmp_path / "none.csv"), "--output", str(tmp_path / "o.csv")], "Data file not found"),
        (
            ["--data", str(tmp_path / "t.csv"), "--output", str(tmp_path / "o.csv"), "--text-column", "body"],
            "no column 'body'",
        ),
        (["--data", str(tmp_path / "t.csv")], "--data needs --output"),
        ([], "give texts to label (- reads them from standard input, one per line), or --data FILE"),
        (["some text", "--data", str(tmp_path / "t.csv"), "--output", str(tmp_path / "o.csv")], "not both"),
        (["some text", "--batch-size", "0"], "batch-size must be a positive whole number; got 0"),
        # Options of --data without it were ignored: `- --output o.csv` printed and wrote nothing.
        (
            ["some text", "--output", str(tmp_path / "o.csv")],
            "--output is for --data FILE, which is not given (texts given here are printed; > FILE keeps them)",
        ),
        (["-", "--text-column", "body", "--no-header"], "--text-column, --no-header are for --data FILE"),
        (["--data", str(tmp_path / "t.csv"), "--output", str(tmp_path / "o.txt")], "must end in .csv or .jsonl"),
        # With --overwrite the predictions replaced the texts they were made from.
        (
            ["--data", str(tmp_path / "t.csv"), "--output", str(tmp_path / "t.csv"), "--overwrite"],
            f"{tmp_path / 't.csv'} is a file this command reads (--data); give another path to write",
        ),
        (
            ["--data", str(tmp_path / "t.csv"), "--output", str(tmp_path / "o.csv"), "--batch-size", "0"],
            "batch-size must be a positive whole number; got 0",
        ),
        (
            ["--data", str(tmp_path / "t.csv"), "--output", str(tmp_path / "o.csv"), "--top-k", "0"],
            "top-k must be a positive whole number; got 0",
        ),
        (
            ["--data", str(tmp_path / "t.csv"), "--output", str(tmp_path / "folder.csv"), "--overwrite"],
            "folder.csv is a folder; give the path of a file to write",
        ),
    ]
    _write_csv(tmp_path / "t.csv", ["text"], [["a"]])
    (tmp_path / "folder.csv").mkdir()
    for extra, message in cases:
        capsys.readouterr()
        assert main(["predict", "--run", str(lama_run), *extra]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and message in error[0], error
        assert not os.path.exists(tmp_path / "o.csv")
    assert (tmp_path / "t.csv").read_text() == "text\na\n"


def test_predict_cli_reads_standard_input_in_batches(lama_run, monkeypatch, capsys):
    """`-` labels each line of standard input (in batches of --batch-size, as the lines come);
    bytes that are not UTF-8 are replaced, an empty line is labelled like an empty text."""
    lines = [b"stocks fell sharply on wall street", b"the team won the cup \xff\xfe final", b"", b"new chip from intel"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n".join(lines) + b"\r\n")))
    assert main(["predict", "--run", str(lama_run), "--batch-size", "3", "-"]) == 0
    from_stdin = capsys.readouterr().out.splitlines()
    texts = [line.decode("utf-8", errors="replace") for line in lines]
    assert main(["predict", "--run", str(lama_run), *texts]) == 0
    assert from_stdin == capsys.readouterr().out.splitlines()
    assert len(from_stdin) == 4 and from_stdin[0].startswith("Business ") and "\ufffd" in from_stdin[1]
    # The same bytes as arguments: Python keeps them as lone surrogates (U+DCFF), which TensorFlow
    # refused ("Error converting unicode string") and the line printed as '\udcff'.
    assert main(["predict", "--run", str(lama_run), *map(os.fsdecode, lines)]) == 0
    assert from_stdin == capsys.readouterr().out.splitlines()
    # The Python API reads any lone surrogate (JSON's "\ud800" too) as U+FFFD.
    classifier = inference.Classifier(lama_run)
    np.testing.assert_array_equal(
        classifier.probabilities(["the cup \udcff", "the cup \ud800"]), classifier.probabilities(["the cup \ufffd"] * 2)
    )


def test_a_killed_predict_leaves_no_output(lama_run, test_rows, tmp_path):
    texts, _ = test_rows
    data = tmp_path / "big.csv"
    _write_csv(data, ["text"], [[text] for text in texts * 40])  # 24,000 rows
    output = tmp_path / "out.csv"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "keras_textattn_cli",
            "predict",
            "--run",
            str(lama_run),
            "--data",
            str(data),
            "--output",
            str(output),
            "--batch-size",
            "32",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline, shown = time.time() + 120, ""
    while time.time() < deadline and "predicted" not in shown and process.poll() is None:
        shown += process.stderr.read(10)
    assert "predicted" in shown and process.poll() is None, shown[-500:]  # killed mid-way
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not output.exists()
    # The next predict to that output removes what the killed one left, and completes.
    data.write_text("text\nstocks fell\n")
    assert main(["predict", "--run", str(lama_run), "--data", str(data), "--output", str(output), "--quiet"]) == 0
    assert len(output.read_text().splitlines()) == 2
    assert sorted(os.listdir(tmp_path)) == ["big.csv", "out.csv"]


def test_evaluate_equals_scikit_learn(lama_run, test_rows, tmp_path):
    """AG News's test rows with labels 1-4 (--label-offset 1): the report's numbers are
    scikit-learn's on the model's own predictions; the confusion PNG and report.md are written."""
    texts, labels = test_rows
    data = tmp_path / "test.csv"
    _write_csv(data, ["label", "text"], zip([label + 1 for label in labels], texts))  # AG's own 1-4
    result = inference.evaluate(lama_run, str(data), str(tmp_path / "report"), label_offset=1)
    model, encoder, names = load_run(lama_run)
    predicted = np.asarray(model.predict(encoder(np.array(texts, dtype=object)), verbose=0)).argmax(-1)
    truth = np.array(labels)
    assert result["accuracy"] == pytest.approx(sk.accuracy_score(truth, predicted))
    assert result["macro_f1"] == pytest.approx(sk.f1_score(truth, predicted, average="macro"))
    assert result["weighted_f1"] == pytest.approx(sk.f1_score(truth, predicted, average="weighted"))
    assert result["confusion_matrix"] == sk.confusion_matrix(truth, predicted).tolist()
    np.testing.assert_allclose(
        [result["per_class"][n]["recall"] for n in names], sk.recall_score(truth, predicted, average=None)
    )
    files = sorted(os.listdir(tmp_path / "report"))
    assert files == ["confusion.png", "metrics.json", "report.md"]
    report = (tmp_path / "report" / "report.md").read_text()
    assert f"Accuracy **{result['accuracy']:.4f}**" in report
    assert f"The 20 most confident of the {np.sum(predicted != truth):,} mistakes:" in report
    assert "members" not in result and "The runs alone" not in report  # one run: no per-run table
    with open(tmp_path / "report" / "metrics.json") as handle:
        mistakes = json.load(handle)["confident_mistakes"]
    assert len(mistakes) == 20 and all(m["true"] != m["predicted"] for m in mistakes)
    assert [m["probability"] for m in mistakes] == sorted((m["probability"] for m in mistakes), reverse=True)
    from PIL import Image

    with Image.open(tmp_path / "report" / "confusion.png") as image:
        colours = np.unique(np.asarray(image.convert("RGB")).reshape(-1, 3), axis=0)
        assert image.size[0] > 300 and len(colours) > 20  # a heatmap, not a blank

    # --overwrite replaces an earlier report, never a folder of other files.
    assert inference.evaluate(lama_run, str(data), str(tmp_path / "report"), label_offset=1, overwrite=True) == result
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.md").write_text("mine")
    with pytest.raises(UserError, match="mine holds notes.md, which this command does not write"):
        inference.evaluate(lama_run, str(data), str(tmp_path / "mine"), label_offset=1, overwrite=True)
    assert os.listdir(tmp_path / "mine") == ["notes.md"]
    with pytest.raises(UserError, match="mistakes must be a whole number of at least 0; got -1"):
        inference.evaluate(lama_run, str(data), str(tmp_path / "other"), mistakes=-1)
    inference.evaluate(lama_run, str(data), str(tmp_path / "none"), label_offset=1, mistakes=0)
    assert "mistakes" not in (tmp_path / "none" / "report.md").read_text()  # asked for none: no empty table


def test_evaluate_scores_only_the_classes_a_file_has(lama_run, test_rows, tmp_path):
    """A file of the rows the model puts in two of AG News's four classes, labelled with its own
    predictions: accuracy and macro F1 1.0; the other two classes have no precision, recall or
    F1 (null in metrics.json, "–" in report.md), not 0."""
    texts, _ = test_rows
    model, encoder, names = load_run(lama_run)
    predicted = np.asarray(model.predict(encoder(np.array(texts, dtype=object)), verbose=0)).argmax(-1)
    two = np.bincount(predicted, minlength=len(names)).argsort()[-2:]
    kept = [(names[label], text) for label, text in zip(predicted, texts) if label in two]
    data = tmp_path / "two.csv"
    _write_csv(data, ["label", "text"], kept)
    result = inference.evaluate(lama_run, str(data), str(tmp_path / "report"))
    assert (result["accuracy"], result["macro_f1"], result["weighted_f1"]) == (1.0, 1.0, 1.0)
    absent = [name for index, name in enumerate(names) if index not in two]
    assert all(
        result["per_class"][name] == {"precision": None, "recall": None, "f1": None, "support": 0} for name in absent
    )
    report = (tmp_path / "report" / "report.md").read_text()
    assert all(f"| {name} | – | – | – | 0 |" in report for name in absent)
    assert all(f"| {names[index]} | 1.0000 | 1.0000 | 1.0000 |" in report for index in two)
    assert report.endswith(
        "\nNo mistakes: every row is labelled right.\n"
    )  # not "The 0 most confident" and a bare table


def test_chinese_class_names_are_drawn_in_the_confusion_png(cjk_font, tmp_path):
    """Two confusion matrices that differ only in a Chinese class name differ in pixels (with
    DejaVu Sans alone both names were the same boxes) and only in the names' places."""
    from PIL import Image

    images = []
    for index, names in enumerate((["正面", "负面"], ["正面", "反面"])):
        inference._confusion_png(np.array([[5, 1], [2, 7]]), names, tmp_path / f"{index}.png")
        with Image.open(tmp_path / f"{index}.png") as image:
            images.append(np.asarray(image.convert("RGB"), "int32"))
    changed = np.any(np.abs(images[0] - images[1]) > 25, axis=-1)
    assert changed.sum() > 20, changed.sum()
    # The matrix's cells and their counts (its axes span about rows 20-325, columns 97-403): unchanged.
    # The names are outside it, and so is where Matplotlib 3.10 draws them a few pixels wider than 3.11.
    inside = changed[25:325, 100:400]
    assert not inside.any()


def test_jsonl_and_tfrecord_files_are_read_as_training_reads_them(lama_run, test_rows, tmp_path):
    """predict and evaluate read JSONL and TFRecord (plain or gzip) by key, as `train` streams them:
    the same scores as the CSV file of the same rows, ids carried over, bad rows named."""
    texts, labels = test_rows
    _write_csv(tmp_path / "test.csv", ["id", "label", "text"], zip(range(300), labels[:300], texts[:300]))
    with open(tmp_path / "test.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(
            json.dumps({"id": i, "label": label, "text": text}) + "\n\n"  # blank lines are no rows
            for i, (label, text) in enumerate(zip(labels[:300], texts[:300]))
        )
    with tf.io.TFRecordWriter(str(tmp_path / "test.tfrecord.gz"), options="GZIP") as writer:
        for label, text in zip(labels[:300], texts[:300]):
            writer.write(
                tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "body": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()])),
                            "class": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                        }
                    )
                ).SerializeToString()
            )
    expected = inference.evaluate(lama_run, str(tmp_path / "test.csv"), str(tmp_path / "csv"))
    for name, columns in (("test.jsonl", {}), ("test.tfrecord.gz", {"text_column": "body", "label_column": "class"})):
        result = inference.evaluate(lama_run, str(tmp_path / name), str(tmp_path / name.split(".")[1]), **columns)
        assert (result["rows"], result["accuracy"], result["confusion_matrix"]) == (
            300,
            expected["accuracy"],
            expected["confusion_matrix"],
        ), name
    inference.predict_file(lama_run, str(tmp_path / "test.jsonl"), str(tmp_path / "jsonl.csv"), verbose=0)
    inference.predict_file(lama_run, str(tmp_path / "test.csv"), str(tmp_path / "csv.csv"), verbose=0)
    assert (tmp_path / "jsonl.csv").read_text() == (tmp_path / "csv.csv").read_text()
    assert (tmp_path / "jsonl.csv").read_text().startswith("id,label,probability\n0,")
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\n{"text": "no end"\n')
    (tmp_path / "list.jsonl").write_text('{"text": "fine"}\n[1, 2]\n')
    cases = [
        ("bad.jsonl", {}, "bad.jsonl, row 2: not valid JSON"),
        ("list.jsonl", {}, "list.jsonl, row 2: expected a JSON object, found list"),
        ("test.jsonl", {"text_column": "body"}, "test.jsonl, row 1: no key 'body'; keys: ['id', 'label', 'text']"),
        ("test.jsonl", {"text_column": 2}, "its rows are read by key; give a column name, not the index 2"),
    ]
    for name, columns, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            inference.predict_file(lama_run, str(tmp_path / name), str(tmp_path / "out.csv"), verbose=0, **columns)
        assert not (tmp_path / "out.csv").exists()


def test_shards_are_read_as_train_reads_them(lama_run, test_rows, tmp_path, capsys):
    """A glob or a folder of shards, which `train` streams, is read by predict, evaluate and
    explain too, shard after shard in sorted order (it was "Data file not found")."""
    texts, labels = test_rows
    rows = list(zip(range(300), labels[:300], texts[:300]))
    _write_csv(tmp_path / "whole.csv", ["id", "label", "text"], rows)
    (tmp_path / "shards").mkdir()
    for index in range(3):  # written out of order; read sorted
        _write_csv(
            tmp_path / "shards" / f"part-{2 - index}.csv",
            ["id", "label", "text"],
            rows[(2 - index) * 100 : (3 - index) * 100],
        )
    expected = inference.evaluate(lama_run, str(tmp_path / "whole.csv"), str(tmp_path / "whole"))
    inference.predict_file(lama_run, str(tmp_path / "whole.csv"), str(tmp_path / "whole.jsonl"), verbose=0)
    for name, data in (("folder", tmp_path / "shards"), ("glob", tmp_path / "shards" / "part-*.csv")):
        result = inference.evaluate(lama_run, str(data), str(tmp_path / name))
        assert (result["rows"], result["accuracy"], result["confusion_matrix"]) == (
            300,
            expected["accuracy"],
            expected["confusion_matrix"],
        ), name
        inference.predict_file(lama_run, str(data), str(tmp_path / f"{name}.jsonl"), verbose=0)
        assert (tmp_path / f"{name}.jsonl").read_text() == (tmp_path / "whole.jsonl").read_text(), name
    assert (
        main(["explain", "--run", str(lama_run), "--data", str(tmp_path / "shards"), "--limit", "150", "--show", "0"])
        == 0
    )
    assert "(0 of 150 texts shown" in capsys.readouterr().out  # the limit reaches into the second shard


def test_every_output_row_has_the_same_columns(lama_run, tmp_path):
    """A file of no rows gives a CSV of its header (it was an empty file, which CSV readers refuse),
    with the id column when the input has one; shards of which only some have ids are refused
    before anything is written (the CSV had rows of two widths)."""
    for name, header in (("empty", ["text"]), ("ids_only", ["id", "text"])):
        _write_csv(tmp_path / f"{name}.csv", header, [])
        report = inference.predict_file(
            lama_run, str(tmp_path / f"{name}.csv"), str(tmp_path / f"{name}_out.csv"), top_k=2, verbose=0
        )
        assert report["rows"] == 0
        assert (tmp_path / f"{name}_out.csv").read_text().splitlines() == [
            ("id," if "id" in header else "") + "label,probability,label_2,probability_2"
        ]
    (tmp_path / "shards").mkdir()
    _write_csv(tmp_path / "shards" / "a.csv", ["id", "text"], [["7", "stocks fell"]])
    _write_csv(tmp_path / "shards" / "b.csv", ["text"], [["the match was won"]])
    for output in ("out.csv", "out.jsonl"):
        with pytest.raises(UserError, match=r"a\.csv has an id column and .*b\.csv has none.*--id-column"):
            inference.predict_file(lama_run, str(tmp_path / "shards"), str(tmp_path / output), verbose=0)
        assert not (tmp_path / output).exists()
    inference.predict_file(lama_run, str(tmp_path / "shards"), str(tmp_path / "out.csv"), id_column="text", verbose=0)
    with open(tmp_path / "out.csv", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert [len(row) for row in rows] == [3, 3, 3] and [row[0] for row in rows] == [
        "id",
        "stocks fell",
        "the match was won",
    ]


def test_report_keeps_one_table_row_per_mistake(lama_run, test_rows, tmp_path):
    """Texts with line breaks of every kind (IMDB's reviews hold U+0085), pipes, backslashes and HTML:
    each mistake stays one row of four cells, as a Markdown viewer (or str.splitlines) reads it."""
    texts, labels = test_rows
    odd = [f"it's | a\\ b\r\nsecond\x85third\u2028<br />end {text}" for text in texts[:40]]  # before the cut at 300
    _write_csv(tmp_path / "test.csv", ["label", "text"], zip([(label + 1) % 4 for label in labels[:40]], odd))
    inference.evaluate(lama_run, str(tmp_path / "test.csv"), str(tmp_path / "report"))
    lines = (tmp_path / "report" / "report.md").read_text(encoding="utf-8").splitlines()
    rows = lines[lines.index("| probability | true | predicted | text |") + 2 :]
    assert len(rows) == 20 and all(row.count("|") == 5 for row in rows)
    assert all(row.split(" | ")[3].startswith("it's &#124; a&#92; b second third &lt;br /&gt;end ") for row in rows)


def test_evaluate_refuses_labels_the_model_never_saw(lama_run, tmp_path, capsys):
    _write_csv(tmp_path / "test.csv", ["label", "text"], [["Weather", "rain again"], ["Sports", "goal"]])
    assert (
        main(
            [
                "evaluate",
                "--run",
                str(lama_run),
                "--data",
                str(tmp_path / "test.csv"),
                "--output",
                str(tmp_path / "report"),
            ]
        )
        == 2
    )
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "labels the model never saw: ['Weather']" in error[0]
    assert not os.path.exists(tmp_path / "report")


def test_evaluate_reads_a_headerless_file_by_column_index(lama_run, test_rows, tmp_path, capsys):
    """`--label-column 0` is the first column (it was read as "not given", then as the name
    'label' that a headerless file cannot have)."""
    texts, labels = test_rows
    _write_csv(tmp_path / "with-header.csv", ["label", "text"], zip(labels[:100], texts[:100]))
    with open(tmp_path / "headerless.csv", "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(zip(labels[:100], texts[:100]))
    expected = inference.evaluate(lama_run, str(tmp_path / "with-header.csv"), str(tmp_path / "expected"))
    assert (
        main(
            [
                "evaluate",
                "--run",
                str(lama_run),
                "--data",
                str(tmp_path / "headerless.csv"),
                "--no-header",
                "--label-column",
                "0",
                "--text-column",
                "1",
                "--output",
                str(tmp_path / "report"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "report" / "metrics.json").read_text())["accuracy"] == expected["accuracy"]
    # `eval`, the developers' guide's name for it, is `evaluate` (it was "invalid choice: 'eval'").
    assert (
        main(
            [
                "eval",
                "--run",
                str(lama_run),
                "--data",
                str(tmp_path / "with-header.csv"),
                "--output",
                str(tmp_path / "eval"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["accuracy"] == expected["accuracy"]


def test_an_ensemble_averages_its_members_by_class_name(lama_run, test_rows, tmp_path, capsys):
    """`--run A --run B`: the mean of the members' probabilities, each member's columns matched
    to the first's by class name; members of other classes, or none, are refused in one line."""
    texts, labels = test_rows
    names = json.loads((lama_run / "labels.json").read_text())
    # The same model with its columns named in reverse order: lined up by name, its probabilities
    # for class i are the model's for class 3 - i, so the mean is (p + p[:, ::-1]) / 2, not p.
    reversed_run = relabelled_copy(lama_run, tmp_path / "reversed", names[::-1])
    model, encoder, _ = load_run(lama_run)
    p = np.asarray(model.predict(encoder(np.array(texts[:64], dtype=object)), verbose=0))
    ensemble = inference.Classifier([lama_run, str(reversed_run)])
    assert ensemble.label_names == names
    np.testing.assert_allclose(ensemble.probabilities(texts[:64], batch_size=16), (p + p[:, ::-1]) / 2, atol=2e-6)

    data = tmp_path / "test.csv"
    _write_csv(data, ["label", "text"], zip([names[label] for label in labels], texts))
    capsys.readouterr()
    assert (
        main(
            [
                "evaluate",
                "--run",
                str(lama_run),
                "--run",
                str(reversed_run),
                "--data",
                str(data),
                "--output",
                str(tmp_path / "report"),
            ]
        )
        == 0
    )
    p = np.asarray(model.predict(encoder(np.array(texts, dtype=object)), verbose=0))
    expected = sk.accuracy_score(labels, (p + p[:, ::-1]).argmax(-1))
    with open(tmp_path / "report" / "metrics.json") as handle:
        metrics = json.load(handle)
    assert metrics["accuracy"] == pytest.approx(expected)
    assert metrics["runs"] == [os.path.abspath(lama_run), os.path.abspath(reversed_run)]
    report = (tmp_path / "report" / "report.md").read_text()
    assert report.startswith(f"# Evaluation of {lama_run} + {reversed_run} on")
    # Each run alone, in the first run's class order: the reversed copy's predictions are p[:, ::-1]'s.
    alone = [sk.accuracy_score(labels, p.argmax(-1)), sk.accuracy_score(labels, p[:, ::-1].argmax(-1))]
    assert [member["run"] for member in metrics["members"]] == metrics["runs"]
    assert [member["accuracy"] for member in metrics["members"]] == pytest.approx(alone)
    assert metrics["members"][1]["macro_f1"] == pytest.approx(
        sk.f1_score(labels, p[:, ::-1].argmax(-1), labels=range(4), average="macro", zero_division=0)
    )
    assert f"| {os.path.abspath(reversed_run)} | {alone[1]:.4f} |" in report
    assert f"{os.path.abspath(lama_run)} alone: accuracy {alone[0]:.4f}" in capsys.readouterr().out

    other = relabelled_copy(lama_run, tmp_path / "other", ["a", "b", "c", "d"])
    cases = [
        (
            ["predict", "--run", str(lama_run), "--run", str(other), "some text"],
            f"an ensemble averages runs trained on the same classes: {other} has ['a', 'b', 'c', 'd']",
        ),
        (
            [
                "evaluate",
                "--run",
                str(lama_run),
                "--run",
                str(reversed_run),
                "--data",
                str(data),
                "--output",
                str(reversed_run / "report"),
            ],
            "choose an output outside the run folder",
        ),
    ]
    for arguments, message in cases:
        capsys.readouterr()
        assert main(arguments) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and message in error[0], error
    for nothing in ([], None):
        with pytest.raises(UserError, match="no run to classify with"):
            inference.Classifier(nothing)
    for not_paths in (5, [str(lama_run), None], {"run": str(lama_run)}):
        with pytest.raises(UserError, match="expected a path or a list of paths; got "):
            inference.Classifier(not_paths)
    assert repr(ensemble) == f"Classifier({[str(lama_run), str(reversed_run)]!r}, label_names={names!r})"
    assert (
        repr(inference.Classifier(path for path in [lama_run]))
        == f"Classifier({str(lama_run)!r}, label_names={names!r})"
    )


def test_an_empty_or_missing_output_is_named(tmp_path, monkeypatch):
    """An output of '' (or None) is one UserError before any work: '' named the working folder,
    which `export(..., overwrite=True)` would have replaced when empty; None was a TypeError."""
    from keras_textattn import export

    monkeypatch.chdir(tmp_path)
    run, data = tmp_path / "run", tmp_path / "test.csv"
    writers = [
        lambda output: export.saved_model(run, output, overwrite=True),
        lambda output: export.tflite(run, output, overwrite=True),
        lambda output: inference.evaluate(run, data, output, overwrite=True),
        lambda output: inference.predict_file(run, data, output, overwrite=True),
    ]
    for write in writers:
        for output in ("", None):
            with pytest.raises(UserError, match=re.escape(f"the output must be a path to write to; got {output!r}")):
                write(output)
    assert os.listdir(tmp_path) == []


def test_a_model_that_gives_nan_is_named_not_answered(tmp_path, capsys):
    """A run whose weights are not numbers (one that diverged before `train` stopped such runs) and a
    model of one's own that averages over the empty text's no tokens gave "nan" as a probability."""
    from keras_textattn.errors import UserError
    from keras_textattn.run_folder import save_run
    from keras_textattn.text import TextEncoder

    encoder = TextEncoder(sequence_length=8)
    encoder.adapt(["a good film", "a bad film"])
    ids = keras.Input((8,), dtype="int32")
    x = keras.layers.Embedding(encoder.vocabulary_size(), 4, mask_zero=True, name="embedding")(ids)
    model = keras.Model(ids, keras.layers.Dense(2, activation="softmax")(keras.layers.GlobalAveragePooling1D()(x)))
    save_run(tmp_path / "masked", model, encoder, ["neg", "pos"], {})
    assert inference.predict(tmp_path / "masked", ["a good film"])[0]["label"] in {"neg", "pos"}
    with pytest.raises(
        UserError,
        match=re.escape(
            f"{tmp_path / 'masked'} gives no probabilities (NaN) for 1 of the 2 "
            "texts, the first '': its weights are not numbers"
        ),
    ):
        inference.predict(tmp_path / "masked", ["a good film", ""])
    # From a file: the error is a line of its own after the progress line, and no output is left.
    (tmp_path / "texts.csv").write_text("text\n" + "a good film\n" * 300 + '""\n')
    assert (
        main(
            [
                "predict",
                "--run",
                str(tmp_path / "masked"),
                "--data",
                str(tmp_path / "texts.csv"),
                "--batch-size",
                "100",
                "--output",
                str(tmp_path / "labels.csv"),
            ]
        )
        == 2
    )
    progress, error = capsys.readouterr().err.splitlines()[-2:]
    assert progress.endswith("predicted 300 rows") and error.startswith("keras-textattn: error: ")
    assert "gives no probabilities (NaN) for 1 of the 1 texts" in error and not (tmp_path / "labels.csv").exists()
    model.set_weights([np.full_like(w, np.nan) for w in model.get_weights()])
    save_run(tmp_path / "diverged", model, encoder, ["neg", "pos"], {})
    assert main(["predict", "--run", str(tmp_path / "diverged"), "a good film"]) == 2
    assert "gives no probabilities (NaN) for 1 of the 1 texts, the first 'a good film'" in capsys.readouterr().err


def test_onnx_folder_predicts_and_evaluates_as_the_run_does(lama_run, test_rows, tmp_path):
    """An ONNX export runs in onnxruntime on the client tokenizer's ids, any number of texts a call:
    the run folder's probabilities on real test rows and hostile texts, the same accuracy from
    `evaluate`, quiet on the command line, and a damaged model file named in one line."""
    from keras_textattn.export import onnx

    texts, labels = test_rows
    texts = texts[:300] + ["", "\x00 <b>NUL</b> and tags", "oil " * 5000]
    report = onnx(lama_run, tmp_path / "onnx")
    assert report["max_abs_difference"] <= 1e-4 and report["argmax_agreement"] == 1.0
    expected = inference.Classifier(lama_run).probabilities(texts)
    for path in (tmp_path / "onnx", tmp_path / "onnx" / "model.onnx"):  # the folder or its file
        np.testing.assert_allclose(inference.Classifier(path).probabilities(texts), expected, atol=1e-4)
    data = tmp_path / "test.csv"
    _write_csv(data, ["label", "text"], zip(labels[:300], texts[:300]))
    scores = [
        inference.evaluate(source, str(data), str(tmp_path / name))["accuracy"]
        for name, source in (("run", lama_run), ("onnx-report", str(tmp_path / "onnx")))
    ]
    assert scores[0] == scores[1] and scores[0] > 0.5
    shown = subprocess.run(
        [sys.executable, "-m", "keras_textattn_cli", "predict", "--run", str(tmp_path / "onnx"), "stocks fell sharply"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0 and shown.stderr == "" and shown.stdout.startswith("Business "), shown
    # Long texts in windows that the client tokenizer cuts from its ids: the run folder's windows.
    windows = [inference.Classifier(path, long_texts="windows") for path in (lama_run, tmp_path / "onnx")]
    np.testing.assert_allclose(windows[1].probabilities(texts), windows[0].probabilities(texts), atol=1e-4)
    assert windows[1].longer_than_read(texts) == windows[0].longer_than_read(texts) >= 1
    damaged = tmp_path / "damaged"
    shutil.copytree(tmp_path / "onnx", damaged)
    (damaged / "model.onnx").write_bytes(b"cut")
    with pytest.raises(RunError, match=r"damaged: model.onnx cannot be read \(.+\); export the run again"):
        inference.Classifier(damaged)


def test_long_texts_read_in_windows_answer_with_their_mean(lama_run, test_rows, tmp_path, capsys):
    """With windows, a text longer than the run reads (64 tokens) gets the mean of its windows'
    probabilities (each window read whole, as cut reads it), a text that fits the same answer as
    cut; predict and evaluate say how many were longer, in either mode."""
    texts, labels = test_rows
    texts = texts[:200] + [" ".join(texts[:12]), ""]
    encoder = load_run(lama_run)[1]
    pieces, owners = encoder.windows(texts)
    each = inference.Classifier(lama_run).probabilities(pieces)
    expected = np.stack([each[owners == text].mean(axis=0) for text in range(len(texts))])
    windows = inference.Classifier(lama_run, long_texts="windows")
    answers = windows.probabilities(texts, batch_size=50)
    np.testing.assert_allclose(answers, expected, atol=1e-6)
    fits = np.bincount(owners) == 1
    np.testing.assert_allclose(answers[fits], inference.Classifier(lama_run).probabilities(texts)[fits], atol=1e-6)
    longer = int(np.sum(encoder.count_tokens(texts) > 64))
    assert windows.longer_than_read(texts) == longer == np.sum(~fits) and longer >= 2
    data = tmp_path / "test.csv"
    _write_csv(data, ["label", "text"], zip(labels[:200] + [labels[0], labels[0]], texts))
    for mode, said in (
        ("cut", "their ends were not read (--long-texts windows"),
        ("windows", "each was read in windows"),
    ):
        arguments = ["--run", str(lama_run), "--data", str(data), "--long-texts", mode]
        assert main(["predict", *arguments, "--output", str(tmp_path / f"{mode}.csv"), "--quiet"]) == 0
        assert f"{longer} of the {len(texts)} texts were longer than the model reads: {said}" in capsys.readouterr().out
        assert main(["evaluate", *arguments, "--output", str(tmp_path / f"report-{mode}")]) == 0
        report = json.loads((tmp_path / f"report-{mode}" / "metrics.json").read_text())
        assert (report["long_texts"], report["longer_than_read"]) == (mode, longer)
    assert report["accuracy"] == np.mean(answers.argmax(-1) == np.array([*labels[:200], labels[0], labels[0]]))
    for extra, message in (
        (["--stride", "8"], "a stride goes with reading long texts in windows"),
        (["--long-texts", "windows", "--stride", "65"], "`stride` must be an integer from 1 to 64"),
    ):
        assert main(["predict", "--run", str(lama_run), *extra, "a text"]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and message in error[0]
