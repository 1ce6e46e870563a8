"""The example scripts run: each parses its flags, and one trains end to end offline."""

import json
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted(p for p in (pathlib.Path(__file__).parents[1] / "examples").glob("*.py") if not p.name.startswith("_"))


def test_every_paper_has_an_example():
    assert {p.stem for p in EXAMPLES} == {
        "cspan_ag_news", "dual_axial_ag_news", "hcan_yelp", "lama_imdb", "scalable_attention_ag_news"
    }


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_help(script):
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--data" in result.stdout and "--small" in result.stdout


def test_scalable_attention_example_trains_offline(shared_data, tmp_path):
    output = tmp_path / "run"
    script = next(p for p in EXAMPLES if p.stem == "scalable_attention_ag_news")
    result = subprocess.run(
        [sys.executable, str(script), "--small", "--epochs", "1", "--output", str(output),
         "--data", str(shared_data / "ag_news" / "train_sample_5k.csv.gz"),
         "--test-data", str(shared_data / "ag_news" / "test.csv.gz")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Results: {output}" in result.stdout
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["label_names"] == ["World", "Sports", "Business", "Sci/Tech"]
    assert metrics["accuracy"]["test"] > 0.7
