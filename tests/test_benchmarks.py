"""Each benchmark script runs in its smallest mode, so the scripts never rot (CI runs this)."""

import csv
import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_function(module, name):
    """`name` from the benchmark script `module` (benchmarks/ is not a package)."""
    import importlib

    sys.path.insert(0, str(BENCHMARKS))
    try:
        return getattr(importlib.import_module(module), name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def run_script(script, *arguments):
    """`(exit status, stdout, stderr)` of the benchmark script's `main(arguments)`, run in this
    process as `python benchmarks/SCRIPT ARGUMENTS` would run it (a process of its own would spend
    seconds importing TensorFlow again)."""
    import contextlib
    import io

    main = benchmark_function(script.removesuffix(".py"), "main")
    argv, sys.argv = sys.argv, [str(BENCHMARKS / script)]  # argparse names the script in its errors
    sys.path.insert(0, str(BENCHMARKS))  # for the modules a script imports as it runs
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([str(argument) for argument in arguments])
    except SystemExit as exit_:
        status = exit_.code
    finally:
        sys.argv = argv
        sys.path.remove(str(BENCHMARKS))
    if isinstance(status, str):  # sys.exit("message"): Python prints it and exits with 1
        err.write(status + "\n")
        status = 1
    return status or 0, out.getvalue(), err.getvalue()


def test_the_documented_commands_name_options_the_scripts_have():
    """Each `python benchmarks/SCRIPT ...` that README, BENCHMARKS.md or the docs give (the commands
    behind the figures, to repeat them) names only options its script has: a renamed flag fails here."""
    import re

    root = BENCHMARKS.parent
    documents = [
        root / "README.md",
        root / "BENCHMARKS.md",
        root / "CONTRIBUTING.md",
        *sorted((root / "docs").rglob("*.md")),
    ]
    text = "".join(path.read_text(encoding="utf-8") for path in documents)
    commands = re.findall(r"`python benchmarks/(\w+\.py)([^`]*)`", text)
    assert len(commands) >= 10
    for script in sorted({script for script, _ in commands}):
        status, usage, _ = run_script(script, "--help")
        assert status == 0, script
        options = set(re.findall(r"--[a-z][a-z0-9-]*", usage))
        for arguments in (arguments for named, arguments in commands if named == script):
            unknown = [flag for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", arguments) if flag not in options]
            assert not unknown, f"`python benchmarks/{script}{arguments}` names options it has not: {unknown}"


def run_quick(script, results, shared_data, *options):
    """`(arguments, stdout)` of a benchmark script's `--quick` mode writing to `results`."""
    arguments = ["--quick", "--results", results, "--data-dir", shared_data, *options]
    status, out, err = run_script(script, *arguments)
    assert status == 0, err[-3000:]
    return arguments, out


def test_accuracy_quick(shared_data, tmp_path):
    results = tmp_path / "accuracy.jsonl"
    arguments, out = run_quick("accuracy.py", results, shared_data)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert {r["model"] for r in rows} == {"scalable_attention", "fasttext", "tfidf_lr"}
    assert all(r["dataset"] == "trec" and 1 / 6 < r["accuracy"] <= 1 for r in rows)
    assert "| trec | tfidf_lr |" in out
    # A second run finds everything done and only reports (the resume path).
    assert run_script("accuracy.py", *arguments)[0] == 0 and len(results.read_text().splitlines()) == len(rows)
    # The time-to-accuracy plot, looked at as a picture: drawn (not blank), with a point per row; a row
    # trained on a sample of the training rows (`--train-rows`) is left out, however accurate.
    with results.open("a") as handle:
        handle.write(
            json.dumps(
                {
                    "dataset": "trec",
                    "model": "tfidf_lr@n1000",
                    "seed": 0,
                    "accuracy": 0.999,
                    "train_seconds": 1.0,
                    "parameters": 1,
                    "train_rows": 1000,
                }
            )
            + "\n"
        )
    plot = tmp_path / "trec.png"
    status, out, err = run_script("accuracy.py", *arguments, "--datasets", "trec", "--plot", plot)
    assert status == 0, err[-3000:]
    reached = {
        r["model"] for r in rows if r["accuracy"] >= next(r["accuracy"] for r in rows if r["model"] == "fasttext")
    }
    assert out.strip().endswith(", ".join(sorted(reached - {"fasttext"})) or "none")
    import matplotlib.image

    pixels = matplotlib.image.imread(plot)[..., :3]
    assert pixels.shape[:2] == (720, 1200)
    ink = pixels.min(axis=-1) < 0.5  # dark enough to read: axes, labels, the black baseline markers
    assert 0.005 < ink.mean() < 0.2
    colours = {tuple(np.round(p, 1)) for p in pixels.reshape(-1, 3)[::7]}
    assert len(colours) > 10  # not one colour: the model points are drawn in colour


def test_paired_quick(shared_data):
    """The paired comparison: the row's accuracy recomputed from its saved run equals the run's own,
    and the discordant counts account for the gap between the two models (n x gap = b - c)."""
    import re

    status, out, err = run_script("paired.py", "--quick", "--data-dir", shared_data)
    assert status == 0, err[-3000:]
    first, second = out.strip().splitlines()
    linear, rows = re.fullmatch(r"trec: TF-IDF \+ LR ([\d.]+) on ([\d,]+) test rows", first).groups()
    rows = rows.replace(",", "")  # "7,600" on AG News
    ours, own, gap, only_ours, only_linear, p = re.fullmatch(
        r"seed 0: scalable_attention\+defaults ([\d.]+) \(its run: ([\d.]+)\), ([-+][\d.]+); right where TF-IDF \+ LR "
        r"is wrong: (\d+), the other way: (\d+); McNemar exact p = ([\d.]+)",
        second,
    ).groups()
    assert ours == own and float(gap) == round(float(ours) - float(linear), 4)
    assert int(only_ours) - int(only_linear) == round(float(gap) * int(rows)) and 0 <= float(p) <= 1


def test_ensemble_quick(shared_data):
    """Soft voting: the mean of the members' probabilities; run on two plain rows, the members'
    figures from their saved probabilities are accuracy.py's own, and the paired counts account
    for the ensemble's gap to TF-IDF + LR."""
    import re

    ensemble_rows = benchmark_function("ensemble", "ensemble_rows")
    labels = np.array([0, 1, 1, 0])
    right_on_0_and_2 = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]])
    right_on_1_and_2 = np.array([[0.4, 0.6], [0.1, 0.9], [0.45, 0.55], [0.3, 0.7]])
    (row,) = ensemble_rows({0: [right_on_0_and_2, right_on_1_and_2]}, labels, np.array([True, False, True, True]))
    assert row["members"] == [0.5, 0.5] and row["accuracy"] == 0.75  # the mean is right on rows 0, 1 and 2
    assert (row["only_ours"], row["only_linear"]) == (1, 1)
    status, out, err = run_script("ensemble.py", "--quick", "--data-dir", shared_data)
    assert status == 0, err[-3000:]
    trained = dict(re.findall(r"^trec +(\S+) +seed 0: accuracy ([\d.]+),", out, re.M))
    linear = float(re.search(r"^trec: TF-IDF \+ LR ([\d.]+) on 500 test rows", out, re.M).group(1))
    first, second, ours, gap, only_ours, only_linear = re.search(
        r"^seed 0: members ([\d.]+) / ([\d.]+), ensemble ([\d.]+) \(([-+][\d.]+)\); right where TF-IDF \+ LR is wrong: "
        r"(\d+), the other way: (\d+)",
        out,
        re.M,
    ).groups()
    assert [first, second] == [trained["scalable_attention@e1"], trained["kim_cnn@e1"]]
    assert float(gap) == round(float(ours) - linear, 4) and int(only_ours) - int(only_linear) == round(float(gap) * 500)


def test_ensemble_on_folds_quick(shared_data):
    """`--folds`: every training row scored once by each member trained without it; the table's
    single members are what the fold models scored (Keras's evaluate), their average follows."""
    import re

    averages_table = benchmark_function("ensemble", "averages_table")
    labels = np.array([0, 1, 1, 0])
    table = averages_table(
        labels,
        {
            0: {
                "a": np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.45, 0.55]]),
                "b": np.array([[0.4, 0.6], [0.1, 0.9], [0.45, 0.55], [0.3, 0.7]]),
            }
        },
    )
    assert table.splitlines()[2:] == [
        "| a + b | 0.7500 ± 0.0000 | 0.7500 |",
        "| a | 0.5000 ± 0.0000 | 0.5000 |",
        "| b | 0.5000 ± 0.0000 | 0.5000 |",
    ]
    status, out, err = run_script("ensemble.py", "--quick", "--folds", "2", "--data-dir", shared_data)
    assert status == 0, err[-3000:]
    folds = re.findall(r"^seed 0 fold (\d)/2 (\S+): accuracy ([\d.]+) on (\d+) rows", out, re.M)
    assert sorted((k, m) for k, m, _, _ in folds) == [
        ("1", "kim_cnn"),
        ("1", "scalable_attention"),
        ("2", "kim_cnn"),
        ("2", "scalable_attention"),
    ]
    assert sum(int(n) for k, m, _, n in folds if m == "kim_cnn") == 5452  # TREC's training questions, each once
    assert re.search(r"^trec: held out, 2 folds of the 5,452 training rows; TF-IDF \+ LR 0\.[89]\d+", out, re.M)
    table = dict(re.findall(r"^\| (\S+(?: \+ \S+)*) \| ([\d.]+) ±", out, re.M))
    assert set(table) == {"scalable_attention", "kim_cnn", "scalable_attention + kim_cnn"}
    for member in ("scalable_attention", "kim_cnn"):
        pooled = sum(float(a) * int(n) for _, m, a, n in folds if m == member) / 5452
        assert float(table[member]) == pytest.approx(pooled, abs=1e-4)
    # On IMDB the folds are blocks of each label's review ids: with 10, validation_split.py's carves
    # (labels in another order than the file's are refused: the script reads the rows twice).
    _, imdb_labels, ids = benchmark_function("validation_split", "read_imdb")(shared_data / "imdb" / "train.csv.gz")
    fold_of_each_row = benchmark_function("ensemble", "fold_of_each_row")
    with pytest.raises(SystemExit, match="not in the order"):
        fold_of_each_row(shared_data, "imdb", imdb_labels[::-1], 10)
    fold = fold_of_each_row(shared_data, "imdb", imdb_labels, 10)
    held_out = benchmark_function("validation_split", "held_out")
    assert all((fold == k).tolist() == held_out("id_block", k, imdb_labels, ids).tolist() for k in range(10))


def test_cross_validation_quick(shared_data, tmp_path):
    """Stratified folds that partition the training rows; each row validated once, the report
    pooling the folds by their sizes; a rerun finds every fold done."""
    fold_of_each_row = benchmark_function("cross_validation", "fold_of_each_row")
    labels = np.array(["a"] * 90 + ["b"] * 30)
    fold = fold_of_each_row(labels, 3, 0)
    assert sorted(np.bincount(fold)) == [40, 40, 40] and all(
        np.sum((fold == k) & (labels == "b")) == 10 for k in range(3)
    )
    assert (fold != fold_of_each_row(labels, 3, 1)).any() and (fold == fold_of_each_row(labels, 3, 0)).all()
    results = tmp_path / "cross_validation.jsonl"
    arguments, out = run_quick("cross_validation.py", results, shared_data)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["model"], r["fold"]) for r in rows] == [
        (model, k) for model in ("scalable_attention+defaults", "tfidf_lr") for k in (0, 1)
    ]
    for model in ("scalable_attention+defaults", "tfidf_lr"):
        folds = [r for r in rows if r["model"] == model]
        assert sum(r["validation_rows"] for r in folds) == 5452  # TREC's training questions, each validated once
        assert all(1 / 6 < r["validation_accuracy"] <= 1 for r in folds)
        pooled = sum(r["validation_accuracy"] * r["validation_rows"] for r in folds) / 5452
        assert f"| trec | {model} | 2 | {pooled:.4f} ± 0.0000 | {pooled:.4f} | 1 |" in out
    # TF-IDF + LR's fold 0, recomputed here from the fold assignment: the same rows, the same figure.
    texts, labels = benchmark_function("cross_validation", "training_rows")(shared_data, "trec")
    held_out = fold_of_each_row(labels, 2, 0) == 0
    tfidf = benchmark_function("accuracy", "tfidf_classifier")(list(texts[~held_out]), labels[~held_out], 0)
    assert np.mean(tfidf.predict(list(texts[held_out])) == labels[held_out]) == rows[2]["validation_accuracy"]
    assert run_script("cross_validation.py", *arguments)[0] == 0 and len(results.read_text().splitlines()) == 4


@pytest.mark.parametrize("row", ["auto+defaults", "scalable_attention+defaults"])
def test_a_race_is_scored_on_a_fold_it_did_not_choose_on(shared_data, monkeypatch, row):
    """`--model auto` chooses on held-out rows: in a fold it holds out its own tenth of the fold's
    training rows, the fold being its test split; a named model is given the fold as its validation
    data. What `run_train` is given is read as it reads it (its files), not trained."""
    run_fold = benchmark_function("cross_validation", "run_fold")
    accuracy = sys.modules["accuracy"]
    given = {}

    def run_train(data_files, **_):
        given.update({split: len(pathlib.Path(f.path).read_text().splitlines()) - 1 for split, f in data_files.items()})
        return {
            "accuracy": 0.25,
            "validation_accuracy": 0.75,
            "best_epoch": None,
            "epochs_trained": 3,
            "train_seconds": 1,
        }

    monkeypatch.setattr(accuracy, "run_train", run_train)
    texts, labels = np.array([f"text {i}" for i in range(30)]), np.array(["a", "b"] * 15)
    held_out = np.arange(30) < 10
    result = run_fold(shared_data, "trec", row, 0, texts, labels, held_out, 2000)
    scored = "test" if row.startswith("auto") else "validation"
    assert given == {"train": 20, scored: 10}
    assert result["validation_accuracy"] == (0.25 if scored == "test" else 0.75) and result["validation_rows"] == 10


def test_cross_validation_report_counts_a_fold_measured_again_by_its_last_result():
    report = benchmark_function("cross_validation", "report")

    def fold(k, accuracy):
        return {"dataset": "mr", "model": "m", "folds": 2, "seed": 0, "fold": k, "validation_accuracy": accuracy}

    rows = [{**fold(0, 0.5), "validation_rows": 10, "train_seconds": 1}, {**fold(1, 0.7), "validation_rows": 30}]
    rows[1]["train_seconds"] = 3
    again = {**fold(0, 0.9), "validation_rows": 10, "train_seconds": 5}
    assert "| mr | m | 2 | 0.6500 ± 0.0000 | 0.6500 | 1 | 2 |" in report(rows)
    assert "| mr | m | 2 | 0.7500 ± 0.0000 | 0.7500 | 1 | 4 |" in report([*rows, again])


def test_throughput_quick(shared_data, tmp_path):
    run = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "throughput.py"),
            "--quick",
            "--output-dir",
            str(tmp_path),
            "--data-dir",
            str(shared_data),
            "--dtype-policy",
            "mixed_bfloat16",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads((tmp_path / "throughput.json").read_text())
    layers = {(r["layer"], r["length"]) for r in results["layers"]}
    assert layers == {(name, n) for name in ("MultiHeadAttention", "LAMA") for n in (64, 128)}
    assert all(r["train_examples_per_second"] > 0 for r in results["layers"])
    # The process's memory high-water mark: training the first layer raises it (later rows may not).
    assert results["layers"][0]["peak_rss_mb"] > 0
    # A GPU's peak memory exactly where the backend computed on one (none in CI: the CPU's RSS).
    assert all((r["device"] == "cpu") == (r["accelerator_peak_mb"] is None) for r in results["layers"])
    assert {r["dtype_policy"] for r in results["layers"]} == {"mixed_bfloat16"}  # the layers' policy, as asked
    assert all(f["flops"] > 0 for f in results["flops"])  # counted by XLA through JAX
    (row,) = results["end_to_end"]  # the fastest to convert; the full run measures every paper model
    assert row["model"] == "scalable_attention" and row["tflite_dynamic_bytes"] < row["tflite_float32_bytes"]
    # int8 (calibrated on training texts) is smaller than float32 and mostly labels held-out texts as Keras does.
    assert row["tflite_int8_bytes"] < row["tflite_float32_bytes"] and 0.9 <= row["tflite_int8_argmax_agreement"] <= 1
    assert (tmp_path / "throughput.png").read_bytes()[:4] == b"\x89PNG"
    table = (tmp_path / "throughput.md").read_text()
    assert "| LAMA | 128 |" in table and ", mixed_bfloat16)\n" in table  # the heading names the policy
    assert re.search(r"\| [\d.]+, [\d.]+ / [\d.]+, agrees (0\.9\d\d|1\.000) \| [\d.]+, [\d.]+ / [\d.]+ \|\n", table)
    # ^ the int8 cell, then the ONNX model's size and latency
    # The papers' claims: each pair measured in one process, the speedup the comparator's step time over the model's.
    claims = {r["claim"]: r for r in results["claims"]}
    assert sorted(claims) == ["dual_axial_vs_mha", "hcan_vs_han", "lama_encoder_vs_te", "lama_vs_te"]
    for row in claims.values():
        ratio = row["train_examples_per_second"] / row["comparator_train_examples_per_second"]
        assert row["speedup"] == pytest.approx(ratio) and row["parameters"] > 0
    assert claims["hcan_vs_han"]["shape"] == {"max_sentences": 8, "sequence_length": 16}
    assert "| hcan vs han (hcan_vs_han) | 8 x 16 |" in table


def test_gpu_check_needs_the_data_and_is_valid_bash(tmp_path):
    script = BENCHMARKS / "gpu_check.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    run = subprocess.run(
        ["bash", str(script), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "KERAS_TEXTATTN_DATA": str(tmp_path)},
        cwd=tmp_path,
    )
    assert run.returncode == 2 and "no imdb/train.csv.gz in" in run.stderr
    assert not (tmp_path / ".venv-gpu").exists()  # refused before installing anything


def test_adversarial_cost_quick(shared_data):
    status, out, err = run_script("adversarial_cost.py", "--quick", "--data-dir", shared_data)
    assert status == 0, err[-3000:]
    (row,) = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert row["model"] == "lama" and row["texts"] == 128 and row["plain"] > 0
    assert row["ratio"] == pytest.approx(row["adversarial"] / row["plain"])


def test_breakdown_quick(shared_data, tmp_path):
    """Every phase of an epoch is measured and scaled to the epoch's steps, for both kinds of
    embedding update (not timed: a test asserts what is measured, not how fast)."""
    from keras_textattn.training.model_setup import batch_for_rows

    results = tmp_path / "breakdown.json"
    status, out, err = run_script("breakdown.py", "--quick", "--data-dir", shared_data, "--results", results)
    assert status == 0, err[-3000:]
    row = json.loads(results.read_text())["models"][0]
    assert (row["model"], row["dataset"], row["steps_timed"]) == ("scalable_attention", "trec", 3)
    assert row["steps_per_epoch"] == -(-row["rows"] // row["batch_size"])
    # Batches as a run makes them: the batch train() chooses from the rows, padding cut.
    assert row["batch_size"] == batch_for_rows(row["rows"]) and row["cut_padding"] is True
    assert row["run_updates"] in ("sparse", "dense")
    phases = ("encoder", "encode", "cached_pass", "forward_backward", "sparse_epoch", "dense_epoch", "validation")
    assert all(row[f"{phase}_seconds"] > 0 for phase in phases)
    assert "scalable_attention: encoder" in out and "dense updates" in out


def test_race_quick(shared_data, tmp_path):
    """Each entry in a process of its own: its test accuracy, wall seconds and peak memory recorded,
    its time against fastText's printed, and the plot drawn (a picture of both points and labels)."""
    results, plot = tmp_path / "race.jsonl", tmp_path / "race.png"
    status, out, err = run_script("race.py", "--quick", "--data-dir", shared_data, "--results", results, "--plot", plot)
    assert status == 0, err[-3000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(row["dataset"], row["entry"]) for row in rows] == [
        ("trec", "fasttext"),
        ("trec", "scalable_attention+defaults"),
    ]
    assert all(1 / 6 < row["accuracy"] <= 1 and row["wall_seconds"] > 0 and row["peak_mb"] > 50 for row in rows)
    assert rows[1]["peak_mb"] > rows[0]["peak_mb"]  # TensorFlow is not in fastText's process
    ratio = rows[1]["wall_seconds"] / rows[0]["wall_seconds"]
    assert f"{ratio:.1f}x fasttext" in out
    import matplotlib.image

    picture = matplotlib.image.imread(plot)
    assert picture.shape[0] > 300 and picture.shape[1] > 400
    assert (picture[..., :3] < 0.5).mean() > 0.005  # axes, points and labels drawn on the white


def test_race_rows_are_timed_against_the_baselines_of_their_own_run(tmp_path):
    """The results page's ratios pair each newest row with fastText and TF-IDF + LR of the same
    run and dataset: by `run` where a row has one; in rows before it, the latest fastText above."""
    newest = benchmark_function("race", "newest")

    def row(entry, seconds, run=None, dataset="imdb"):
        return {"dataset": dataset, "entry": entry, "wall_seconds": seconds, **({"run": run} if run else {})}

    lines = [
        row("fasttext", 10),
        row("tfidf_lr", 30),
        row("scalable_attention+bigrams", 36),
        row("fasttext", 1, dataset="sst2"),
        row("fasttext", 9),
        row("scalable_attention+defaults", 31),
        row("fasttext", 8, run="2026-12-08T10:00:00"),
        row("lama+fast", 50, run="2026-12-08T10:00:00"),
        row("tfidf_lr", 25, run="2026-12-08T10:00:00"),
        row("cspan+fast", 99, run="2026-12-09T10:00:00"),  # a run without baselines
    ]
    path = tmp_path / "race.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    seconds = {
        (r["dataset"], r["entry"]): {name: base and base["wall_seconds"] for name, base in r["baselines"].items()}
        for r in newest(path)
    }
    assert seconds[("imdb", "scalable_attention+bigrams")] == {"fasttext": 10, "tfidf_lr": 30}
    assert seconds[("imdb", "scalable_attention+defaults")] == {"fasttext": 9, "tfidf_lr": None}
    assert seconds[("imdb", "lama+fast")] == {"fasttext": 8, "tfidf_lr": 25}  # TF-IDF + LR ran after it
    assert seconds[("imdb", "cspan+fast")] == {"fasttext": None, "tfidf_lr": None}
    assert seconds[("sst2", "fasttext")] == {"fasttext": 1, "tfidf_lr": None}
    assert seconds[("imdb", "tfidf_lr")] == {"fasttext": 8, "tfidf_lr": 25}


def test_a_repeated_race_keeps_each_entrys_median_run():
    """With `--repeats`, each entry's row is its run of median seconds (the lower middle of an even
    count), a real run whole (its accuracy and memory with its seconds), with every run's seconds."""
    median_runs = benchmark_function("race", "median_runs")

    def run(entry, seconds, peak):
        return {"dataset": "imdb", "entry": entry, "wall_seconds": seconds, "accuracy": 0.9, "peak_mb": peak}

    rounds = [run("fasttext", 9, 1), run("lama+fast", 50, 2), run("fasttext", 7, 3), run("lama+fast", 70, 4)]
    rounds += [run("fasttext", 8, 5), run("lama+fast", 40, 6)]
    assert median_runs(rounds) == [
        {**run("fasttext", 8, 5), "repeats": [9, 7, 8]},
        {**run("lama+fast", 50, 2), "repeats": [50, 70, 40]},
    ]
    assert median_runs(rounds[:4])[1] == {**run("lama+fast", 50, 2), "repeats": [50, 70]}
    assert median_runs(rounds[:2]) == rounds[:2]  # one run each: the rows as they were


def test_presets_quick():
    status, out, err = run_script("presets.py", "--quick")
    assert status == 0, err[-3000:]
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    assert [row[0].strip() for row in rows[1:]] == ["scalable_attention", "kim_cnn"]
    for row in rows[1:]:
        paper_parameters, cpu_parameters = (int(cell.replace(",", "")) for cell in row[1:3])
        assert cpu_parameters < paper_parameters and float(row[5].strip(" x")) > 0


def test_full_length_quick(shared_data, monkeypatch):
    """Both steps on TREC: the ids file (every training and test text, word2vec vectors) and a trained row."""
    monkeypatch.setenv("KERAS_TEXTATTN_DATA", str(shared_data))
    status, out, err = run_script("full_length.py", "--quick")
    assert status == 0, err[-3000:]
    assert "trec.npz: 5452 / 500 texts of 32 ids" in out
    row = json.loads(out.strip().splitlines()[-1])
    assert row["model"] == "scalable_attention+paper_w2v@32" and row["loss_on"] == "logits"
    assert 1 / 6 < row["accuracy"] <= 1 and row["epochs_trained"] == 1


def test_validation_split_quick(shared_data, tmp_path):
    """IMDB's ids run film by film (consecutive reviews are more alike than random pairs), and each
    carve holds out a tenth of each label: at random, or a contiguous block of ids."""
    held_out = benchmark_function("validation_split", "held_out")
    labels, ids = np.repeat([0, 1], 100), np.tile(np.arange(100), 2)
    block = held_out("id_block", 3, labels, ids)
    assert sorted(ids[block & (labels == 1)]) == list(range(30, 40)) and block.sum() == 20
    assert held_out("random", 0, labels, ids).sum() == 20 and (held_out("random", 0, labels, ids) != block).any()
    assert sorted(ids[held_out("id_block", 1, labels, ids, blocks=5) & (labels == 0)]) == list(range(20, 40))
    results = tmp_path / "validation_split.jsonl"
    _, out = run_quick("validation_split.py", results, shared_data, "--hide-test")
    similarity, *rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert similarity["similarity"]["consecutive"] > 2 * similarity["similarity"]["random"]
    assert [(row["model"], row["carve"]) for row in rows] == [
        ("tfidf_lr@quick", "random"),
        ("tfidf_lr@quick", "id_block"),
    ]
    assert all(0.7 < row["validation"] <= 1 and 0.7 < row["test"] <= 1 for row in rows)
    # --hide-test: the test figures are recorded, and printed nowhere (run lines and table)
    assert "held out" in out and "| tfidf_lr@quick | id_block |" in out
    assert "test" not in out
    table = benchmark_function("validation_split", "report")(rows)
    assert "| test accuracy |" in table and f"| {rows[1]['test']:.3f} ± 0.000 |" in table


def test_time_to_accuracy_plot_rows():
    """The plot names each point: per model its plain row and its most accurate row of 3 or more
    seeds (a lucky single seed is not shown as the model's best); TF-IDF on cut texts is left out."""
    plotted_rows = benchmark_function("accuracy", "plotted_rows")
    points = {
        "lama": [(10, 0.85)] * 3,
        "lama@768@v2000": [(30, 0.88), (30, 0.89), (30, 0.87)],
        "lama+paper": [(20, 0.86)] * 3,
        "lama+recipe@768": [(40, 0.95)],  # one seed: not the best
        "dual_axial": [(5, 0.80)] * 3,
        "dual_axial_mean": [(5, 0.82)] * 3,  # an option of dual_axial
        "scalable_attention": [(1, 0.84)] * 3,
        "scalable_attention+w2v": [(2, 0.83)] * 3,
        "cspan@v2000": [(3, 0.85)],  # neither a plain row nor 3 seeds: its most accurate row
        "fasttext": [(1, 0.888)] * 3,
        "tfidf_lr": [(1, 0.907)],
        "tfidf_lr_cut@768": [(1, 0.907)],
    }
    assert plotted_rows(points) == {
        "lama": ["lama", "lama@768@v2000"],
        "dual_axial": ["dual_axial", "dual_axial_mean"],
        "scalable_attention": ["scalable_attention"],
        "cspan": ["cspan@v2000"],
        "fasttext": ["fasttext"],
        "tfidf_lr": ["tfidf_lr"],
    }


def test_accuracy_official_validation_and_hidden_test_figures(shared_data, tmp_path):
    """`--official-validation`: a `train()` row validates on SST-2's dev file (872 rows), not on
    10% of the training rows (692), and says so in its name; plain rows refuse the flag.
    `--hide-test`: the run prints the held-out figure, not the test one (recorded all the same),
    and `--report --hide-test` is the table of held-out figures; plain rows refuse it too."""
    results = tmp_path / "accuracy.jsonl"
    script = ["--results", results]
    plain = [*script, "--datasets", "sst2", "--seeds", "0", "--data-dir", shared_data]
    status, out, err = run_script(
        "accuracy.py", *plain, "--official-validation", "--models", "scalable_attention+unweighted", "--hide-test"
    )
    assert status == 0, err[-3000:]
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["model"] == "scalable_attention+unweighted@dev" and 0.6 < row["accuracy"] <= 1
    assert abs(row["validation_accuracy"] * 872 - round(row["validation_accuracy"] * 872)) < 1e-6
    held_out, test = f"{row['validation_accuracy']:.4f}", f"{row['accuracy']:.4f}"
    assert held_out != test and f"held-out accuracy {held_out}" in out
    assert test not in out
    assert f"| sst2 | scalable_attention+unweighted@dev | {row['validation_accuracy']:.3f} | 1 |" in out
    status, report, _ = run_script("accuracy.py", *script, "--report")
    assert status == 0
    assert f"| sst2 | scalable_attention+unweighted@dev | {row['accuracy']:.3f} | 1 |" in report
    for models, option, message in (
        (["scalable_attention"], "--official-validation", "--official-validation is for"),
        (
            ["scalable_attention+unweighted", "tfidf_lr"],
            "--hide-test",
            "--hide-test is for the rows run through train() ('+' rows), the ones that hold data out; not tfidf_lr",
        ),
    ):
        status, _, err = run_script("accuracy.py", *plain, "--models", *models, option)
        assert status == 2 and message in err, err


def test_accuracy_training_sample_for_a_learning_curve(shared_data, tmp_path):
    """`--train-rows N`: each seed draws a stratified sample of N training rows, the same for every
    model of that seed, and the test split stays whole; the rows say so in their name, and TF-IDF's
    figure is that of the sample; '+' rows (which hold their own rows out) refuse the option."""
    load, sample, texts_and_labels, tfidf_classifier = (
        benchmark_function("accuracy", name)
        for name in ("load", "training_sample", "texts_and_labels", "tfidf_classifier")
    )
    whole = load(shared_data, "trec")
    texts, labels = texts_and_labels(whole["train"])
    first = sample(whole, 1000, 0)
    sampled_texts, sampled_labels = texts_and_labels(first["train"])
    assert first.rows["train"] == len(sampled_texts)
    shares = {label: round(1000 * count / len(labels)) for label, count in zip(*np.unique(labels, return_counts=True))}
    assert dict(zip(*np.unique(sampled_labels, return_counts=True))) == shares  # every class in its share
    assert abs(len(sampled_texts) - 1000) <= len(shares) / 2
    remaining = iter(zip(texts, labels))  # the training rows themselves, in their order
    assert all(row in remaining for row in zip(sampled_texts, sampled_labels))
    assert texts_and_labels(sample(whole, 1000, 0)["train"])[0] == sampled_texts
    assert texts_and_labels(sample(whole, 1000, 1)["train"])[0] != sampled_texts
    test_texts, test_labels = texts_and_labels(first["test"])
    assert test_texts == texts_and_labels(whole["test"])[0] and len(test_texts) == 500
    with pytest.raises(
        SystemExit,
        match=r"--train-rows: expected 1 to 5451 \(the training split has 5452 rows\), "
        r"got 5452",
    ):
        sample(whole, 5452, 0)

    results = tmp_path / "accuracy.jsonl"
    command = [
        "--results",
        results,
        "--datasets",
        "trec",
        "--seeds",
        "0",
        "--data-dir",
        shared_data,
        "--train-rows",
        1000,
    ]
    assert run_script("accuracy.py", *command, "--models", "tfidf_lr")[0] == 0
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert (row["model"], row["train_rows"]) == ("tfidf_lr@n1000", len(sampled_texts))
    assert row["accuracy"] == tfidf_classifier(sampled_texts, sampled_labels, 0).score(test_texts, test_labels)
    status, _, err = run_script("accuracy.py", *command, "--models", "scalable_attention+defaults")
    assert status == 2 and "--train-rows is for the plain Keras models, fastText and TF-IDF" in err
    # A '+defaults' row leaves the lengths to train(): a --length would only be in its name.
    command = command[: command.index("--train-rows")]
    status, _, err = run_script("accuracy.py", *command, "--models", "cspan+defaults", "--length", 768)
    assert status == 2 and "--length is for the rows that do not leave the lengths to train()" in err
    assert "choose theirs from the training texts: cspan+defaults" in err
    assert len(results.read_text().splitlines()) == 1  # the TF-IDF row only


@pytest.mark.parametrize(
    "row, message",
    [
        (
            "scalable_attention+imdb50k_vectors",
            "imdb50k_vectors reads imdb/test.csv.gz, the test texts of imdb: its rows on "
            "that dataset would learn from the texts they are tested on",
        ),
        (
            "scalable_attention+imdb_transfer",
            "imdb_run trains on imdb/train.csv.gz, a file of imdb: fine-tune on another dataset",
        ),
    ],
)
def test_other_corpora_reading_the_datasets_own_files_are_refused(shared_data, tmp_path, row, message):
    """`+imdb50k_vectors` learns from IMDB's test reviews too, and `+imdb_transfer` starts from a run
    on IMDB's training reviews: fine for SST-2's rows, refused for IMDB's own (before any training;
    nothing recorded)."""
    results = tmp_path / "accuracy.jsonl"
    status, _, err = run_script(
        "accuracy.py",
        "--results",
        results,
        "--datasets",
        "imdb",
        "--models",
        row,
        "--seeds",
        0,
        "--data-dir",
        shared_data,
    )
    assert status == 1
    assert err.strip().endswith(message)
    assert not results.exists() or not results.read_text().strip()


def test_accuracy_row_names_and_the_schedule_option(shared_data, tmp_path):
    """A plain row trained with a schedule or adversarially says so in its name; the plateau (which
    reads validation data the plain rows do not have), and schedules or adversarial training for
    other rows, are refused, as are splitting long sentences for models that do not read sentences
    and saving probabilities of rows that are not plain Keras models."""
    row_suffix = benchmark_function("accuracy", "row_suffix")
    assert row_suffix(768, 2000, 3, 200000, lr_schedule="cosine") == "@768@v2000@b200000@cosine"
    assert row_suffix(768, 2000, 2, 200000, lr_schedule="constant") == "@768@v2000@e2@b200000"
    assert row_suffix(split_long_sentences=True) == "@split_long_sentences"
    assert (
        row_suffix(768, 2000, 3, 200000, lr_schedule="cosine", adversarial=0.05) == "@768@v2000@b200000@cosine@adv0.05"
    )
    command = [
        "--results",
        tmp_path / "accuracy.jsonl",
        "--datasets",
        "trec",
        "--seeds",
        "0",
        "--data-dir",
        shared_data,
    ]
    for models, option, message in (
        (["scalable_attention"], ["--lr-schedule", "plateau"], "--lr-schedule is for the plain Keras models"),
        (["fasttext"], ["--lr-schedule", "cosine"], "--lr-schedule is for the plain Keras models"),
        (
            ["hcan", "lama+defaults"],
            ["--split-long-sentences"],
            "--split-long-sentences is for the models that read sentences (hcan rows)",
        ),
        (
            ["scalable_attention", "tfidf_lr"],
            ["--save-probabilities", str(tmp_path)],
            "--save-probabilities is for the plain Keras models",
        ),
        (["lama+defaults"], ["--adversarial", "0.05"], "--adversarial is for the plain Keras models"),
    ):
        status, _, err = run_script("accuracy.py", *command, "--models", *models, *option)
        assert status == 2 and message in err
    assert not (tmp_path / "accuracy.jsonl").exists()


def test_scripts_check_their_seeds():
    """A seed Keras and NumPy cannot take is argparse's one line (it was NumPy's traceback after the data
    was read); every script with --seeds takes accuracy.py's type."""
    seed_number = benchmark_function("accuracy", "seed_number")
    assert seed_number("0") == 0 and seed_number(str(2**32 - 1)) == 2**32 - 1
    for script, step in (
        ("accuracy.py", []),
        ("cross_validation.py", []),
        ("ensemble.py", []),
        ("paired.py", []),
        ("full_length.py", ["fit", "ids.npz"]),
    ):
        status, _, err = run_script(script, *step, "--seeds", "1", "-1")
        assert status == 2 and err.splitlines()[-1] == (
            f"{' '.join([script, *step[:1]])}: error: argument --seeds: a seed is a whole number from 0 to 4294967295; "
            "got '-1'"
        )


def _texts(shared_data, dataset, rows=None):
    """`((texts, labels), (texts, labels))` of a dataset's training file (its first `rows`) and test file."""
    import gzip

    splits = []
    for name in ("train", "test"):
        with gzip.open(shared_data / dataset / f"{name}.csv.gz", "rt", encoding="utf-8") as handle:
            table = list(csv.DictReader(handle))[: rows if name == "train" else None]
        splits.append(([row["text"] for row in table], [row["label"] for row in table]))
    return splits


@pytest.mark.parametrize(("dataset", "beta"), [("trec", 1.0), ("sst2", 0.0)])
def test_nbsvm_interpolates_naive_bayes_and_the_svm(shared_data, dataset, beta):
    """NB-SVM's ends of the interpolation, recomputed from Wang & Manning's equations: with beta 1
    the SVM on r-scaled binarised counts alone (TREC: each class against the rest, the largest
    score winning); with beta 0 multinomial NB's log-count ratio and log prior (SST-2: binary, as
    the paper defines it)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.svm import LinearSVC

    train, test = _texts(shared_data, dataset)
    result = benchmark_function("accuracy", "nbsvm_on")(train, test, 0, beta=beta)
    counts = CountVectorizer(ngram_range=(1, 2), binary=True).fit(train[0])
    x, x_test, labels = counts.transform(train[0]), counts.transform(test[0]), np.array(train[1])
    classes = np.unique(labels)
    scores = []
    for label in classes if len(classes) > 2 else classes[1:]:
        p = 1 + np.asarray(x[labels == label].sum(0)).ravel()
        q = 1 + np.asarray(x[labels != label].sum(0)).ravel()
        r = np.log((p / p.sum()) / (q / q.sum()))
        if beta == 1:
            svm = LinearSVC(C=1.0, max_iter=10_000, random_state=0).fit(x.multiply(r).tocsr(), labels == label)
            scores.append(svm.decision_function(x_test.multiply(r).tocsr()))
        else:
            prior = np.log(np.mean(labels == label) / np.mean(labels != label))
            scores.append(x_test @ r + prior)
    scores = np.stack(scores, 1)
    if len(classes) == 2:
        predicted = np.where(scores[:, 0] > 0, classes[1], classes[0])
    else:
        predicted = classes[np.argmax(scores, 1)]
    expected = np.mean(predicted == np.array(test[1]))
    assert len(classes) == {"trec": 6, "sst2": 2}[dataset]
    assert result["accuracy"] == pytest.approx(expected, abs=1 / len(test[0]))
    assert result["accuracy"] > 0.75


def test_tfidf_cv_refits_the_c_cross_validation_chose(shared_data):
    train, test = _texts(shared_data, "trec", rows=1500)
    result = benchmark_function("accuracy", "tfidf_cv_on")(train, test, 0)
    assert result["chosen_c"] in benchmark_function("accuracy", "TFIDF_C")
    pipeline = benchmark_function("accuracy", "tfidf_pipeline")(0).set_params(logisticregression__C=result["chosen_c"])
    assert result["accuracy"] == pipeline.fit(*train).score(*test)


def test_mr_is_cross_validated_whole_in_ten_stratified_folds(shared_data):
    """MR has no test split: cross_validation.py reads all its rows (its README: 5,331 of each class)
    and deals them into folds that each hold a tenth of each class."""
    texts, labels = benchmark_function("cross_validation", "training_rows")(shared_data, "mr")
    assert len(texts) == 10_662 and sorted(np.unique(labels, return_counts=True)[1]) == [5_331, 5_331]
    fold = benchmark_function("cross_validation", "fold_of_each_row")(labels, 10, 0)
    for k in range(10):
        assert [int(np.sum((fold == k) & (labels == label))) for label in ("neg", "pos")] in (
            [533, 533],
            [534, 533],
            [533, 534],
        )


def test_long_texts_quick(shared_data, tmp_path):
    """long_texts.py trains a small model on sampled IMDB rows, scores the three ways on its held-out
    tenth (every sampled review is longer than 32 tokens), keeps the best, then reads the test rows."""
    results = tmp_path / "long_texts.jsonl"
    _, out = run_quick("long_texts.py", results, shared_data)
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    held = row["held_out_accuracy"]
    assert row["chosen"] == max(held, key=held.get)
    assert row["held_out_rows"] == 100 and row["held_out_longer"] > 90
    assert row["test_rows"] == 1000 and all(0.3 < value <= 1 for value in row["test_accuracy"].values())
    assert row["cpu_seconds_per_text"]["windows"] > row["cpu_seconds_per_text"]["cut"]
    assert "| imdb | scalable_attention, 32, seed 0 | each text's start |" in out


def test_multi_label_quick(shared_data, tmp_path):
    """multi_label.py trains scalable attention on a GoEmotions sample and fits the one-vs-rest baseline,
    both with thresholds chosen on the rows train() holds out, and reports each on the dev sample."""
    results = tmp_path / "multi_label.jsonl"
    arguments, out = run_quick("multi_label.py", results, shared_data)
    rows = {row["model"]: row for row in map(json.loads, results.read_text().splitlines())}
    assert sorted(rows) == ["scalable_attention", "tfidf_ovr_lr"]
    assert rows["tfidf_ovr_lr"]["C"] in (1.0, 4.0, 10.0)
    for row in rows.values():
        assert row["dataset"] == "goemotions@2000" and 0 < row["test"]["macro_f1"] <= row["test"]["micro_f1"] + 0.2
        assert 0 <= row["test"]["hamming_loss"] < 1 and 0 <= row["held_out_macro_f1"] <= 1
    assert "| tfidf_ovr_lr (goemotions@2000) | tuned C | 1 |" in out
    assert run_script("multi_label.py", *arguments)[0] == 0 and len(results.read_text().splitlines()) == 2
