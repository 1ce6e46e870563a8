"""A run folder's state while it trains: new, resumed or replaced; its history; a failure's leftovers."""

import contextlib
import os
import shutil

import numpy as np
import tensorflow as tf

from keras_textattn._files import write_text
from keras_textattn.datasets.formats import tf_reason
from keras_textattn.run_folder import CANDIDATES_FOLDER
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import foreign_entries
from keras_textattn.run_folder import is_finished
from keras_textattn.run_folder import read_json
from keras_textattn_config.train_config import RESUMED

# run.json written before these options: those runs trained with Adam updating every embedding row, no
# weight decay, sentences cut; and a Python call's model_kwargs=None was kept as given.
LEGACY_RUN_JSON = {
    "optimizer": "adam",
    "weight_decay": 0.0,
    "split_long_sentences": False,
    "init_from": None,
    "delimiter": None,
    "embedding_updates": "dense",
}


def run_state(output, overwrite, arguments):
    """ "new", "resume" or "overwrite" for a run folder at `output`, or a `RunError`: for a
    folder that is not a run folder, a finished run without `overwrite`, and a resume
    whose arguments differ from those the run was started with (run.json)."""
    if os.path.exists(output) and not os.path.isdir(output):
        raise RunError(f"{output} is a file, not a run folder; choose another output")
    if not os.path.isdir(output) or not os.listdir(output):
        return "new"
    foreign = foreign_entries(output)
    if foreign:
        raise RunError(
            f"{output} is not a run folder (it holds {', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}); nothing was changed; choose another output"
        )
    if is_finished(output):
        if not overwrite:
            raise RunError(
                f"{output} already holds a finished run; pass overwrite=True (--overwrite) to replace it, "
                f"or choose another output (with init_from={output!r}, --init-from, to train it further)"
            )
        return "overwrite"
    if overwrite:
        return "overwrite"
    stored_path = os.path.join(output, "run.json")
    if os.path.exists(stored_path):
        stored = {**LEGACY_RUN_JSON, **read_json(stored_path)}
        stored["model_kwargs"] = stored.get("model_kwargs") or {}
        changed = [
            f"{name} {stored.get(name)!r} -> {arguments[name]!r}"
            for name in ("model", "data", *RESUMED)
            if stored.get(name) != arguments[name]
        ]
        if changed:
            raise RunError(
                f"{output} holds an unfinished run started with other arguments ({'; '.join(changed)}); "
                "repeat its arguments to resume it, or pass overwrite=True (--overwrite) to start again"
            )
    return "resume"


@contextlib.contextmanager
def out_of_memory_said(model):
    """TensorFlow's out-of-memory error while building or training (say `--sequence-length 100000`
    for dual-axial, whose feature-axial weights are length x length, or `--set embedding_dim=100000000`,
    whose embedding is vocabulary x 10^8) as one line saying what needs less; the run folder is
    left as any failure leaves it."""
    try:
        yield
    except tf.errors.ResourceExhaustedError as error:
        # In a traced step the allocation is on a later line, after "Graph execution error:".
        allocation = next((line for line in str(error).splitlines() if line.startswith("OOM when allocating")), None)
        raise RunError(
            f"{model} ran out of memory ({allocation or tf_reason(error)}); a shorter sequence length "
            "(--sequence-length; HCAN: --max-sentences too), a smaller --batch-size, or smaller weights "
            "(--set embedding_dim=..., --max-tokens) need less"
        ) from None


@contextlib.contextmanager
def removed_if_nothing_trained(output):
    """A new run that fails before its first checkpoint (or, racing with `--model auto`, before
    a candidate's) leaves no folder behind (an empty folder that was there stays), so that the
    corrected command starts afresh."""
    existed = os.path.isdir(output)
    try:
        yield
    except BaseException:
        candidates = os.path.join(output, CANDIDATES_FOLDER)
        raced = os.path.isdir(candidates) and os.listdir(candidates)
        if not os.path.isdir(os.path.join(output, "backup")) and not raced:
            shutil.rmtree(output, ignore_errors=True)
            if existed:
                os.makedirs(output)
        raise


def count_rows(rows):
    """The number of rows of a dataset: its cardinality if known, else one pass."""
    known = int(rows.cardinality())
    return known if known >= 0 else int(rows.reduce(0, lambda count, _: count + 1))


def keep_history_before(path, epoch):
    """Drop the rows of history.csv for epochs from `epoch` on (they are trained again)."""
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if not lines:
        return
    kept = [lines[0]] + [line for line in lines[1:] if line and float(line.split(",")[0]) < epoch]
    if len(kept) == 1:
        os.remove(path)  # CSVLogger writes the header again
    elif len(kept) < len(lines):
        write_text(path, "\n".join(kept) + "\n")


def read_history(path):
    """history.csv as {column: [values per epoch]}."""
    if not os.path.exists(path):
        return {}
    rows = np.genfromtxt(path, delimiter=",", names=True, ndmin=1)
    return {name: [float(v) for v in rows[name]] for name in rows.dtype.names}
