"""Write BENCHMARKS.md, the results page, from `benchmarks/results/`, and README's results table.

    python benchmarks/report.py            # rewrite BENCHMARKS.md and README.md's table
    python benchmarks/report.py --check    # exit 1 if either differs from what this writes

Per dataset, one table: each paper model with `train()`'s defaults and with the recipe chosen
for it on held-out data (`RECIPES`), then the baselines; mean ± sd of test accuracy over the
seeds, training seconds and parameters; under it the command that measures it. Then the
throughput tables (`throughput.py`'s own markdown, from its JSON) and the memory table
(`memory.py`'s). A figure is replaced by running its benchmark again: the page is never
edited by hand, and a test fails when the committed page differs from what this writes.
"""

import argparse
import json
import pathlib
import statistics
import sys

import accuracy
import cross_validation
import long_texts
import memory
import multi_label
import paper_claims
import race
import throughput

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "BENCHMARKS.md"
README = ROOT / "README.md"
README_START, README_END = "<!-- results: benchmarks/report.py -->", "<!-- /results -->"

DATASETS = {  # name: title
    "imdb": "IMDB (25,000 film reviews; test 25,000)",
    "ag_news": "AG News (a 5,000-row sample of the training set; test 7,600)",
    "trec": "TREC (5,452 questions; test 500)",
    "sst2": "SST-2 (6,920 sentences; test 1,821)",
    "r8": "R8 (5,485 news texts; test 2,189)",
}
PAPER_MODELS = ("scalable_attention", "dual_axial", "hcan", "lama", "cspan")
BASELINES = {
    "tfidf_lr": "TF-IDF + logistic regression",
    "tfidf_lr_cv": "TF-IDF + LR, C by 5-fold cross-validation",
    "nbsvm": "NB-SVM, uni+bigrams",
    "fasttext": "fastText",
    "kim_cnn": "Kim's CNN",
    "bigru": "BiGRU",
    "transformer": "Transformer encoder",
}
# The recipe chosen for a paper model on a dataset by held-out data (the tenth `train()` holds
# out, a carve of whole groups, or cross-validation of the training split), never by its test
# figure; the docs' "What we tried" says how each was chosen. Rows are `accuracy.py`'s names.
RECIPES = {
    "imdb": {
        "hcan": "hcan+defaults_bigrams_cosine_e2_adv0.05_s48@v2000",
        "scalable_attention": "scalable_attention@768@v2000@b200000@cosine@adv0.05",
        "lama": "lama@768@v2000@e2@b200000@cosine@adv0.05",
        "dual_axial": "dual_axial+train_cosine@768@v2000",
        "cspan": "cspan@768@v2000@b200000@epoch_cosine",
    },
    "ag_news": {
        "scalable_attention": "scalable_attention_d50+glove_v100k",
        "dual_axial": "dual_axial@128",
    },
    "trec": {"scalable_attention": "scalable_attention+defaults_bigrams"},
    "sst2": {"scalable_attention": "scalable_attention+imdb_transfer"},
    "r8": {"lama": "lama+paper_adam_min5_cosine_ls0.2"},
}
MACHINE = "2 CPU cores (x86_64), 24 GiB, no accelerator: this project's CI machine"
# The dates of results recorded before their rows carried one (accuracy.py writes "date" since
# 2026-12-02), and of the throughput and memory files, which hold none.
UNDATED_ACCURACY = ("2026-11-21", "2026-12-01")
MEASURED = {
    "throughput_layers.json": "2026-11-22",
    "throughput_end_to_end.json": "2026-12-03",
    "throughput_claims.json": "2026-12-02",
    "memory.json": "2026-11-23",
}
# The plot under a dataset's table.
PLOTS = {"imdb": ("Test accuracy against training seconds on IMDB", "imdb_time_to_accuracy.png")}


def read_accuracy():
    """`{(dataset, row): [result, ...]}` of `accuracy.jsonl`, the last result of each seed."""
    by_seed = {}
    for line in (RESULTS / "accuracy.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            by_seed[(row["dataset"], row["model"], row["seed"])] = row
    rows = {}
    for (dataset, model, _), row in sorted(by_seed.items(), key=lambda item: item[0]):
        rows.setdefault((dataset, model), []).append(row)
    return rows


def _figure(results):
    """`0.8784 ± 0.0021 (3)`: mean ± sd (ddof 0) of test accuracy and the number of seeds."""
    accuracies = [row["accuracy"] for row in results]
    return f"{statistics.fmean(accuracies):.4f} ± {statistics.pstdev(accuracies):.4f} ({len(accuracies)})"


def _seconds(results):
    seconds = [row["train_seconds"] for row in results if row.get("train_seconds") is not None]
    return f"{statistics.fmean(seconds):,.0f}" if seconds else ""


def _parameters(results):
    return f"{results[0]['parameters']:,}" if results[0].get("parameters") else ""


def command(dataset, row):
    """The `accuracy.py` command that measures `row` on `dataset`: the options its name's
    `@` parts stand for (`accuracy.row_suffix`), e.g. `@768@v2000@b200000@cosine`."""
    model, *parts = row.split("@")
    if "epoch_cosine" in parts:  # measured when the cosine schedule set its rate once an epoch
        return "(the per-epoch cosine schedule of then; the per-batch one replaced it)"
    options = []
    for part in parts:
        for prefix, flag in (
            ("v", "--max-tokens"),
            ("e", "--epochs"),
            ("b", "--bigram-buckets"),
            ("n", "--train-rows"),
            ("adv", "--adversarial"),
        ):
            if part.startswith(prefix) and part[len(prefix) :].replace(".", "", 1).isdigit():
                options.append(f"{flag} {part[len(prefix) :]}")
                break
        else:
            options.append(
                {"dev": "--official-validation", "split_long_sentences": "--split-long-sentences"}.get(
                    part, f"--length {part}" if part.isdigit() else f"--lr-schedule {part}"
                )
            )
    return " ".join(["python benchmarks/accuracy.py --datasets", dataset, "--models", model, *options, "--seeds 0 1 2"])


def _code(text):
    return f"`{text}`" if text.startswith("python ") else text


def _dates(results):
    """`2026-11-21 to 2026-12-01`: the dates of a table's results."""
    dates = {row["date"] for rows in results for row in rows if "date" in row}
    if any("date" not in row for rows in results for row in rows):
        dates |= set(UNDATED_ACCURACY)
    first, last = min(dates), max(dates)
    return first if first == last else f"{first} to {last}"


def dataset_rows(results, dataset):
    """`(model, setting, row name, results)` of a dataset's table, in order."""
    rows = []
    if (dataset, "auto+defaults") in results:  # what `train` gives without --model, first
        rows.append(("no --model (auto)", "defaults", "auto+defaults", results[(dataset, "auto+defaults")]))
    for model in PAPER_MODELS:
        for setting, name in (("defaults", f"{model}+defaults"), ("chosen recipe", RECIPES[dataset].get(model))):
            if name and (dataset, name) in results:
                rows.append((model, setting, name, results[(dataset, name)]))
    for name, title in BASELINES.items():
        if (dataset, name) in results:
            rows.append((title, "baseline", name, results[(dataset, name)]))
    return rows


def accuracy_section(results):
    lines = [
        "## Accuracy",
        "",
        "Test accuracy, mean ± sd over seeds (their number in brackets), read once per seed after the "
        "recipe was chosen on training data. `defaults`: `keras-textattn train --model M --data FILE` "
        "with nothing else (the first row: without `--model`, the race of `--model auto`, the guides' "
        '"Which model"); `chosen recipe`: the settings held-out data chose for that model and dataset '
        '(the command beside each row measures it; the guides\' "Which model" gives the `train` flags). Train seconds '
        "include fitting the encoder. Dual-axial and scalable attention's rows predate their softplus's "
        "hand-written gradient (2026-12-02); they still hold: the forward pass is the same formula, the "
        "gradient the same but at exactly 0, and SST-2's dual-axial defaults gave the same figures to the "
        "digit on the old and the new commit (seed 0). IMDB's HCAN defaults and the HCAN and dual-axial "
        "recipes ran through `train()` before it chose the batch from the training rows (2026-12-02): they "
        "trained at batch 32, as `train --batch-size 32` still does; without it, they now take 128. The "
        "NB-SVM and cross-validated TF-IDF + LR rows (2026-12-03) ran beside other benchmarks on the 2 cores: "
        "their seconds are longer than alone. The `auto+defaults` rows (2026-12-07) race four candidates, "
        "the GloVe and the bigram ones included (a race: about the sum of its candidates' seconds). LAMA's and "
        "CSPAN's defaults rows (2026-12-07) start from GloVe 6B 50-d, their default on English texts since "
        'then (the guides\' "Vectors chosen from the texts"); their defaults from random vectors are in git '
        "history. IMDB's HCAN rows predate the cut of hierarchical batches to their most sentences and longest "
        "sentence (2026-12-07, from 20,000 training rows on): they read whole padded batches; the race's "
        "`hcan+fast` row has the cut. Every row ran through `train()` in Python; until 2026-12-07 the "
        "command line read whole padded batches where `train()` cut them (`--distribute none` was not read "
        "as no strategy), so the same command took longer then than these rows say.",
        "",
    ]
    for dataset, title in DATASETS.items():
        lines += [
            f"### {title}",
            "",
            "| model | setting | test accuracy | train s | parameters | command |",
            "| --- | --- | ---: | ---: | ---: | --- |",
        ]
        shown = dataset_rows(results, dataset)
        for model, setting, name, rows in shown:
            lines.append(
                f"| {model} | {setting} | {_figure(rows)} | {_seconds(rows)} | {_parameters(rows)} | "
                f"{_code(command(dataset, name))} |"
            )
        lines += ["", f"Machine: {MACHINE}. Measured {_dates([rows for *_, rows in shown])}.", ""]
        if dataset in PLOTS:
            title, image = PLOTS[dataset]
            lines += [
                f"![{title}](benchmarks/results/{image})",
                "",
                f"Command: `python benchmarks/accuracy.py --datasets {dataset} --plot benchmarks/results/{image}`.",
                "",
            ]
    return lines


def cross_validated_section():
    """The datasets with no test split (`cross_validation.WHOLE`: MR), each row's accuracy over k folds."""
    results = accuracy.read_results(RESULTS / "cross_validation.jsonl")
    rows = [r for r in results if r["dataset"] in cross_validation.WHOLE]
    datasets = " ".join(sorted({r["dataset"] for r in rows}))
    return [
        "### MR (10,662 snippets; no test split: 10-fold cross-validation)",
        "",
        "Every row trains on nine tenths and is scored on the tenth left out, for each tenth; the figure "
        "is the share of all rows scored right (pooled), the folds stratified and the same for every row. "
        "`auto+defaults` is `train` without `--model`: it chooses its model on a tenth of the fold's "
        "training rows that it holds out, and is scored on the fold, which played no part in the choice.",
        "",
        cross_validation.report(rows),
        "",
        f"Command: `python benchmarks/cross_validation.py --dataset {datasets} --folds 10 --models ROW --seeds 0`. "
        f"Machine: {MACHINE}.",
        "",
    ]


def long_texts_section():
    """Cut against windows (`long_texts.py`) for texts longer than the model reads."""
    rows = accuracy.read_results(RESULTS / "long_texts.jsonl")
    dates = sorted({row["date"] for row in rows})
    return [
        "### Texts longer than the model reads: cut or windows",
        "",
        "A model trained at the length shown, on the training split less a tenth held out by the script, "
        "reading each long text's start or a window of it drawn at random each epoch (`train "
        "--sample-windows`); on that tenth, a text longer than the model reads cut, or read in windows of "
        "that length half of it apart with their probabilities' mean or their log-probabilities' mean; the "
        "test split read once after, cut against windows (`--long-texts windows`), with CPU milliseconds "
        "per text on 2 cores (other benchmarks running beside it).",
        "",
        long_texts.report(rows),
        "",
        f"Command: `python benchmarks/long_texts.py --datasets imdb` and `--datasets r8 --length 128`, each "
        "with `--training start` and `--training windows` (`train --sample-windows`), `--seed 0` and `1`. "
        f"Machine: {MACHINE}. Measured {' to '.join(sorted({dates[0], dates[-1]}))}.",
        "",
    ]


def multi_label_section():
    """GoEmotions, multi-label (`multi_label.py`): the paper models against TF-IDF + one-vs-rest LR."""
    rows = accuracy.read_results(RESULTS / "multi_label.jsonl")
    if not rows:
        return []
    dates = sorted({row["date"] for row in rows})
    return [
        "### Multi-label: GoEmotions",
        "",
        "28 labels, 43,410 training comments (16% with 2 to 5 labels). Each model trains on the training split "
        "less the tenth `train()` holds out, on which each label's threshold is chosen (and the baseline's C, "
        "of 1, 4 and 10); scores on the dev split (the official test split is not stored), read once per row "
        "after those choices. Seconds: the whole training command on 2 cores, thresholds included (other "
        "benchmarks running beside it). defaults: `train()`'s multi-label rule, up to 20 epochs with early "
        "stopping after 2 without a lower validation loss; epochs 3: a single-label run's default, what the "
        f"rule was chosen against on the held-out column. Published: {multi_label.PUBLISHED}.",
        "",
        multi_label.report(rows),
        "",
        "Command: `python benchmarks/multi_label.py` (every model with defaults, and the baseline) and "
        "`--models M --recipe epochs=10` (or `epochs=3`, `class_weight=balanced`). "
        "Rows measured before 2026-12-04 trained without the macro F1 that multi-label training now logs "
        "(a metric: the same weights and scores; its cost a step is a count per label and threshold). ",
        f"Machine: {MACHINE}. Measured {' to '.join(sorted({dates[0], dates[-1]}))}.",
        "",
    ]


def recheck_section(results):
    """Rows of accuracy.jsonl measured again after the code changed (`recheck.jsonl`, those with a
    `note`): the figure recorded beside the one measured, and what the change was."""
    lines = [
        "## Do the figures still hold?",
        "",
        "Rows measured again after a change to the models, layers or training (`accuracy.py --results "
        "benchmarks/results/recheck.jsonl`), against the figure the table holds.",
        "",
        "| dataset | row | seed | recorded | measured again | on | what changed |",
        "| --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for line in (RESULTS / "recheck.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else {}
        if "note" not in row:
            continue
        recorded = next(
            (r["accuracy"] for r in results.get((row["dataset"], row["model"]), []) if r["seed"] == row["seed"]), None
        )
        lines.append(
            f"| {row['dataset']} | `{row['model']}` | {row['seed']} | "
            f"{'' if recorded is None else recorded} | {row['accuracy']} | {row['date']} | {row['note']} |"
        )
    return [*lines, ""]


def race_section():
    """The race (`race.py`): per dataset, each entry's whole command, against the baselines of the same run."""
    rows = race.newest(RESULTS / "race.jsonl")
    lines = [
        "### Time to accuracy: whole commands",
        "",
        "Each entry is one process, timed from its start to its test accuracy known: reading the data, "
        "importing TensorFlow, fitting the encoder, training and scoring all count. Ratios are against "
        "fastText and TF-IDF + LR measured in the same run. Seed 0. Where the seconds have a range beside "
        "them, the entries ran in turn that many times (`race.py --repeats N`): the row is the run of median "
        "seconds, the range that of all its runs (this machine's seconds for the same command vary by a "
        "third and more from one spell to another). Until 2026-12-08 a paper model's process also spent "
        "1.4-1.9 s at its end in the interpreter's teardown, which the command no longer waits for.",
        "",
        "| dataset | entry | test accuracy | wall s | peak MB | vs fastText | vs TF-IDF + LR |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        against = [row["baselines"][name] for name in race.BASELINES]
        ratio = [f"{row['wall_seconds'] / base['wall_seconds']:.1f}x" if base else "" for base in against]
        lines.append(
            f"| {row['dataset']} | {row['entry']} | {row['accuracy']:.4f} | {_seconds_of(row)} | "
            f"{row['peak_mb']:,.0f} | {ratio[0]} | {ratio[1]} |"
        )
    dates = sorted({row["date"] for row in rows})
    span = " to ".join(sorted({dates[0], dates[-1]}))
    return [
        *lines,
        "",
        f"Command: `python benchmarks/race.py`. Machine: {MACHINE}. Measured {span}.",
        "",
        "![Test accuracy against the whole command's seconds](benchmarks/results/race.png)",
        "",
    ]


def _seconds_of(row):
    """A race row's wall seconds, with the range of its runs where it has `repeats`."""
    if "repeats" not in row:
        return f"{row['wall_seconds']:.1f}"
    return f"{row['wall_seconds']:.1f} ({min(row['repeats']):.1f}-{max(row['repeats']):.1f})"


def _names(models):
    """`a, b and c`."""
    return " and ".join([", ".join(models[:-1]), models[-1]] if len(models) > 1 else models)


def _update_seconds(seconds):
    """A dense update's seconds: none measured with adversarial training; "≈ 0" where a whole step
    timed no longer than its forward/backward pass alone (the update is inside the timing's noise)."""
    if seconds is None:
        return ""
    return "≈ 0" if seconds < 0.5 else str(round(seconds))


def breakdown_section():
    """Where an IMDB epoch's time goes (`breakdown.py`), per paper model at its IMDB recipe."""
    measured = json.loads((RESULTS / "breakdown.json").read_text(encoding="utf-8"))
    cut = [row["model"] for row in measured["models"] if row["cut_padding"]]
    uncut = [row["model"] for row in measured["models"] if not row["cut_padding"]]
    others = f", padded to the model's length for {_names(uncut)}" if uncut else ""
    lines = [
        "### Where an IMDB epoch's time goes",
        "",
        "Seconds of one epoch of each paper model at its IMDB recipe, by phase, on batches as a run makes "
        f"them: {measured['models'][0]['batch_size']} rows (what `train` chooses for IMDB's training rows), "
        f"cut to their longest text for {_names(cut)} (the models that read any length){others}; steps timed on "
        f"{measured['models'][0]['steps_timed']} batches and scaled to the epoch's. Encoding: the first epoch "
        "encodes the texts, later ones read their ids from memory. Forward/backward: one pass (adversarial "
        "training adds a second, from the perturbed embeddings on). An epoch's steps with sparse embedding "
        "updates (`--embedding-updates sparse`) and dense ones (Keras's Adam); without adversarial training, "
        "a dense step less its forward/backward is the update and Keras's own work (≈ 0: no longer than the "
        "forward/backward timed alone). Importing the training "
        "package takes "
        f"{measured['import_seconds']:.1f} s once per command.",
        "",
        "| model | encoder fit | encode (1st epoch) | later epochs' input | forward/backward | epoch, sparse | "
        "epoch, dense | dense / sparse | update, dense | a run's updates | validation |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for row in measured["models"]:
        lines.append(
            f"| {row['model']} | {row['encoder_seconds']:.1f} | {row['encode_seconds']:.1f} | "
            f"{row['cached_pass_seconds']:.1f} | {row['forward_backward_seconds']:.0f} | "
            f"{row['sparse_epoch_seconds']:.0f} | {row['dense_epoch_seconds']:.0f} | "
            f"{row['dense_epoch_seconds'] / row['sparse_epoch_seconds']:.2f}x | "
            f"{_update_seconds(row['dense_optimizer_seconds'])} | {row['run_updates']} | "
            f"{row['validation_seconds']:.1f} |"
        )
    return [
        *lines,
        "",
        f"Command: `python benchmarks/breakdown.py`. Machine: {MACHINE}. Measured {measured['date']}.",
        "",
    ]


def throughput_section():
    layers = json.loads((RESULTS / "throughput_layers.json").read_text(encoding="utf-8"))
    models = json.loads((RESULTS / "throughput_end_to_end.json").read_text(encoding="utf-8"))
    flops = {(row["layer"], row["length"]): row["flops"] for row in layers["flops"]}
    table = throughput._markdown(layers["layers"], flops, models["end_to_end"])
    return [
        "## Speed",
        "",
        "How long a whole command takes against fastText and TF-IDF + LR, where an epoch's time goes, "
        "and the examples per second of each layer against Keras's `MultiHeadAttention` at the same "
        "width and of each paper model and its exports end to end.",
        "",
        *race_section(),
        *breakdown_section(),
        table.strip(),
        "",
        f"Command: `python benchmarks/throughput.py`. Machine: {MACHINE}. Measured "
        f"{MEASURED['throughput_layers.json']} (layers) and {MEASURED['throughput_end_to_end.json']} (models).",
        "",
        "![Layer throughput](benchmarks/results/throughput_layers.png)",
        "",
        *claims_section(),
    ]


def claims_section():
    claims = json.loads((RESULTS / "throughput_claims.json").read_text(encoding="utf-8"))["claims"]
    return [
        paper_claims.markdown(claims),
        "",
        "Each pair at the CPU preset's width in one process, random ids, so the models' compute alone; a speedup "
        "above 1 is the paper model training faster. Command: `python benchmarks/throughput.py --no-layers "
        f"--no-end-to-end`. Machine: {MACHINE}. Measured {MEASURED['throughput_claims.json']}.",
        "",
    ]


def memory_section():
    measured = json.loads((RESULTS / "memory.json").read_text(encoding="utf-8"))
    return [
        "## Memory: streamed against in-memory data",
        "",
        "Peak memory and speed of one epoch of scalable attention on IMDB's reviews copied 1, 4 and 16 "
        "times, read as streamed shards or into memory.",
        "",
        memory.table(measured["results"]).strip(),
        "",
        f"Command: `{measured['command']}`. Machine: {measured['machine']}. Measured {MEASURED['memory.json']}.",
        "",
    ]


def page():
    """BENCHMARKS.md as this script writes it."""
    lines = [
        "# Benchmarks",
        "",
        "Generated by `python benchmarks/report.py` from `benchmarks/results/`; do not edit by hand. "
        'What was tried on the way to these recipes, and what did not help: the docs\' "What we tried".',
        "",
    ]
    results = read_accuracy()
    lines += accuracy_section(results) + cross_validated_section() + long_texts_section() + multi_label_section()
    lines += recheck_section(results)
    lines += throughput_section() + memory_section()
    return "\n".join(lines).rstrip() + "\n"


def readme_table():
    """README's results table: per dataset, `train` without --model, the best paper model's defaults and
    chosen recipe, and the linear baselines."""
    results = read_accuracy()
    lines = [
        "| dataset | no --model | paper model, defaults | paper model, chosen recipe | TF-IDF + LR | NB-SVM "
        "| fastText |",
        "| --- | ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for dataset in DATASETS:
        rows = dataset_rows(results, dataset)

        def best(setting):
            chosen = [row for row in rows if row[1] == setting and row[0] in PAPER_MODELS]
            if not chosen:
                return "—"
            model, _, _, result = max(chosen, key=lambda row: statistics.fmean(r["accuracy"] for r in row[3]))
            return f"{model} {statistics.fmean(r['accuracy'] for r in result):.3f}"

        baseline = {
            name: statistics.fmean(r["accuracy"] for r in results[(dataset, name)])
            for name in ("auto+defaults", "tfidf_lr", "nbsvm", "fasttext")
            if (dataset, name) in results
        }
        shown = {name: f"{value:.3f}" for name, value in baseline.items()}
        lines.append(
            f"| {dataset} | {shown.get('auto+defaults', '—')} | {best('defaults')} | {best('chosen recipe')} "
            f"| {shown.get('tfidf_lr', '—')} | {shown.get('nbsvm', '—')} | {shown.get('fasttext', '—')} |"
        )
    return "\n".join(lines)


def readme():
    """README.md with its results table as this script writes it."""
    text = README.read_text(encoding="utf-8")
    start, end = text.index(README_START) + len(README_START), text.index(README_END)
    return text[:start] + "\n" + readme_table() + "\n" + text[end:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 where a committed page differs")
    args = parser.parse_args(argv)
    written = {PAGE: page(), README: readme()}
    stale = [path.name for path, text in written.items() if path.read_text(encoding="utf-8") != text]
    if args.check:
        if stale:
            print(f"stale: {', '.join(stale)}; run python benchmarks/report.py", file=sys.stderr)
            return 1
        return 0
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    print(f"Wrote {PAGE.name} ({len(written[PAGE]):,} characters) and README.md's results table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
