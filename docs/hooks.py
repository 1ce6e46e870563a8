"""MkDocs hooks: the pages kept at the top of the repository join the site as they are.

BENCHMARKS.md (written by `benchmarks/report.py`) becomes the Benchmarks page, with the
plots it shows, and CONTRIBUTING.md the Contributing page: one file each, read in the
repository and on the site alike. The training options' reference is written from
`TrainConfig`'s fields, where each option is defined.
"""

import pathlib

from mkdocs.structure.files import File

from keras_textattn_config.train_config import GROUPS
from keras_textattn_config.train_config import default_of
from keras_textattn_config.train_config import fields_of
from keras_textattn_config.train_config import flag_of
from keras_textattn_config.train_config import option_of

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = "benchmarks/results/"


def on_files(files, config):
    benchmarks = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "benchmarks.md", content=benchmarks.replace(f"]({RESULTS}", "](results/")))
    for image in sorted((ROOT / RESULTS).glob("*.png")):
        files.append(File.generated(config, f"results/{image.name}", abs_src_path=str(image)))
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "contributing.md", content=contributing))
    files.append(File.generated(config, "reference/options.md", content=options_page()))
    return files


def options_page():
    """Every `TrainConfig` field by group: its `train()` keyword, flag, default and help."""
    lines = [
        "# Training options",
        "",
        "Every option of `keras-textattn train`, each a keyword of `keras_textattn.training.train` and a field "
        "of `TrainConfig` (generated from the fields). Options marked *resumed* must be repeated to resume a "
        "run (run.json holds them).",
        "",
    ]
    for group, title in GROUPS:
        lines += [f"## {title.capitalize()}", "", "| keyword | flag | default | |", "| --- | --- | --- | --- |"]
        for field in fields_of(group):
            option = option_of(field)
            help_text = option.help.replace("|", "\\|") + (" *resumed*" if option.resumed else "")
            lines.append(f"| `{field.name}` | `{flag_of(field)}` | `{default_of(field)!r}` | {help_text} |")
        lines.append("")
    return "\n".join(lines)
