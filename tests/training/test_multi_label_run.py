"""A multi-label run end to end on GoEmotions: it learns, its thresholds are chosen on the held-out
rows and kept by every way of using the run (predict, evaluate, SavedModel, TFLite, ONNX), and what
it cannot take is refused in one line."""

import csv
import json
import signal

import numpy as np
import pytest
import tensorflow as tf

from keras_textattn import multi_label
from keras_textattn.datasets import LocalFile
from keras_textattn.datasets.formats import read_labelled_texts
from keras_textattn.datasets.splits import held_out
from keras_textattn.datasets.splits import multi_hot
from keras_textattn.errors import UserError
from keras_textattn.inference import KINDS
from keras_textattn.inference import Classifier
from keras_textattn.inference import evaluate
from keras_textattn.inference import predict_file
from keras_textattn.training import train
from keras_textattn_cli import main

from .test_train import _kill_when


def _goemotions(shared_data):
    folder = shared_data / "goemotions"
    return folder, (folder / "labels.txt").read_text().split()


def _file(path):
    return LocalFile(str(path), text_column=0, label_column=1, header=False, label_delimiter=",")


def _truth(path, names):
    texts, label_sets, rows, _ = read_labelled_texts(_file(path))
    return texts, multi_hot(label_sets, {str(i): i for i in range(len(names))}), rows


@pytest.fixture(scope="module")
def multi_label_run(shared_data, tmp_path_factory):
    """Scalable attention with train()'s defaults on GoEmotions' training split, its dev split as the
    test file: the run folder, its metrics and the label names."""
    folder, names = _goemotions(shared_data)
    output = tmp_path_factory.mktemp("multi_label") / "run"
    metrics = train(
        "scalable_attention",
        {"train": _file(folder / "train.tsv.gz"), "test": _file(folder / "dev.tsv.gz")},
        str(output),
        label_names=names,
        verbose=0,
    )
    return output, metrics, names


def test_a_multi_label_run_learns_each_label_well_above_guessing(multi_label_run, shared_data):
    output, metrics, names = multi_label_run
    _, truth, _ = _truth(shared_data / "goemotions" / "dev.tsv.gz", names)
    # Saying every label of every text: the best a model that reads nothing does on most labels.
    everything = multi_label.scores(truth, np.ones_like(truth))["macro_f1"]
    test = metrics["multi_label"]["scores"]["test"]
    assert (metrics["epochs"], metrics["early_stopping"]) == (20, 2)  # multi-label's rule: no epochs given
    assert metrics["stopped_early"] and metrics["best_epoch"] < len(metrics["seconds_per_epoch"])
    assert test["macro_f1"] > max(0.35, 3 * everything)
    assert test["micro_f1"] > 0.35 and test["subset_accuracy"] > 0.15
    assert metrics["accuracy"]["test"] == test["subset_accuracy"] and metrics["macro_f1"]["test"] == test["macro_f1"]
    thresholds = metrics["multi_label"]["thresholds"]
    assert list(thresholds) == names and all(0 < t < 1 for t in thresholds.values())
    assert len(set(thresholds.values())) > 5  # one per label, not one for all


def test_thresholds_are_those_that_maximise_f1_on_the_rows_train_held_out(multi_label_run, shared_data):
    output, metrics, names = multi_label_run
    path = shared_data / "goemotions" / "train.tsv.gz"
    texts, truth, rows = _truth(path, names)
    held = held_out(tf.constant([f"{path.name}:{row}" for row in rows]), 0.1, 0).numpy()
    assert int(held.sum()) == metrics["rows"]["validation"]
    probabilities = Classifier(output).probabilities([t for t, h in zip(texts, held) if h])
    thresholds, global_threshold = multi_label.choose_thresholds(truth[held], probabilities)
    assert thresholds.tolist() == pytest.approx(list(metrics["multi_label"]["thresholds"].values()))
    assert metrics["multi_label"]["global_threshold"] == pytest.approx(global_threshold)


def test_predict_gives_the_labels_at_or_above_their_thresholds(multi_label_run, tmp_path):
    output, metrics, names = multi_label_run
    classifier = Classifier(output)
    assert classifier.multi_label and classifier.thresholds == list(metrics["multi_label"]["thresholds"].values())
    texts = ["Thank you so much, this made my day!", "I am furious, this is disgusting.", "ok", ""]
    probabilities = classifier.probabilities(texts)
    rows = classifier.predict(texts, top_k=3)
    for row, p in zip(rows, probabilities):
        expected = [names[i] for i in np.flatnonzero(p >= np.array(classifier.thresholds, np.float32))]
        assert sorted(row["labels"]) == sorted(expected)
        assert row["probabilities"] == sorted(row["probabilities"], reverse=True)
        assert len(row["top"]) == 3 and "label" not in row
    assert "gratitude" in rows[0]["labels"]
    # A file of them: CSV cells of comma-separated labels (as train --multi-label reads them), JSONL lists.
    data = tmp_path / "texts.csv"
    data.write_text("id,text\n" + "".join(f'{i},"{text}"\n' for i, text in enumerate(texts)))
    predict_file(output, str(data), str(tmp_path / "out.csv"), verbose=0)
    with open(tmp_path / "out.csv", newline="") as handle:
        written = list(csv.DictReader(handle))
    assert list(written[0]) == ["id", "labels", "probabilities"]
    assert [row["labels"].split(",") if row["labels"] else [] for row in written] == [row["labels"] for row in rows]
    predict_file(output, str(data), str(tmp_path / "out.jsonl"), verbose=0)
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line["labels"] for line in lines] == [row["labels"] for row in rows]


def test_evaluate_scores_as_train_did_and_draws_each_labels_decisions(multi_label_run, shared_data, tmp_path):
    output, metrics, names = multi_label_run
    dev = shared_data / "goemotions" / "dev.tsv.gz"
    result = evaluate(
        output, str(dev), str(tmp_path / "report"), text_column=0, label_column=1, header=False, mistakes=10
    )
    test = metrics["multi_label"]["scores"]["test"]
    for key in ("macro_f1", "micro_f1", "samples_f1", "subset_accuracy", "hamming_loss"):
        assert result[key] == pytest.approx(test[key], abs=1e-6)  # the same rows, the same thresholds
    _, truth, _ = _truth(dev, names)
    for name, column in zip(names, truth.T):
        counts = result["per_label"][name]
        assert counts["support"] == column.sum() == counts["true_positives"] + counts["false_negatives"]
        assert sum(counts[kind] for kind in KINDS) == len(truth)
    report = (tmp_path / "report" / "report.md").read_text()
    assert f"Macro F1 **{result['macro_f1']:.4f}**" in report and "| grief |" in report
    with open(tmp_path / "report" / "metrics.json") as handle:
        mistakes = json.load(handle)["label_mistakes"]
    assert len(mistakes) == 10 and {m["mistake"] for m in mistakes} <= {"missed", "extra"}
    from PIL import Image

    with Image.open(tmp_path / "report" / "confusion.png") as image:
        colours = np.unique(np.asarray(image.convert("RGB")).reshape(-1, 3), axis=0)
        assert image.size[1] > 28 * 20 and len(colours) > 20  # a row per label, drawn


@pytest.mark.parametrize("export_format", ["saved_model", "tflite", "onnx"])
def test_exports_carry_the_thresholds_and_decide_as_the_run(multi_label_run, tmp_path, export_format):
    output, metrics, names = multi_label_run
    folder = tmp_path / export_format
    assert main(["export", "--run", str(output), "--format", export_format, "--output", str(folder)]) == 0
    texts = ["Thank you so much, this made my day!", "I am furious, this is disgusting.", "what?"]
    run_rows, export_rows = Classifier(output).predict(texts), Classifier(folder).predict(texts)
    assert [row["labels"] for row in export_rows] == [row["labels"] for row in run_rows]
    thresholds = list(metrics["multi_label"]["thresholds"].values())
    if export_format == "saved_model":
        import tensorflow_text  # noqa: F401 (the encoder's ops)

        serve = tf.saved_model.load(str(folder)).signatures["serving_default"]
        outputs = {key: value.numpy() for key, value in serve(text=tf.constant(texts)).items()}
        assert sorted(outputs) == ["decided", "labels", "probabilities", "thresholds"]
        assert np.array_equal(outputs["decided"], outputs["probabilities"] >= np.array(thresholds, np.float32))
        assert [[n.decode() for n in row if n] for row in outputs["labels"]] == [
            [names[i] for i in np.flatnonzero(row)] for row in outputs["decided"]
        ]
        assert outputs["thresholds"].shape == (3, 28) and outputs["thresholds"][2].tolist() == pytest.approx(thresholds)
    else:
        record = json.loads((folder / "labels.json").read_text())
        assert record == {"labels": names, "thresholds": thresholds}


def test_a_killed_multi_label_run_resumes_with_thresholds_of_its_own_model(shared_data, tmp_path):
    """Killed in its second epoch, the run resumes from the first's checkpoint; its thresholds are
    chosen from the finished model's answers on the held-out rows (recomputed here through
    `Classifier`, whose float rounding differs a little: equal up to ties of near-equal answers)."""
    folder, names = _goemotions(shared_data)
    output = tmp_path / "run"
    args = [
        "--model",
        "scalable_attention",
        "--data",
        str(folder / "dev.tsv.gz"),  # the smaller split, to train on
        "--no-header",
        "--text-column",
        "0",
        "--label-column",
        "1",
        "--multi-label",
        "--label-names",
        ",".join(names),
        "--epochs",
        "2",
        "--output",
        str(output),
    ]
    _kill_when(args, (output / "backup" / "epoch-0001-batch-000000.weights.h5").exists, signal.SIGKILL)
    assert not (output / "metrics.json").exists()
    assert main(["train", *args, "--quiet"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["resumed_from_epoch"] == 1
    assert (metrics["epochs"], metrics["early_stopping"]) == (2, None)  # epochs given: no rule of its own
    texts, truth, rows = _truth(folder / "dev.tsv.gz", names)
    held = held_out(tf.constant([f"dev.tsv.gz:{row}" for row in rows]), 0.1, 0).numpy()
    probabilities = Classifier(output).probabilities([t for t, h in zip(texts, held) if h])
    recorded = [metrics["multi_label"]["thresholds"][name] for name in names]  # metrics.json sorts its keys
    expected, _ = multi_label.choose_thresholds(truth[held], probabilities)
    assert np.mean(np.isclose(recorded, expected)) >= 0.9

    def macro_f1(thresholds):
        return multi_label.scores(truth[held], multi_label.decide(probabilities, thresholds))["macro_f1"]

    assert macro_f1(recorded) == pytest.approx(macro_f1(expected), abs=0.01)
    assert macro_f1(recorded) == pytest.approx(metrics["multi_label"]["scores"]["validation"]["macro_f1"], abs=0.01)


def test_balanced_class_weights_weigh_each_labels_rows_and_raise_the_rare_labels(shared_data, tmp_path):
    from keras_textattn.losses import LabelWeightedBinaryCrossentropy
    from keras_textattn.run_folder import load_run

    folder, names = _goemotions(shared_data)
    data = {"train": _file(folder / "dev.tsv.gz")}  # 5,426 comments: a quick epoch
    runs = {
        weight: train(
            "scalable_attention", data, str(tmp_path / str(weight)), label_names=names, epochs=1, class_weight=weight
        )
        for weight in (None, "balanced")
    }
    record = runs["balanced"]["class_weight"]
    positive = [record[name]["positive"] for name in names]
    assert runs[None]["class_weight"] is None and min(positive) > 1 > max(record[n]["negative"] for n in names)
    model, _, _ = load_run(tmp_path / "balanced")  # the run's model trains on with the weights it was given
    assert isinstance(model.loss, LabelWeightedBinaryCrossentropy) and model.loss.positive_weights == positive
    # The rarest labels' positives weigh most, and the weighted run gives them more probability.
    texts, _, _ = _truth(folder / "dev.tsv.gz", names)
    rare = np.argsort(positive)[-5:]
    mean = {w: np.mean(Classifier(tmp_path / str(w)).probabilities(texts[:1000])[:, rare]) for w in runs}
    assert mean["balanced"] > 3 * mean[None], mean


def test_the_multi_worker_loop_trains_multi_label_rows_as_fit_does():
    """The multi-worker loop on 0/1 label rows, weighed by label: from the same weights, an epoch
    over the same batches gives `fit`'s weights, loss and subset accuracy."""
    import keras

    from keras_textattn.datasets.splits import TextClassificationData
    from keras_textattn.training import compile_classifier
    from keras_textattn.training.multi_worker import fit_multi_worker

    rng = np.random.default_rng(4)
    inputs = rng.normal(size=(16, 2)).astype("float32")
    labels = np.stack([inputs[:, 0] > 0, inputs[:, 1] > 0.8, inputs.sum(1) > 1], axis=1).astype("float32")
    rows = tf.data.Dataset.from_tensor_slices((inputs, labels))
    weights = ([1.0, 4.0, 3.0], [1.0, 0.5, 0.6])
    models = []
    for _ in range(2):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="sigmoid")])
        compile_classifier(model, keras.optimizers.Adam(0.1), multi_label=True, label_weights=weights)
        models.append(model)
    by_fit, by_loop = models
    by_loop.set_weights(by_fit.get_weights())
    fitted = by_fit.fit(rows.batch(4), epochs=1, shuffle=False, verbose=0).history
    looped = fit_multi_worker(
        tf.distribute.get_strategy(),
        by_loop,
        TextClassificationData(splits={"train": rows}, label_names=["a", "b", "c"], multi_label=True),
        lambda part, size: part.batch(size),
        1,
        4,
        4,
        multi_label=True,
        label_weights=weights,
    )
    for fit_weight, loop_weight in zip(by_fit.get_weights(), by_loop.get_weights(), strict=True):
        np.testing.assert_allclose(loop_weight, fit_weight, rtol=1e-5, atol=1e-6)
    assert looped["loss"] == pytest.approx(fitted["loss"], rel=1e-5)
    assert looped["accuracy"] == pytest.approx(fitted["accuracy"], rel=1e-5) and 0 < looped["accuracy"][0] < 1


@pytest.mark.xdist_group("multi_worker")
def test_two_workers_train_a_multi_label_run_with_its_thresholds(shared_data, tmp_path):
    import gzip

    from .test_train import _two_workers

    folder, names = _goemotions(shared_data)
    with gzip.open(folder / "train.tsv.gz", "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines()[:6000]
    (tmp_path / "train.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")  # each worker: every 2nd row
    output = tmp_path / "run"
    data = ["--data", str(tmp_path / "train.tsv"), "--no-header", "--text-column", "0", "--label-column", "1"]
    _two_workers(
        [
            "--model",
            "scalable_attention",
            *data,
            "--multi-label",
            "--label-names",
            ",".join(names),
            "--class-weight",
            "balanced",
            "--epochs",
            "2",
            "--quiet",
            "--output",
            str(output),
        ]
    )
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["replicas"] == 2 and sorted(metrics["multi_label"]["thresholds"]) == sorted(names)
    assert min(w["positive"] for w in metrics["class_weight"].values()) > 1
    assert metrics["macro_f1"]["validation"] > 0.05
    history = metrics["history"]
    assert all(0 <= a < 1 for a in history["accuracy"] + history["val_accuracy"]), history  # of rows, not labels


@pytest.mark.parametrize(
    "extra, content, message",
    [
        ([], "text\tlabels\na\tjoy\nb\t\n", "train.tsv, row 3: column 'labels': the label is empty"),
    ],
    ids=["empty-label"],
)
def test_what_a_multi_label_run_cannot_take_is_one_line_and_exit_2(tmp_path, capsys, extra, content, message):
    path = tmp_path / "train.tsv"
    path.write_text(content or "text\tlabels\n" + "a b\tjoy,love\nc d\tanger\n" * 20)
    command = ["train", "--model", "scalable_attention", "--data", str(path), "--label-column", "labels"]
    status = main([*command, "--multi-label", "--output", str(tmp_path / "run"), "--quiet", *extra])
    err = capsys.readouterr().err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "run").exists()


def test_an_ensemble_with_a_multi_label_run_is_refused(multi_label_run):
    output, _, _ = multi_label_run
    with pytest.raises(UserError, match="an ensemble averages single-label runs; .* is multi-label"):
        Classifier([output, output])


def test_explain_shows_each_texts_label_set_and_the_tokens_of_a_chosen_label(multi_label_run, capsys):
    from keras_textattn.explain import explain
    from keras_textattn.explain import top_tokens

    output, _, names = multi_label_run
    texts = ["Thank you so much, this made my day!", "Thanks, I love it", "I am furious, this is disgusting.", "hm"]
    explanations = explain(output, texts)
    assert [e.labels for e in explanations] == [row["labels"] for row in Classifier(output).predict(texts)]
    table = top_tokens(explanations, k=3, min_count=1)
    assert set(table) == {label for e in explanations for label in e.labels}  # a text counts for each label
    assert main(["explain", "--run", str(output), *texts, "--label", "gratitude"]) == 0
    printed = capsys.readouterr().out.splitlines()[1:]
    assert len(printed) == sum("gratitude" in e.labels for e in explanations) >= 1
    assert all("gratitude (" in line for line in printed)
    assert main(["explain", "--run", str(output), *texts, "--label", "glee"]) == 2
    assert "--label 'glee' is not a label of the run" in capsys.readouterr().err


SEARCH = """\
model: scalable_attention
tuner: {max_trials: 2, epochs: 3, batch_size: 64}
encoder: {max_tokens: 5000, sequence_length: 32}
fixed: {embedding_dim: 16, learning_rate: 0.003}
hyperparameters:
  fc_units: {type: choice, values: [8, 32], default: 8}
"""


def test_a_search_of_multi_label_data_maximises_macro_f1_and_its_best_run_keeps_thresholds(shared_data, tmp_path):
    from keras_textattn.datasets import load_labelled_data
    from keras_textattn.datasets import make_batches
    from keras_textattn.metrics import BestThresholdMacroF1
    from keras_textattn.run_folder import load_run
    from keras_textattn.tuning import tune

    folder, names = _goemotions(shared_data)
    config = tmp_path / "search.yaml"
    config.write_text(SEARCH)
    data = {"text_column": 0, "label_column": 1, "header": False, "label_delimiter": ",", "label_names": names}
    data["multi_label"] = True
    rows = tune(config, str(folder / "train.tsv.gz"), tmp_path / "search", class_weight="balanced", verbose=0, **data)
    assert len(rows) == 2 and rows[0]["score"] >= rows[1]["score"]
    # The score is the validation macro F1 at each label's best threshold, of the best model as saved.
    model, encoder, _ = load_run(tmp_path / "search" / "best")
    validation = load_labelled_data(str(folder / "train.tsv.gz"), seed=0, **data)[0]["validation"]
    metric = BestThresholdMacroF1(len(names))
    for ids, labels in make_batches(validation, encoder, 256):
        metric.update_state(labels, model.predict_on_batch(ids))
    assert float(metric.result()) == pytest.approx(rows[0]["score"], abs=1e-4)
    # Well above the macro F1 of deciding every label for every row (each label's best by guessing).
    prevalence = np.mean(np.concatenate([labels.numpy() for _, labels in make_batches(validation, encoder, 256)]), 0)
    guessing = np.mean([2 * p / (1 + p) for p in prevalence if p > 0])
    assert 2 * guessing < rows[0]["score"] < 0.9, (guessing, rows)
    # The best run decides as a multi-label run does: thresholds chosen on those rows.
    metrics = json.loads((tmp_path / "search" / "best" / "metrics.json").read_text())
    assert metrics["objective"] == "val_macro_f1"
    weights = [metrics["class_weight"][name]["positive"] for name in names]  # each label's, as train weighs them
    assert model.loss.positive_weights == weights and min(weights) > 1
    assert sorted(metrics["multi_label"]["thresholds"]) == sorted(names)
    assert metrics["macro_f1"]["validation"] == metrics["multi_label"]["scores"]["validation"]["macro_f1"] > 0.1
    predicted = Classifier(tmp_path / "search" / "best").predict(["Thank you so much!", "I am so angry"])
    thresholds = metrics["multi_label"]["thresholds"]
    assert all(
        probability >= thresholds[label]
        for row in predicted
        for label, probability in zip(row["labels"], row["probabilities"], strict=True)
    )


def test_a_macro_f1_objective_on_single_label_data_is_one_line(shared_data, tmp_path, capsys):
    config = tmp_path / "search.yaml"
    config.write_text("objective: val_macro_f1\n" + SEARCH)
    data = str(shared_data / "trec" / "train.csv.gz")
    assert main(["tune", "--config", str(config), "--data", data, "--directory", str(tmp_path / "search")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"keras-textattn: error: {config}: objective: val_macro_f1 is for multi-label data (each label's "
        "threshold); a search of single-label data takes val_accuracy or val_loss"
    )
    assert not (tmp_path / "search").exists()
