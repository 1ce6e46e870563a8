"""The race on CPUs: fastText, TF-IDF + LR and the paper models, each a whole command.

    python benchmarks/race.py                                  # IMDB, AG News (5k), SST-2; every entry
    python benchmarks/race.py --datasets imdb --entries fasttext tfidf_lr scalable_attention+bigrams
    python benchmarks/race.py --quick                          # TREC, two entries (the test's)
    python benchmarks/race.py --datasets imdb --repeats 3      # each entry's median of 3 runs

Each entry runs in a process of its own, timed from its start to its end, once its test accuracy
is known (the run folder written, for a paper model): reading the data, importing TensorFlow and
fitting the encoder count, as they do for a user, and the process ends as the `keras-textattn`
command does (`exit_without_teardown`). Its peak memory is the process's. The ratios are against
fastText and TF-IDF + LR measured in the same run, on the same machine. Paper models train as
`keras-textattn train --model M --data TRAIN --test-data TEST` with the entry's options
(`ENTRIES`); the baselines are `accuracy.py`'s (`fasttext_on`, `tfidf_on`), their files read
without TensorFlow. With `--repeats N` every entry runs N times, the entries in turn (a slow spell of
the machine then falls on several of them, not on one), and its row is the run of median seconds,
the others' seconds beside it (`repeats`). Results: `benchmarks/results/race.jsonl` (appended) and a time-to-accuracy
plot of its newest row of each dataset and entry.
"""

import argparse
import csv
import datetime
import gzip
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import accuracy

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "race.jsonl"
PLOT = ROOT / "benchmarks" / "results" / "race.png"
DATASETS = ("imdb", "ag_news", "sst2")
BASELINES = ("fasttext", "tfidf_lr")
# name: (model, `train()` options): each paper model as `train` gives it with nothing else and
# with `--preset fast`, and the fast routes to accuracy found on IMDB (scalable attention's recipe).
IMDB_BIGRAMS = {"max_tokens": 2000, "bigram_buckets": 200_000, "epochs": 2, "lr_schedule": "cosine"}
ENTRIES = {
    **{f"{model}+defaults": (model, {}) for model in accuracy.PAPER_MODELS},
    **{f"{model}+fast": (model, {"preset": "fast"}) for model in accuracy.PAPER_MODELS},
    "scalable_attention+bigrams": ("scalable_attention", IMDB_BIGRAMS),
    "scalable_attention+bigrams_1_epoch": ("scalable_attention", {**IMDB_BIGRAMS, "epochs": 1}),
}


def read_split(data_dir, options):
    """`(texts, labels)` of one of `accuracy.DATASETS`' files, read with Python's csv (no TensorFlow):
    its text columns joined by a space, its labels as strings (integers less their offset)."""
    text_columns = options.get("text_column", ["text"])
    label_column, offset = options.get("label_column", "label"), options.get("label_offset", 0)
    with gzip.open(data_dir / options["path"], "rt", encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle)
        header = next(rows) if options.get("header", True) else None

        def column(name):
            return header.index(name) if isinstance(name, str) else name

        texts, labels = [], []
        for row in rows:
            texts.append(" ".join(row[column(name)] for name in text_columns))
            label = row[column(label_column)]
            labels.append(str(int(label) - offset) if offset else label)
    return texts, labels


def run_entry(data_dir, dataset, entry, seed):
    """The entry's test accuracy, trained in this process."""
    train_file, test_file, _, _ = accuracy.DATASETS[dataset]
    if entry in BASELINES:
        train, test = read_split(data_dir, train_file), read_split(data_dir, test_file)
        run = accuracy.fasttext_on if entry == "fasttext" else accuracy.tfidf_on
        return run(train, test, seed)["accuracy"]
    from keras_textattn.training import train

    model, options = ENTRIES[entry]
    with tempfile.TemporaryDirectory() as folder:
        metrics = train(
            model, accuracy.files(data_dir, dataset), os.path.join(folder, "run"), seed=seed, verbose=0, **options
        )
    return metrics["accuracy"]["test"]


def race(data_dir, dataset, entry, seed):
    """One entry in a process of its own: its row (wall seconds, test accuracy, peak MB)."""
    start = time.perf_counter()
    child = subprocess.run(
        [sys.executable, __file__, "--one", dataset, entry, "--seed", str(seed), "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if child.returncode:
        raise SystemExit(f"{dataset} {entry} failed:\n{child.stderr[-3000:]}")
    row = json.loads(child.stdout.strip().splitlines()[-1])
    return {"dataset": dataset, "entry": entry, "seed": seed, "wall_seconds": wall, **row}


def median_runs(runs):
    """Of `runs` (rows of `race`, the same entries in each round), one row per dataset and entry, in
    their first order: the run of median seconds (the lower of two middle ones), with `repeats`, the
    seconds of every run, where there were several."""
    by_entry = {}
    for row in runs:
        by_entry.setdefault((row["dataset"], row["entry"]), []).append(row)
    chosen = []
    for rows in by_entry.values():
        median = statistics.median_low(row["wall_seconds"] for row in rows)
        row = next(row for row in rows if row["wall_seconds"] == median)
        chosen.append({**row, "repeats": [r["wall_seconds"] for r in rows]} if len(rows) > 1 else row)
    return chosen


def peak_megabytes():
    """This process's peak resident memory: Linux's VmHWM, which starts afresh at exec (getrusage's
    maxrss keeps that of the process that forked this one, here a benchmark or test runner)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kilobytes
    raise SystemExit("no VmHWM in /proc/self/status: race.py measures memory on Linux")


def ratios(rows):
    """Each row's wall time against fastText's and TF-IDF + LR's of the same dataset and run."""
    by_entry = {(row["dataset"], row["entry"]): row for row in rows}
    lines = []
    for row in rows:
        against = []
        for baseline in BASELINES:
            base = by_entry.get((row["dataset"], baseline))
            if base and row["entry"] != baseline:
                against.append(f"{row['wall_seconds'] / base['wall_seconds']:.1f}x {baseline}")
        lines.append(
            f"{row['dataset']:8} {row['entry']:30} {row['accuracy']:.4f}  {row['wall_seconds']:7.1f} s  "
            f"{row['peak_mb']:6.0f} MB  {', '.join(against)}"
        )
    return "\n".join(lines)


def newest(path):
    """The newest row of each dataset and entry in the results file `path`, each with `baselines`:
    the rows of `BASELINES` measured in its run on its dataset, by name (None where its run had
    none). A row's run is its `run` (the race's start); rows written before race.py recorded it
    belong to the run of the latest fastText row of their dataset at or above them in the file."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    latest_fasttext, runs = {}, []
    for index, row in enumerate(rows):
        if row["entry"] == BASELINES[0]:
            latest_fasttext[row["dataset"]] = index
        runs.append(row.get("run") or f"line {latest_fasttext.get(row['dataset'])}")
    baselines = {(run, row["dataset"], row["entry"]): row for run, row in zip(runs, rows) if row["entry"] in BASELINES}
    newest_rows = {}
    for run, row in zip(runs, rows):
        of_run = {name: baselines.get((run, row["dataset"], name)) for name in BASELINES}
        newest_rows[(row["dataset"], row["entry"])] = {**row, "baselines": of_run}
    return list(newest_rows.values())


def plot(rows, path):
    """Test accuracy against wall seconds (log scale), one panel per dataset, each point named in
    the panel's legend below it (labels beside points close in time and accuracy overlapped)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = plt.get_cmap("tab10").colors
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    figure, panels = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.5), squeeze=False)
    for panel, dataset in zip(panels[0], datasets):
        for index, row in enumerate(row for row in rows if row["dataset"] == dataset):
            marker = "s" if row["entry"] in BASELINES else "o^D"[index // len(colors) % 3]
            color = colors[index % len(colors)]
            panel.scatter(row["wall_seconds"], row["accuracy"], marker=marker, color=color, label=row["entry"])
        panel.set_xscale("log")
        panel.set(title=dataset, xlabel="wall seconds of the whole command (log)", ylabel="test accuracy")
        panel.grid(alpha=0.3)
        panel.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=110, bbox_inches="tight")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", choices=list(accuracy.DATASETS), default=list(DATASETS))
    parser.add_argument("--entries", nargs="+", choices=[*BASELINES, *ENTRIES], default=[*BASELINES, *ENTRIES])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each entry, in turn; a row is the median run")
    parser.add_argument(
        "--data-dir",
        type=pathlib.Path,
        default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", accuracy.DEFAULT_DATA)),
    )
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS, help="JSON lines, appended")
    parser.add_argument("--plot", type=pathlib.Path, default=PLOT)
    parser.add_argument("--quick", action="store_true", help="TREC: fastText and scalable attention's defaults")
    parser.add_argument("--one", nargs=2, metavar=("DATASET", "ENTRY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        dataset, entry = args.one
        result = run_entry(args.data_dir, dataset, entry, args.seed)
        print(json.dumps({"accuracy": float(result), "peak_mb": peak_megabytes()}))
        from keras_textattn_cli.main import exit_without_teardown

        exit_without_teardown(0)  # as the `keras-textattn` command ends
    if args.quick:
        args.datasets, args.entries = ["trec"], ["fasttext", "scalable_attention+defaults"]
    if args.repeats < 1:
        parser.error(f"--repeats must be 1 or more; got {args.repeats}")
    runs, run = [], datetime.datetime.now().isoformat(timespec="seconds")  # the run its rows share
    for _ in range(args.repeats):
        for dataset in args.datasets:
            for entry in args.entries:
                runs.append(race(args.data_dir, dataset, entry, args.seed))
                print(ratios(runs[-1:]), flush=True)
    rows = median_runs(runs)
    print(ratios(rows))
    machine = f"{os.cpu_count()} CPU cores ({platform.machine()})"
    with args.results.open("a", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({**row, "machine": machine, "date": run[:10], "run": run}) + "\n")
    plot(newest(args.results), args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
