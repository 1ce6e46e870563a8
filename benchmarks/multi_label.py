"""Multi-label classification on GoEmotions (28 labels): the paper models against TF-IDF + one-vs-rest
logistic regression, each with thresholds chosen per label on held-out training rows.

Every model trains on GoEmotions' training split less the tenth `train()` holds out (a seeded hash
of the row), on which each label's threshold is chosen (`keras_textattn.multi_label`); the
baseline holds out the same rows, and chooses its C there too. The dev split (the official test
split is not stored) is read once per model, after those choices. A paper model trains with
`train()`'s defaults, or with the options of `--recipe` (e.g. `epochs=10`).

    python benchmarks/multi_label.py                                   # every model, defaults
    python benchmarks/multi_label.py --models scalable_attention --recipe epochs=10
    python benchmarks/multi_label.py --quick      # 2,000 training and 500 dev rows, one epoch

One JSON line per (model, recipe, seed) is appended to `--results`; a rerun skips those there.
"""

import argparse
import datetime
import gzip
import json
import os
import pathlib
import sys
import tempfile
import time

import accuracy
import numpy as np

BASELINE = "tfidf_ovr_lr"
MODELS = (*accuracy.PAPER_MODELS, BASELINE)
TFIDF_C = (1.0, 4.0, 10.0)  # the C values the baseline chooses among on the held-out rows
QUICK = {"models": ["scalable_attention", BASELINE], "rows": (2000, 500), "epochs": 1}
PUBLISHED = "BERT-base, macro F1 0.46 on the test split (Demszky et al., 2020)"


def goemotions(data_dir, rows=None):
    """`(train file, dev file, label names)`: the stored files, or with `rows` (train, dev) a seeded
    sample of each written to a temporary folder (kept for the process)."""
    folder = pathlib.Path(data_dir) / "goemotions"
    names = (folder / "labels.txt").read_text(encoding="utf-8").split()
    files = [folder / "train.tsv.gz", folder / "dev.tsv.gz"]
    if not rows:
        return *map(str, files), names
    sample = tempfile.mkdtemp(prefix="goemotions-")
    written = []
    for path, count in zip(files, rows):
        with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
            lines = handle.read().splitlines(keepends=True)
        chosen = sorted(np.random.default_rng(0).permutation(len(lines))[:count].tolist())
        written.append(os.path.join(sample, path.name[: -len(".gz")]))
        with open(written[-1], "w", encoding="utf-8", newline="") as handle:
            handle.writelines(lines[i] for i in chosen)
    return *written, names


def local_file(path):
    from keras_textattn.datasets import LocalFile

    return LocalFile(path, text_column=0, label_column=1, header=False, label_delimiter=",")


def run_paper_model(model, train_path, dev_path, names, seed, recipe):
    """`(scores on dev, held-out macro F1, seconds)` of `train(model, ...)` with `recipe`."""
    from keras_textattn.training import train

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        metrics = train(
            model,
            {"train": local_file(train_path), "test": local_file(dev_path)},
            os.path.join(folder, "run"),
            label_names=names,
            seed=seed,
            verbose=0,
            **recipe,
        )
        seconds = time.perf_counter() - start
    scores = metrics["multi_label"]["scores"]
    return scores["test"], scores["validation"]["macro_f1"], seconds, {"epochs": metrics["epochs"]}


def run_baseline(train_path, dev_path, names, seed):
    """TF-IDF uni+bigrams + one-vs-rest logistic regression, C and thresholds chosen on the rows
    `train()` holds out; `(scores on dev, held-out macro F1, seconds, choice)`."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    from keras_textattn import multi_label

    start = time.perf_counter()
    texts, truth, held = read_split(train_path, names, seed)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    kept_features = vectorizer.fit_transform([t for t, h in zip(texts, held) if not h])
    held_features = vectorizer.transform([t for t, h in zip(texts, held) if h])
    best = None
    for c in TFIDF_C:
        classifier = OneVsRestClassifier(LogisticRegression(C=c, max_iter=2000, random_state=seed))
        classifier.fit(kept_features, truth[~held])
        probabilities = classifier.predict_proba(held_features)
        thresholds, _ = multi_label.choose_thresholds(truth[held], probabilities)
        score = multi_label.scores(truth[held], multi_label.decide(probabilities, thresholds))["macro_f1"]
        if best is None or score > best[0]:
            best = (score, c, classifier, thresholds)
    score, c, classifier, thresholds = best
    dev_texts, dev_truth, _ = read_split(dev_path, names, seed)
    decided = multi_label.decide(classifier.predict_proba(vectorizer.transform(dev_texts)), thresholds)
    return multi_label.scores(dev_truth, decided), score, time.perf_counter() - start, {"C": c}


def read_split(path, names, seed):
    """`(texts, 0/1 truth, held out)` of a GoEmotions file: `held out` marks the rows `train()`
    holds out of it for validation (`datasets.splits.held_out` of the same keys)."""
    import tensorflow as tf

    from keras_textattn.datasets.formats import read_labelled_texts
    from keras_textattn.datasets.splits import held_out
    from keras_textattn.datasets.splits import multi_hot

    texts, label_sets, row_numbers, _ = read_labelled_texts(local_file(path))
    truth = multi_hot(label_sets, {str(i): i for i in range(len(names))})
    keys = [f"{os.path.basename(path)}:{row}" for row in row_numbers]
    return texts, truth, held_out(tf.constant(keys), 0.1, seed).numpy()


def measure(data_dir, model, recipe, seed, rows=None):
    train_path, dev_path, names = goemotions(data_dir, rows)
    if model == BASELINE:
        test, held, seconds, choice = run_baseline(train_path, dev_path, names, seed)
    else:
        test, held, seconds, choice = run_paper_model(model, train_path, dev_path, names, seed, recipe)
    return {
        "dataset": "goemotions" if not rows else f"goemotions@{rows[0]}",
        "model": model,
        "recipe": recipe_name(recipe) if model != BASELINE else "tuned C",
        "seed": seed,
        "held_out_macro_f1": held,
        "test": test,
        "seconds": seconds,
        **choice,
        "date": datetime.date.today().isoformat(),
    }


def recipe_name(recipe):
    return ", ".join(f"{name} {value}" for name, value in sorted(recipe.items())) or "defaults"


def parse_recipe(settings):
    recipe = {}
    for setting in settings or []:
        name, _, value = setting.partition("=")
        try:
            recipe[name] = json.loads(value)
        except json.JSONDecodeError:
            recipe[name] = value
    return recipe


def report(rows):
    lines = [
        "| model | recipe | seeds | held-out macro F1 | macro F1 | micro F1 | samples F1 | subset accuracy | seconds |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    groups = {}
    for row in rows:
        groups.setdefault((row["dataset"], row["model"], row["recipe"]), []).append(row)
    ordered = sorted(groups.items(), key=lambda item: -np.mean([r["test"]["macro_f1"] for r in item[1]]))
    for (dataset, model, recipe), group in ordered:

        def mean(key, group=group):
            return np.mean([r["test"][key] for r in group])

        name = model if dataset == "goemotions" else f"{model} ({dataset})"
        lines.append(
            f"| {name} | {recipe} | {len(group)} | {np.mean([r['held_out_macro_f1'] for r in group]):.4f} | "
            f"{mean('macro_f1'):.4f} | {mean('micro_f1'):.4f} | "
            f"{mean('samples_f1'):.4f} | {mean('subset_accuracy'):.4f} | "
            f"{np.mean([r['seconds'] for r in group]):.0f} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", accuracy.DEFAULT_DATA)),
    )
    parser.add_argument("--results", default="benchmarks/results/multi_label.jsonl", help="JSON lines, appended")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--recipe", nargs="*", metavar="OPTION=VALUE", help="train() options of the paper models")
    parser.add_argument("--seeds", nargs="+", type=accuracy.seed_number, default=[0])
    parser.add_argument("--quick", action="store_true", help=f"smoke check: {QUICK}")
    args = parser.parse_args(argv)
    if not (args.data_dir / "goemotions" / "README.md").is_file():
        parser.error(f"no GoEmotions at {args.data_dir}/goemotions; pass --data-dir or set KERAS_TEXTATTN_DATA")
    recipe, rows = parse_recipe(args.recipe), None
    if args.quick:
        args.models, rows, recipe = QUICK["models"], QUICK["rows"], {"epochs": QUICK["epochs"]}
    results = accuracy.read_results(args.results)
    dataset = "goemotions" if not rows else f"goemotions@{rows[0]}"
    done = {(r["dataset"], r["model"], r["recipe"], r["seed"]) for r in results}
    for seed in args.seeds:
        for model in args.models:
            name = recipe_name(recipe) if model != BASELINE else "tuned C"
            if (dataset, model, name, seed) in done:
                continue
            results.append(measure(args.data_dir, model, recipe, seed, rows))
            os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
            with open(args.results, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(results[-1]) + "\n")
            print(json.dumps(results[-1]), flush=True)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
