"""The documentation as a reader meets it: README and the guides' commands parse, README's walk
runs as written, their Python blocks run on the paths they name, the options and keywords their
prose names exist, BENCHMARKS.md is what `benchmarks/report.py` writes, and the site builds
(`mkdocs build --strict`) and renders in headless Chromium."""

import argparse
import contextlib
import dataclasses
import functools
import http.server
import importlib.util
import inspect
import json
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from keras_textattn_cli import build_parser
from keras_textattn_cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# What a reader reads: README, the guides and the other pages of the site, CONTRIBUTING.
DOCUMENTS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
# The one line that needs the internet (TFDS downloads IMDB on first use).
TFDS_LINE = 'data = load_dataset("imdb_reviews", splits=("train", "validation", "test"))\n'
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _text(path):
    return path.read_text(encoding="utf-8")


def _subcommands():
    (choices,) = [
        action.choices for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)
    ]
    return choices


def _shell_commands(text):
    """The `keras-textattn ...` commands of a document's bash blocks, continuation lines joined."""
    return [
        part.strip()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S)
        for line in block.replace("\\\n", " ").splitlines()
        for part in re.split(r"&&", line.split(" # ")[0])
        if part.strip().startswith("keras-textattn ")
    ]


def _python_blocks():
    """`(document, block)` of every ```python block of the documents, in their order."""
    return [(path, block) for path in DOCUMENTS for block in re.findall(r"```python\n(.*?)```", _text(path), re.S)]


def test_the_documents_name_every_subcommand():
    """README's and Getting started's sentences listing the subcommands name each one `--help` offers."""
    for path in (README, ROOT / "docs" / "getting-started.md"):
        (sentence,) = re.findall(r"has the subcommands([^.]*)\.", " ".join(_text(path).split()))
        assert set(re.findall(r"`(\w+)`", sentence)) == set(_subcommands()), path.name


def test_the_documented_commands_parse():
    """Every command README and the guides show in a shell block parses as written, and every
    option they or BENCHMARKS.md name anywhere (`train --init-from`, in prose too) is one its
    subcommand has: a renamed flag fails here."""
    subcommands = _subcommands()
    shown = [command for path in DOCUMENTS for command in _shell_commands(_text(path))]
    assert len(shown) >= 20 and len(_shell_commands(_text(README))) == 5
    for command in shown:
        build_parser().parse_args(shlex.split(command)[1:])  # argparse exits (status 2) on what it refuses
    for path in [*DOCUMENTS, ROOT / "BENCHMARKS.md"]:
        named = re.findall(rf"`(?:keras-textattn )?({'|'.join(subcommands)})((?: [^`]*)?)`", _text(path))
        for subcommand, rest in named:
            options = subcommands[subcommand]._option_string_actions
            unknown = [flag for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest) if flag not in options]
            assert not unknown, f"{path.name}: `{subcommand}{rest}` names options `{subcommand}` has not: {unknown}"


@pytest.mark.real_data
def test_readme_walk_runs_as_written(lama_run, shared_data, tmp_path, monkeypatch, capsys):
    """README's walk after its install command (which trains `runs/lama-sst2`, here the shared LAMA
    run): predict, evaluate and both exports run as written, each ending as README says."""
    _working_folder(tmp_path, lama_run, shared_data, monkeypatch)
    walk = [command for command in _shell_commands(_text(README)) if not command.startswith("keras-textattn train")]
    assert [shlex.split(command)[1] for command in walk] == ["predict", "evaluate", "export", "export"]
    for command in walk:
        assert main(shlex.split(command)[1:]) == 0, command
    assert "A gripping, beautiful film." in capsys.readouterr().out
    assert (tmp_path / "work" / "report" / "metrics.json").is_file()
    assert (tmp_path / "work" / "models" / "lama" / "1" / "saved_model.pb").is_file()
    assert (tmp_path / "work" / "models" / "lama-tflite" / "model.tflite").is_file()


def _working_folder(tmp_path, lama_run, shared_data, monkeypatch):
    """A folder where the paths the documents name are real: `runs/lama-sst2` a finished run (the
    shared LAMA run) and `../shared/data` the datasets."""
    (tmp_path / "work" / "runs").mkdir(parents=True)
    (tmp_path / "work" / "runs" / "lama-sst2").symlink_to(lama_run, target_is_directory=True)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data, target_is_directory=True)
    monkeypatch.chdir(tmp_path / "work")


@pytest.mark.real_data
def test_python_blocks_run(lama_run, shared_data, tmp_path, monkeypatch, capsys):
    """Each ```python block of README and the guides runs in a namespace of its own, in a folder
    where the paths it names are real, and ends where a reader reads its results: a built model,
    batches, predictions, an attention page and picture, a printed label. The blocks that train
    a run are compiled, not run (training is what the other tests do)."""
    from keras_textattn import export

    _working_folder(tmp_path, lama_run, shared_data, monkeypatch)
    export.tflite(lama_run, "models/lama-tflite")
    export.onnx(lama_run, "models/lama-onnx")
    blocks = _python_blocks()
    assert sum(TFDS_LINE in block for _, block in blocks) == 1
    ran = {}
    for number, (path, block) in enumerate(blocks):
        code = compile(block.replace(TFDS_LINE, ""), f"{path.name} python block {number}", "exec")
        if "train(" not in block:
            namespace = {}
            exec(code, namespace)
            ran[(path.name, number)] = namespace
    namespaces = list(ran.values())
    assert len(namespaces) >= 6

    def the(name):
        return next(namespace for namespace in namespaces if name in namespace)

    assert the("probs")["model"].output.shape == (None, 2)
    assert the("encoder")["data"].label_names == ["World", "Sports", "Business", "Sci/Tech"]
    ids, labels = next(iter(the("encoder")["train"]))
    assert ids.shape == (64, 256) and labels.shape == (64,)
    (oil,) = the("predict_file")["predict"]("runs/lama-sst2", ["Oil prices rose."])  # the label TFLite, ONNX print
    assert capsys.readouterr().out.strip().splitlines()[-2:] == [oil["label"]] * 2
    assert [token["token"] for token in the("explanations")["e"].tokens] == [
        "A",
        "gripping",
        ",",
        "beautiful",
        "film",
        ".",
    ]
    assert "gripping" in pathlib.Path("map.html").read_text(encoding="utf-8") and pathlib.Path("map.png").stat().st_size


def test_documented_keyword_arguments_exist():
    """Each keyword the documents give one of the library's functions (`train(init_from=...)`,
    `LocalFile(..., stream=True)`) is a parameter of it (of `train`: a `TrainConfig` field)."""
    from keras_textattn.datasets import LocalFile
    from keras_textattn.inference import Classifier
    from keras_textattn.inference import predict
    from keras_textattn.training import TrainConfig
    from keras_textattn.training import train
    from keras_textattn.tuning import tune

    functions = {
        "LocalFile": LocalFile,
        "Classifier": Classifier,
        "predict": predict,
        "train": train,
        "tune": tune,
        "TrainConfig": TrainConfig,
    }
    parameters = {name: set(inspect.signature(function).parameters) for name, function in functions.items()}
    fields = {field.name for field in dataclasses.fields(TrainConfig)}
    parameters["train"] |= fields  # its **overrides
    parameters["tune"] |= fields
    calls = [
        call
        for path in DOCUMENTS
        for call in re.findall(rf"`(?:[\w.]+\.)?({'|'.join(functions)})\(([^`]*)\)`", _text(path))
    ]
    keywords = [(name, keyword) for name, arguments in calls for keyword in re.findall(r"(\w+)=", arguments)]
    assert len(keywords) >= 8
    for name, keyword in keywords:
        assert keyword in parameters[name], f"the documents: {name}({keyword}=...)"


def test_the_tuning_guides_config_is_the_shipped_one():
    """The YAML the tuning guide shows (`tuner_configs/lama.yaml`, annotated) is a valid config, and
    it is the shipped `lama.yaml`: the search space a user reads is the one `tune --config lama` runs."""
    import yaml

    from keras_textattn.tuning import load_config

    (block,) = re.findall(r"```yaml\n(.*?)```", _text(ROOT / "docs" / "guides" / "tuning.md"), re.S)
    shipped = load_config("lama")
    assert dataclasses.replace(load_config(yaml.safe_load(block)), path=shipped.path) == shipped


def _report():
    spec = importlib.util.spec_from_file_location("report", ROOT / "benchmarks" / "report.py")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        report = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(report)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return report


def test_the_results_page_and_readme_table_are_what_report_writes():
    """BENCHMARKS.md (at most 40 KB) and README's results table are `benchmarks/report.py`'s
    output from `benchmarks/results/`: a figure changes by running its benchmark and the script,
    never by hand. README stays a front door: at most 250 lines."""
    report = _report()
    assert _text(ROOT / "BENCHMARKS.md") == report.page(), "run python benchmarks/report.py"
    assert _text(README) == report.readme(), "run python benchmarks/report.py"
    assert len(report.page().encode("utf-8")) <= 40_000
    assert len(_text(README).splitlines()) <= 250
    # Every paper model has a row per dataset, and the chosen recipes name measured rows.
    results = report.read_accuracy()
    for dataset, recipes in report.RECIPES.items():
        assert all((dataset, row) in results for row in recipes.values()), dataset


def test_the_report_writes_a_figure_from_the_results(tmp_path, monkeypatch):
    """A result added to accuracy.jsonl shows on the page: the mean ± sd of its seeds."""
    report = _report()
    results = tmp_path / "results"
    shutil.copytree(report.RESULTS, results)
    with open(results / "accuracy.jsonl", "a", encoding="utf-8") as handle:
        for seed, accuracy in enumerate((0.5, 0.7)):
            handle.write(
                f'{{"dataset": "trec", "model": "cspan+defaults", "seed": {seed + 10}, '
                f'"accuracy": {accuracy}, "train_seconds": 1.0, "parameters": 7}}\n'
            )
    monkeypatch.setattr(report, "RESULTS", results)
    page = report.page()
    row = next(line for line in page.splitlines() if line.startswith("| cspan | defaults |") and "(5)" in line)
    last_of_seed = {}  # cspan+defaults on TREC: the last result of each measured seed, and the two added
    for line in (results / "accuracy.jsonl").read_text(encoding="utf-8").splitlines():
        result = json.loads(line)
        if (result["dataset"], result["model"]) == ("trec", "cspan+defaults"):
            last_of_seed[result["seed"]] = result["accuracy"]
    accuracies = list(last_of_seed.values())
    figures = [float(figure) for figure in re.findall(r"\d\.\d{4}", row)[:2]]
    assert len(accuracies) == 5 and figures == pytest.approx([np.mean(accuracies), np.std(accuracies)], abs=1e-4)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The documentation site, built as CI builds it (`mkdocs build --strict`)."""
    pytest.importorskip("mkdocs", reason='the docs extra: pip install -e ".[docs]" (CI installs it)')
    folder = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


@contextlib.contextmanager
def _served(folder):
    """The site served on a free loopback port (search needs HTTP: its worker fetches the index)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_site_has_every_page_and_its_api_reference(site):
    pages = {path.parent.relative_to(site).as_posix() for path in site.rglob("index.html")}
    assert {
        ".",
        "getting-started",
        "guides/training",
        "guides/export-serving",
        "benchmarks",
        "what-we-tried",
        "reference/layers",
        "reference/training",
        "contributing",
    } <= pages
    layers = (site / "reference" / "layers" / "index.html").read_text(encoding="utf-8")
    assert "ScalableAttention" in layers and "return_attention_scores" in layers  # the docstrings' text too
    training = (site / "reference" / "training" / "index.html").read_text(encoding="utf-8")
    assert "TrainConfig" in training and "overrides" in training
    assert (site / "results" / "throughput_layers.png").is_file() and not (site / "hooks.py").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (CI installs Debian's chromium: .ci/run)")
def test_the_site_renders_and_searches_in_chromium(site, tmp_path):
    """As a person sees it, in headless Chromium: the home page and a guide load with no console
    errors (nothing fetched from elsewhere either), typing LAMA in the search box lists results that
    name it, and a screenshot of a guide shows text on the page, not a blank one."""
    import matplotlib.image
    from playwright.sync_api import sync_playwright

    errors = []
    with _served(site) as address, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        for path in ("", "guides/training/"):
            page.goto(f"{address}/{path}", wait_until="networkidle")
            assert page.locator("h1").first.is_visible()
        page.click("input.md-search__input", force=True)
        page.keyboard.type("LAMA", delay=20)
        page.wait_for_selector(".md-search-result__item", timeout=20_000)
        results = page.locator(".md-search-result__item").all_inner_texts()
        page.goto(f"{address}/guides/layers/", wait_until="networkidle")
        page.screenshot(path=tmp_path / "guide.png")
        browser.close()
    assert not errors, errors
    assert any("LAMA" in result for result in results), results
    image = matplotlib.image.imread(tmp_path / "guide.png")[..., :3]
    dark = (image.mean(axis=-1) < 0.35).mean()  # the letters of the text and the header's bar
    assert image.std() > 0.1 and 0.005 < dark < 0.5, (image.std(), dark)
