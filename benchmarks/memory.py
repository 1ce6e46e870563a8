"""Peak memory and speed of training on 1x, 4x and 16x the IMDB training file: streamed
shards against today's in-memory loader, in the same run.

    python benchmarks/memory.py                        # scales 1 4 16: about half an hour on 2 CPU cores
    python benchmarks/memory.py --scales 1 2 --quick   # smoke check (CI), about a minute

The data: IMDB's 25,000 training reviews (../shared/data/imdb/train.csv.gz), repeated: the
streamed input is a folder of N copies of the gzip file (N shards of real reviews); the
in-memory input is one CSV file holding the same N x 25,000 rows (the only input the
in-memory loader reads). Each (loader, scale) trains in a process of its own, one epoch of a
small scalable-attention model (the point is the data path, not the model) with `train()`
as a user runs it (vocabulary, validation carve, one epoch, the scores on every split), and
reports the process's peak resident memory (`ru_maxrss`) and the epoch's examples per
second. The claim: streamed, the 16x run's peak is within 1.3x of the 1x run's.

Also the vocabulary of `--adapt-rows` samples: the share of the 20,000-token vocabulary
counted on all 25,000 IMDB reviews that a vocabulary counted on a seeded sample of N
reviews shares (the default, 200,000 rows, counts every shared dataset whole).

Writes `memory.json` and `memory.md` to `--output-dir`.
"""

import argparse
import csv
import gzip
import json
import os
import pathlib
import platform
import resource
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[1] / "shared" / "data"
MODEL = {"embedding_dim": 16, "fc_units": 16}


def make_inputs(source, folder, scale):
    """`(shards folder, single file)` holding `scale` copies of the rows of `source`."""
    shards = folder / f"shards-{scale}x"
    shards.mkdir()
    for copy in range(scale):
        shutil.copyfile(source, shards / f"train-{copy:03d}.csv.gz")
    single = folder / f"train-{scale}x.csv.gz"
    with gzip.open(source, "rt", encoding="utf-8", newline="") as handle:
        header, *rows = list(csv.reader(handle))
    with gzip.open(single, "wt", encoding="utf-8", newline="", compresslevel=1) as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for _ in range(scale):
            writer.writerows(rows)
    return shards, single


def measure(loader, data, output, quick):
    """Train once in this process; print the measurement as JSON."""
    from keras_textattn.training import train

    metrics = train(
        "scalable_attention",
        str(data),
        str(output),
        epochs=1,
        sequence_length=64 if quick else 128,
        batch_size=64,
        model_kwargs=MODEL,
        stream=True if loader == "streamed" else None,
        verbose=0,
    )
    print(
        json.dumps(
            {
                "loader": loader,
                "rows": metrics["rows"]["train"] + metrics["rows"]["validation"],
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "examples_per_second": metrics["examples_per_second"],
                "validation_accuracy": metrics["accuracy"]["validation"],
            }
        )
    )


def vocabulary_overlap(source, sizes=(2500, 5000, 10000, 20000)):
    """`{sample rows: share of the whole-file vocabulary in the sample's}` (20,000 tokens)."""
    from keras_textattn.datasets import load_dataset
    from keras_textattn.datasets import sample_rows
    from keras_textattn.text import TextEncoder

    data = load_dataset(str(source), ("train",))
    total = data.rows["train"]

    def vocabulary(rows):
        encoder = TextEncoder(max_tokens=20000)
        encoder.adapt(sample_rows(data["train"], rows, total))
        return set(encoder.get_vocabulary()[2:])

    whole = vocabulary(total)
    return {rows: len(vocabulary(rows) & whole) / len(whole) for rows in sizes}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument(
        "--data-dir", type=pathlib.Path, default=pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", DEFAULT_DATA))
    )
    parser.add_argument("--output-dir", type=pathlib.Path, default=HERE / "results")
    parser.add_argument("--quick", action="store_true", help="every 12th review (2,084) instead of all 25,000")
    parser.add_argument("--one", nargs=3, metavar=("LOADER", "DATA", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return measure(*args.one, args.quick)

    source = args.data_dir / "imdb" / "train.csv.gz"
    if not source.exists():
        sys.exit(f"IMDB's training file is not at {source}; pass --data-dir (the folder of ../shared/data)")
    results = []
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        if args.quick:
            with gzip.open(source, "rt", encoding="utf-8", newline="") as handle:
                header, *rows = list(csv.reader(handle))
            source = folder / "train.csv.gz"
            with gzip.open(source, "wt", encoding="utf-8", newline="") as handle:
                csv.writer(handle).writerows([header, *rows[::12]])  # the file is sorted by label
        for scale in args.scales:
            shards, single = make_inputs(source, folder, scale)
            for loader, data in (("streamed", shards), ("in_memory", single)):
                run = subprocess.run(
                    [sys.executable, __file__, "--one", loader, str(data), str(folder / f"run-{loader}-{scale}")]
                    + (["--quick"] if args.quick else []),
                    capture_output=True,
                    text=True,
                )
                if run.returncode:
                    sys.exit(f"{loader} at {scale}x failed:\n{run.stderr[-3000:]}")
                result = {"scale": scale, **json.loads(run.stdout.strip().splitlines()[-1])}
                print(json.dumps(result), flush=True)
                results.append(result)
    overlap = vocabulary_overlap(
        args.data_dir / "imdb" / "train.csv.gz", (1000,) if args.quick else (2500, 5000, 10000, 20000)
    )
    args.output_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "command": " ".join(["python", "benchmarks/memory.py", *sys.argv[1:]]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "results": results,
        "vocabulary_overlap": overlap,
    }
    (args.output_dir / "memory.json").write_text(json.dumps(report, indent=1))
    text = (
        table(results)
        + "\n| adapt rows (of 25,000) | share of the whole-file vocabulary |\n|---|---|\n"
        + "".join(f"| {rows:,} | {share:.3f} |\n" for rows, share in overlap.items())
    )
    (args.output_dir / "memory.md").write_text(text)
    print(text)


def table(results):
    """Markdown: per loader and scale, peak memory (and its ratio to the loader's smallest scale) and speed."""
    lines = ["| loader | scale | rows | peak RSS (MB) | vs smallest scale | examples/s |", "|---|---|---|---|---|---|"]
    for loader in ("streamed", "in_memory"):
        mine = [r for r in results if r["loader"] == loader]
        for result in mine:
            lines.append(
                f"| {loader} | {result['scale']}x | {result['rows']:,} | {result['peak_rss_mb']:.0f} | "
                f"{result['peak_rss_mb'] / mine[0]['peak_rss_mb']:.2f}x | {result['examples_per_second']:.0f} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
