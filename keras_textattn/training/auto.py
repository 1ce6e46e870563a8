"""`--model auto`: a short race between the fast paper models on the held-out data, keeping the best.

Each candidate (`CANDIDATES`: a paper model and the options it adds) trains with the user's options
as a run folder of its own, under the output's `candidates/`; the one with the highest held-out
accuracy (a tie keeps the one listed first, the faster) is copied to the output, whose metrics.json
says what was compared (`model_choice`). The test split plays no part in the choice. A killed race
resumes where it stopped: a finished candidate is not trained again, an unfinished one resumes as
any run does.
"""

import dataclasses
import json
import os
import shutil

from keras_textattn._files import write_text
from keras_textattn.run_folder import CANDIDATES_FOLDER
from keras_textattn.run_folder import FINISHED_MARKER
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import is_finished
from keras_textattn.run_folder import read_json
from keras_textattn.run_folder import remove_temporary_files
from keras_textattn.text.vectors import missing_package
from keras_textattn_config.train_config import CANDIDATES

RULE = (
    f"the highest held-out accuracy (macro F1 for multi-label data) of {', '.join(CANDIDATES)}, each "
    "trained with these options (a tie keeps the first; a candidate's own vectors only where the user "
    "gave none and their package is installed, its own bigrams only where the user gave no bigram buckets)"
)


def check_auto_options(config):
    """A `RunError` for the options a race cannot take, before anything is read or written."""
    if config.init_from is not None:
        raise RunError("init_from (--init-from) trains that run's model further; it takes no --model auto")
    if config.model_kwargs:
        raise RunError(
            "model_kwargs (--set) are one model's arguments; with them give that model (--model M), not auto"
        )
    if config.distribute in ("multi-worker", "ray"):
        raise RunError(
            f"--model auto races on one machine; with --distribute {config.distribute} give the model (--model M)"
        )
    if config.validation_data is None and not config.validation_fraction > 0:
        raise RunError(
            "--model auto chooses on held-out data: give --validation-data or a --validation-fraction above 0; "
            f"got {config.validation_fraction}"
        )


def raced(config):
    """`(candidates, left_out)`: the candidates `config` races, by name, as `(model, its config)`,
    and why each of the others is not raced."""
    candidates, left_out = {}, {}
    for name, (model, options) in CANDIDATES.items():
        vectors, buckets = options.get("embeddings"), options.get("bigram_buckets")
        if vectors and config.embeddings is not None:
            left_out[name] = f"it starts from {vectors}, and --embeddings {config.embeddings} was given"
        elif vectors and (package := missing_package(vectors)):
            left_out[name] = f"its vectors need the package {package} (pip install it)"
        elif buckets and config.bigram_buckets is not None:
            given = config.bigram_buckets
            left_out[name] = f"it reads {buckets:,} buckets of hashed bigrams, and --bigram-buckets {given} was given"
        else:
            candidates[name] = (model, dataclasses.replace(config, **options))
    return candidates, left_out


def race(train_candidate, data, output, config):
    """Train each candidate of `raced(config)` (`train_candidate(model, data, folder, config)`, or
    read its finished folder) and copy the best to `output`; returns the output's metrics."""
    candidates, left_out = raced(config)
    if config.verbose:
        for name, why in left_out.items():
            print(f"--model auto: {name} is not raced: {why}")
    held_out = {}
    for name, (model, candidate_config) in candidates.items():
        folder = os.path.join(output, CANDIDATES_FOLDER, name)
        if is_finished(folder):
            metrics = read_json(os.path.join(folder, FINISHED_MARKER))
        else:
            metrics = train_candidate(model, data, folder, candidate_config)
        score = "macro_f1" if metrics.get("multi_label") else "accuracy"
        held_out[name] = metrics[score]["validation"]
    chosen = max(held_out, key=held_out.get)  # max keeps the first of equals
    said = "macro F1" if score == "macro_f1" else "accuracy"
    if config.verbose:
        compared = ", ".join(f"{name} {value:.4f}" for name, value in held_out.items())
        print(f"--model auto: held-out {said} {compared}; keeping {chosen} (the highest; a tie keeps the first)")
    choice = {"rule": RULE, f"held_out_{score}": held_out, "chosen": chosen}
    return _copy_run(os.path.join(output, CANDIDATES_FOLDER, chosen), output, choice)


def _copy_run(source, output, choice):
    """The finished run `source` copied into `output`, metrics.json (with `model_choice`) last. The
    output keeps its own run.json (model "auto"): a race killed while copying resumes as the race
    it is, and copies again."""
    remove_temporary_files(output)
    for name in sorted(os.listdir(source)):
        if name in (FINISHED_MARKER, "run.json") or name.startswith(".tmp-"):
            continue
        source_path, temporary = os.path.join(source, name), os.path.join(output, ".tmp-" + name)
        if os.path.isdir(source_path):
            shutil.copytree(source_path, temporary)
            shutil.rmtree(os.path.join(output, name), ignore_errors=True)
        else:
            shutil.copy2(source_path, temporary)
        os.replace(temporary, os.path.join(output, name))
    metrics = {**read_json(os.path.join(source, FINISHED_MARKER)), "model_choice": choice}
    write_text(os.path.join(output, FINISHED_MARKER), json.dumps(metrics, indent=2, sort_keys=True))
    return metrics
