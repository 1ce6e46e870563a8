"""Labels for new texts (`predict`, `predict_file`) and where a model goes wrong (`evaluate`).

Both read a run folder of `train`, a SavedModel written by `export.saved_model`, a TFLite
folder written by `export.tflite` or an ONNX folder written by `export.onnx` (TensorFlow
backend), and write atomically: a killed
`predict_file` or `evaluate` leaves no partial output. `predict_file` streams its input in
batches (a 1 GB file is never held in memory); `evaluate` holds its file's texts and labels
(it reports on all of them at once).
"""

import contextlib
import csv
import glob
import html
import io
import json
import os
import sys

import numpy as np
import tensorflow as tf

from keras_textattn import _plots
from keras_textattn import multi_label
from keras_textattn._files import as_paths
from keras_textattn._files import check_output
from keras_textattn._files import check_output_file
from keras_textattn._files import check_path
from keras_textattn._files import locked
from keras_textattn._files import refuse_writing_over
from keras_textattn._files import write_atomically
from keras_textattn._files import write_folder_atomically
from keras_textattn._scores import macro_f1
from keras_textattn.datasets.formats import DataError
from keras_textattn.datasets.formats import LocalFile
from keras_textattn.datasets.formats import id_column_of
from keras_textattn.datasets.formats import read_labelled_texts
from keras_textattn.datasets.formats import text_batches
from keras_textattn.datasets.streaming import each_file
from keras_textattn.errors import UserError
from keras_textattn.errors import check_answered
from keras_textattn.errors import check_batch_size
from keras_textattn.errors import check_flag
from keras_textattn.errors import check_long_texts
from keras_textattn.errors import check_texts
from keras_textattn.errors import check_whole
from keras_textattn.multi_label import label_sets
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import class_order
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import run_thresholds

SAVED_MODEL_LABELS = os.path.join("assets.extra", "labels.json")  # written by export.saved_model
REPORT_ENTRIES = frozenset({"metrics.json", "report.md", "confusion.png"})  # what `evaluate` writes


class Classifier:
    """A trained classifier: raw texts to class probabilities.

    Args:
        path: a run folder of `train`, a SavedModel folder of `export.saved_model`, or a
            folder of `export.tflite` (or its `model.tflite`): the TFLite model runs in the
            LiteRT interpreter, one text per call, on the ids of `export.ClientTokenizer`,
            as a device runs it (to measure what quantisation costs on your own data); or a
            folder of `export.onnx` (or its `model.onnx`), run in onnxruntime on those ids.
            A list of them is an ensemble: the mean of their probabilities (soft voting),
            for runs trained on the same classes (any model, vocabulary or length each).

        long_texts: what a text longer than the model reads (its sequence length; HCAN's
            sentences) gets: "cut" (its start is read, the rest not) or "windows" (it is read in
            overlapping windows, each classified, and the mean of their probabilities is its
            answer: `TextEncoder.windows` for a run folder, `ClientTokenizer.windows` for a TFLite
            or ONNX folder; a SavedModel reads its texts as it was exported to).
        stride: with "windows", tokens (HCAN: sentences) from one window's start to the next's
            (default: half of what the model reads).

    Attributes:
        label_names: class names, index = label id (an ensemble's: its first member's order).
        thresholds: of a multi-label run, each label's decision threshold (chosen by `train` on
            its held-out rows): a text has every label whose probability reaches it; None for a
            single-label run, whose texts have their most probable class.
    """

    def __init__(self, path, *, long_texts="cut", stride=None):
        paths = as_paths(path)
        if not paths:
            raise UserError("no run to classify with: give a run folder (or its export), or a list of them")
        check_long_texts(long_texts, stride, [])
        members = [_load_member(os.fspath(member)) for member in paths]
        self.label_names = members[0][1]
        self.thresholds = members[0][3]
        multi_label = [os.fspath(member) for member, loaded in zip(paths, members) if loaded[3] is not None]
        if multi_label and len(paths) > 1:
            raise UserError(
                f"an ensemble averages single-label runs; {multi_label[0]} is multi-label (its thresholds were "
                "chosen for its own probabilities): give it alone"
            )
        columns = [
            class_order(names, self.label_names, os.fspath(member), os.fspath(paths[0]))
            for member, (_, names, _, _) in zip(paths, members)
        ]
        self._paths = [os.fspath(member) for member in paths]
        self._readers = [reader for _, _, reader, _ in members]
        if long_texts == "windows":
            saved = [path for path, reader in zip(self._paths, self._readers) if reader is None]
            if saved:
                raise UserError(
                    f"{saved[0]} is a SavedModel, which tokenises its texts itself: export it with --long-texts "
                    "windows (it then reads long texts in windows), or give its run folder, or --long-texts cut"
                )
            check_long_texts(long_texts, stride, self._readers)  # a stride a member cannot take
        self.long_texts, self.stride = long_texts, stride
        self._members = [(probabilities, order) for (probabilities, _, _, _), order in zip(members, columns)]

    def __repr__(self):
        paths = self._paths[0] if len(self._paths) == 1 else self._paths
        return f"Classifier({paths!r}, label_names={self.label_names!r})"

    def probabilities(self, texts, batch_size=256):
        """`(len(texts), classes)` float32 for a list of strings (empty or invalid UTF-8 included;
        one string is a list of one), `batch_size` texts per model call (a long list in one call
        would hold the activations of every text at once: 25,000 IMDB reviews through HCAN with
        bigrams asked for 9 GB)."""
        return np.mean(self.member_probabilities(texts, batch_size), axis=0)

    def member_probabilities(self, texts, batch_size=256):
        """`(members, len(texts), classes)` float32: each member's probabilities, its columns in
        this classifier's class order (`probabilities` is their mean)."""
        check_batch_size(batch_size)
        texts = check_texts(texts)
        if not texts:
            return np.zeros((len(self._members), 0, len(self.label_names)), "float32")
        members = []
        for (probabilities, order), reader in zip(self._members, self._readers):
            read, owners = self._read(reader, texts)
            answers = np.concatenate(
                [
                    np.asarray(probabilities(read[start : start + batch_size]), "float32")[:, order]
                    for start in range(0, len(read), batch_size)
                ]
            )
            if owners is not None:  # each text's windows' mean
                sums = np.zeros((len(texts), answers.shape[1]), "float32")
                np.add.at(sums, owners, answers)
                answers = sums / np.bincount(owners, minlength=len(texts))[:, None]
            members.append(answers)
        for path, answers in zip(self._paths, members):
            check_answered(answers, texts, path)
        return np.stack(members)

    def _read(self, reader, texts):
        """`(what a member's model is given, owners)`: `texts` as `reader` reads them for it, cut or
        in windows (`owners` each window's text; None when cut); a SavedModel's texts themselves."""
        if reader is None:
            return texts, None
        return reader.windows(texts, self.stride) if self.long_texts == "windows" else (reader.cut(texts), None)

    def longer_than_read(self, texts):
        """How many of `texts` are longer than what the model reads (an ensemble: than what some
        member reads), whichever `long_texts` reads them; None with a SavedModel, whose tokens only
        its graph sees."""
        if any(reader is None for reader in self._readers):
            return None
        texts = check_texts(texts)
        return int(np.max([np.sum(reader.longer_than_read(texts)) for reader in self._readers]))

    @property
    def multi_label(self):
        """Whether a text gets a set of labels (those reaching their `thresholds`), not one class."""
        return self.thresholds is not None

    def predict(self, texts, top_k=1, batch_size=256):
        """One dict per text: `label`, `probability` (of the label), `top` (the `top_k` most
        probable `(label, probability)`, most probable first); `batch_size` texts per model call.
        A multi-label run's dicts have `labels` and `probabilities` instead of `label` and
        `probability`: the labels whose probability reaches their threshold, most probable first
        (none, one or several), and their probabilities."""
        top_k = _check_top_k(top_k, len(self.label_names))
        all_probabilities = self.probabilities(texts, batch_size)
        decided = label_sets(all_probabilities, self.thresholds, self.label_names) if self.multi_label else None
        rows = []
        for index, probabilities in enumerate(all_probabilities):
            order = np.argsort(-probabilities, kind="stable")[:top_k]
            top = [(self.label_names[i], float(probabilities[i])) for i in order]
            if decided is None:
                rows.append({"label": top[0][0], "probability": top[0][1], "top": top})
            else:
                labels = decided[index]
                rows.append({"labels": [n for n, _ in labels], "probabilities": [p for _, p in labels], "top": top})
        return rows


def _load_member(path):
    """`(read texts -> probabilities, label names, reader, thresholds)` of one run folder,
    SavedModel, TFLite or ONNX folder (or the model file in it: `model.keras`, `saved_model.pb`, a
    `.tflite` or `.onnx` file); `reader` what turns texts into what the model is given, cut or in
    windows (`_TextReads`, `_ClientReads`; None for a SavedModel, given the texts themselves);
    `thresholds` a multi-label run's (None for a single-label one)."""
    if os.path.isfile(path) and (
        path.endswith((".tflite", ".onnx")) or os.path.basename(path) in ("model.keras", "saved_model.pb")
    ):
        path = os.path.dirname(path) or "."
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        serve = _read_export_file(
            path,
            "the SavedModel (saved_model.pb, variables/)",
            lambda: tf.saved_model.load(path).signatures["serving_default"],
        )
        return (
            lambda texts: serve(text=tf.constant(texts, tf.string))["probabilities"],
            *_read_labels(path, SAVED_MODEL_LABELS),
        )
    if os.path.isfile(os.path.join(path, "model.tflite")):
        from keras_textattn.export.client import ClientTokenizer
        from keras_textattn.export.tflite import signature_runner

        tokenizer = _read_export_file(path, "encoder.json, vocabulary.txt", lambda: ClientTokenizer(path))
        runner = _read_export_file(
            path, "model.tflite", lambda: signature_runner(model_path=os.path.join(path, "model.tflite"))
        )
        names, _, thresholds = _read_labels(path, "labels.json")
        return (
            lambda inputs: [runner(**one)["probabilities"][0] for one in inputs],  # the interpreter's batch of one
            names,
            _ClientReads(tokenizer),
            thresholds,
        )
    if os.path.isfile(os.path.join(path, "model.onnx")):
        from keras_textattn.export.client import ClientTokenizer
        from keras_textattn.export.client import stacked
        from keras_textattn.export.onnx import onnx_session

        tokenizer = _read_export_file(path, "encoder.json, vocabulary.txt", lambda: ClientTokenizer(path))
        session = _read_export_file(path, "model.onnx", lambda: onnx_session(os.path.join(path, "model.onnx")))
        names, _, thresholds = _read_labels(path, "labels.json")
        return lambda inputs: session(**stacked(inputs)), names, _ClientReads(tokenizer), thresholds
    if os.path.isdir(path):
        model, encoder, label_names = load_run(path)
        call = tf.function(lambda texts: model(encoder(texts), training=False), reduce_retracing=True)
        thresholds = run_thresholds(path, label_names)
        return lambda texts: call(tf.constant(texts, tf.string)), label_names, _TextReads(encoder), thresholds
    raise RunError(f"{path} is neither a run folder nor an exported SavedModel, TFLite or ONNX folder")


class _TextReads:
    """How a run folder's model is given texts: as they are (its `TextEncoder` tokenises them in
    the call), or as `TextEncoder.windows` cuts them."""

    def __init__(self, encoder):
        self.encoder = encoder

    def cut(self, texts):
        return texts

    def windows(self, texts, stride):
        return self.encoder.windows(texts, stride)

    def longer_than_read(self, texts):
        return self.encoder.longer_than_read(texts)


class _ClientReads:
    """How a TFLite or ONNX folder's model is given texts: each text's (or window's) input ids of
    `ClientTokenizer`, one dict of a batch of one each, as a client computes them."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def cut(self, texts):
        return [self.tokenizer.encode(text) for text in texts]

    def windows(self, texts, stride):
        self.tokenizer.window_width(stride)  # a stride the model cannot take, before any text
        each = [self.tokenizer.windows(text, stride) for text in texts]
        counts = [len(windows["token_ids"]) for windows in each]
        read = [
            {name: ids[k : k + 1] for name, ids in windows.items()}
            for windows, count in zip(each, counts)
            for k in range(count)
        ]
        return read, np.repeat(np.arange(len(texts)), counts)

    def longer_than_read(self, texts):
        return np.array([self.tokenizer.longer_than_read(text) for text in texts], bool)


def _read_labels(folder, name):
    """`(label names, None, thresholds)` of an export's labels file (`export.labels_record`): a list
    of class names, or a multi-label run's `{"labels": [...], "thresholds": [...]}`; the None is
    a SavedModel's reader (`_load_member`: it is given the texts themselves)."""
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise RunError(
            f"{folder} has no {name}: it is not an export of keras-textattn, or one of an older version; "
            "export the run again (keras-textattn export)"
        )

    def read():
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        labels, thresholds = (
            (record.get("labels"), record.get("thresholds")) if isinstance(record, dict) else (record, None)
        )
        if not isinstance(labels, list) or not all(isinstance(name, str) for name in labels):
            raise ValueError("not a list of class names")
        if isinstance(record, dict) and not (
            isinstance(thresholds, list)
            and len(thresholds) == len(labels)
            and all(isinstance(t, (int, float)) and 0 <= t <= 1 for t in thresholds)
        ):
            raise ValueError("not a threshold in [0, 1] for each label")
        return labels, None, thresholds

    return _read_export_file(folder, name, read)


def _read_export_file(folder, names, read):
    """`read()`, or a `RunError` naming the export's damaged file(s) `names` (a missing file,
    invalid JSON, a cut model), not a traceback from the reader."""
    try:
        return read()
    except (OSError, ValueError, KeyError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RunError(f"{folder}: {names} cannot be read ({reason}); export the run again") from None


def _check_top_k(top_k, classes):
    return min(check_whole("top-k", top_k), classes)


def predict(run, texts, *, top_k=1, batch_size=256, long_texts="cut", stride=None):
    """Labels for `texts` (a list of strings; one string is a list of one) from a run folder or an
    export, or a list of them (an ensemble), long texts cut or read in windows: see `Classifier`."""
    return Classifier(run, long_texts=long_texts, stride=stride).predict(texts, top_k=top_k, batch_size=batch_size)


def predict_file(
    run,
    data,
    output,
    *,
    text_column="text",
    id_column=None,
    header=True,
    delimiter=None,
    top_k=1,
    batch_size=256,
    overwrite=False,
    verbose=1,
    long_texts="cut",
    stride=None,
):
    """Label every row of a CSV/TSV, JSONL or TFRecord file (plain or gzip) and write one row per
    input row, in order; texts longer than the model reads cut or read in windows (`long_texts`,
    `stride`: see `Classifier`).

    Args:
        run: a run folder, or a SavedModel or TFLite folder, or a list of them (an ensemble:
            `Classifier`).
        data: the input file; `text_column` (name or index, or a list joined with a space),
            `header`, `delimiter` as for `LocalFile`. `id_column`: a column carried over to
            the output (default: a column named "id" when the file has one).
        output: `.csv` (columns: [id,] label, probability, then label_2, probability_2, ...
            up to `top_k`) or `.jsonl` (`{"id", "label", "probability", "top": [[label, p], ...]}`).
            A multi-label run writes `labels` and `probabilities` instead of `label` and
            `probability` (`Classifier.predict`): in CSV each a comma-separated cell (the label
            delimiter `train --multi-label` reads), then label_1, probability_1, ... up to a
            `top_k` above 1; in JSONL lists.
        batch_size: texts per model call; the file is read and written in batches.

    Returns:
        `{"rows": n, "path": output, "longer_than_read": m}`: `m` rows were longer than the model
        reads (`Classifier.longer_than_read`; None for an export).
    """
    check_path(output)
    check_flag("overwrite", overwrite)
    output = os.fspath(output)
    if not output.endswith((".csv", ".jsonl")):
        raise UserError(f"the output must end in .csv or .jsonl; got {output!r}")
    check_batch_size(batch_size)
    check_output_file(output, overwrite)
    classifier = Classifier(run, long_texts=long_texts, stride=stride)
    top_k = _check_top_k(top_k, len(classifier.label_names))
    files = each_file(LocalFile(data, text_column=text_column, label_column=None, header=header, delimiter=delimiter))
    refuse_writing_over(output, [file.path for file in files])
    with_ids = _carries_ids(files, id_column)
    count, longer = 0, classifier.longer_than_read([])  # None for an export

    def write(temporary):
        with _progress_line_ended(verbose):
            write_rows(temporary)

    def write_rows(temporary):
        nonlocal count, longer
        with open(temporary, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle) if output.endswith(".csv") else None
            if writer:  # also for a file of no rows: a CSV of its header
                writer.writerow((["id"] if with_ids else []) + _csv_header(top_k, classifier.multi_label))
            for ids, texts in (batch for file in files for batch in text_batches(file, batch_size, id_column)):
                for index, row in enumerate(classifier.predict(texts, top_k, batch_size)):
                    identity = None if ids is None else ids[index]
                    if writer:
                        writer.writerow(([identity] if ids is not None else []) + _csv_cells(row, top_k))
                    else:
                        record = {"id": identity} if ids is not None else {}
                        answer = ("labels", "probabilities") if "labels" in row else ("label", "probability")
                        record.update({key: row[key] for key in answer})
                        record["top"] = [[label, p] for label, p in row["top"]]
                        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += len(texts)
                if longer is not None:
                    longer += classifier.longer_than_read(texts)
                if verbose:
                    print(f"\rpredicted {count} rows", end="", file=sys.stderr, flush=True)

    with locked(output):  # one writer; under the lock, what a killed one left is stale
        folder, name = os.path.split(os.path.abspath(output))
        for stale in glob.glob(os.path.join(glob.escape(folder), f".tmp-*{glob.escape(name)}")):
            os.remove(stale)
        write_atomically(output, write)
    return {"rows": count, "path": output, "longer_than_read": longer}


def _carries_ids(files, id_column):
    """Whether the output has an id column: every file has the ids `text_batches` carries over,
    or none has (files that differ are refused before anything is predicted)."""
    having = {file.path: id_column_of(file, id_column) is not None for file in files}
    if len(set(having.values())) > 1:
        with_ids = next(path for path, has in having.items() if has)
        without = next(path for path, has in having.items() if not has)
        raise UserError(
            f"{with_ids} has an id column and {without} has none; the output gives every row the same "
            "columns: give the files the same columns (an 'id' column in all or in none), or name a "
            "column they all have with --id-column"
        )
    return any(having.values())


@contextlib.contextmanager
def _progress_line_ended(verbose):
    """End the "predicted N rows" line however writing ends, so that an error is a line of its own."""
    try:
        yield
    finally:
        if verbose:
            print(file=sys.stderr)


def _csv_header(top_k, multi_label=False):
    if multi_label:
        top = range(1, top_k + 1) if top_k > 1 else []
        return ["labels", "probabilities"] + [f"{name}_{k}" for k in top for name in ("label", "probability")]
    return ["label", "probability"] + [f"{name}_{k}" for k in range(2, top_k + 1) for name in ("label", "probability")]


def _csv_cells(row, top_k):
    """A `Classifier.predict` row as `_csv_header`'s cells."""
    if "labels" not in row:
        first = [row["label"], f"{row['probability']:.6f}"]
        return first + [value for label, p in row["top"][1:] for value in (label, f"{p:.6f}")]
    first = [",".join(row["labels"]), ",".join(f"{p:.6f}" for p in row["probabilities"])]
    return first + [value for label, p in (row["top"] if top_k > 1 else []) for value in (label, f"{p:.6f}")]


def evaluate(
    run,
    data,
    output,
    *,
    text_column="text",
    label_column="label",
    header=True,
    delimiter=None,
    label_offset=0,
    batch_size=256,
    mistakes=20,
    overwrite=False,
    long_texts="cut",
    stride=None,
    label_delimiter=",",
):
    """Score a run folder or an export, or a list of them (an ensemble: `Classifier`), on a
    labelled file and write a report folder; texts longer than the model reads cut or read in
    windows (`long_texts`, `stride`: see `Classifier`).

    Labels are matched to the model's class names; a file of integer labels 0..n-1 (after
    `label_offset`) is read as label ids. Labels the model never saw are an error.

    Writes `output/`: `metrics.json` (the runs scored, accuracy, macro and weighted F1,
    per-class precision, recall, F1 and support, the confusion matrix; scikit-learn's metrics;
    `long_texts` and how many texts were `longer_than_read` (None for an export);
    a class with no rows in `data` that is never predicted has no precision, recall or F1 (null;
    "–" in report.md) and is left out of macro F1;
    for an ensemble also each run's accuracy and macro F1 alone, `members`), `confusion.png`
    (a heatmap), and `report.md` (the same as tables, and the `mistakes` most confident
    mistakes: text, true label, predicted label, probability). An existing `output` is
    replaced with `overwrite` only if it holds these files alone (an earlier report).

    A multi-label run (`Classifier.thresholds`) reads the file's label sets as `train` does
    (`label_delimiter` in the label column, or a list of 0/1 `label_column`s) and reports
    `multi_label_evaluation`'s scores instead.

    Returns:
        The metrics dict.
    """
    from sklearn import metrics as sk

    check_batch_size(batch_size)
    check_flag("overwrite", overwrite)
    check_whole("mistakes", mistakes, minimum=0)  # -1 listed all but the last
    check_output(output, overwrite, REPORT_ENTRIES, source=run)
    classifier = Classifier(run, long_texts=long_texts, stride=stride)
    names = classifier.label_names
    texts, labels = [], []
    several = isinstance(label_column, (list, tuple))
    if several and not classifier.multi_label:
        raise UserError(f"several label columns are multi-label data; {run} is a single-label run")
    for file in each_file(
        LocalFile(
            data,
            text_column=text_column,
            label_column=label_column,
            header=header,
            delimiter=delimiter,
            label_offset=label_offset,
            label_delimiter=label_delimiter if classifier.multi_label and not several else None,
        )
    ):
        texts_of_file, labels_of_file, _, _ = read_labelled_texts(file)
        texts += texts_of_file
        labels += labels_of_file
    if classifier.multi_label:
        return multi_label_evaluation(classifier, texts, labels, data, output, batch_size, mistakes, overwrite, run)
    truth = _label_ids(labels, names, data)
    members = classifier.member_probabilities(texts, batch_size)
    probabilities = np.mean(members, axis=0)
    predicted = probabilities.argmax(-1)
    classes = list(range(len(names)))
    precision, recall, f1, support = sk.precision_recall_fscore_support(
        truth, predicted, labels=classes, zero_division=0
    )
    confusion = sk.confusion_matrix(truth, predicted, labels=classes)
    scored = set(np.union1d(truth, predicted).tolist())  # the other classes have no rows and no predictions

    def class_scores(c, *values):
        return dict(zip(("precision", "recall", "f1"), (float(v) if c in scored else None for v in values)))

    result = {
        "runs": [os.path.abspath(member) for member in as_paths(run)],
        "rows": len(texts),
        "accuracy": float(sk.accuracy_score(truth, predicted)),
        "macro_f1": macro_f1(truth, predicted),
        "weighted_f1": float(sk.f1_score(truth, predicted, labels=classes, average="weighted", zero_division=0)),
        "per_class": {
            name: {**class_scores(c, p, r, f), "support": int(s)}
            for c, name, p, r, f, s in zip(classes, names, precision, recall, f1, support)
        },
        "label_names": names,
        "confusion_matrix": confusion.tolist(),
        "long_texts": long_texts,
        "longer_than_read": classifier.longer_than_read(texts),
    }
    if len(members) > 1:  # an ensemble: what each run scores alone, to see what averaging them adds
        result["members"] = [
            {
                "run": path,
                "accuracy": float(sk.accuracy_score(truth, member.argmax(-1))),
                "macro_f1": macro_f1(truth, member.argmax(-1)),
            }
            for path, member in zip(result["runs"], members)
        ]
    wrong = np.flatnonzero(predicted != truth)
    worst = wrong[np.argsort(-probabilities[wrong, predicted[wrong]], kind="stable")][:mistakes]
    confident_mistakes = [
        {
            "text": texts[i],
            "true": names[truth[i]],
            "predicted": names[predicted[i]],
            "probability": float(probabilities[i, predicted[i]]),
        }
        for i in worst
    ]

    def write(folder):
        with open(os.path.join(folder, "metrics.json"), "w", encoding="utf-8") as handle:
            json.dump({**result, "confident_mistakes": confident_mistakes}, handle, indent=2, ensure_ascii=False)
        with open(os.path.join(folder, "report.md"), "w", encoding="utf-8") as handle:
            handle.write(_report(result, confident_mistakes, run, data))
        _confusion_png(confusion, names, os.path.join(folder, "confusion.png"))

    write_folder_atomically(os.fspath(output), write, REPORT_ENTRIES, overwrite)
    return result


def _label_ids(labels, names, path):
    if all(label in names for label in labels):
        return np.array([names.index(label) for label in labels])
    if all(label.lstrip("-").isdigit() and 0 <= int(label) < len(names) for label in labels):
        return np.array([int(label) for label in labels])
    unknown = sorted({label for label in labels if label not in names})
    raise DataError(
        f"{path}: labels the model never saw: {unknown[:5]}{' ...' if len(unknown) > 5 else ''}; "
        f"it knows {names} (or ids 0..{len(names) - 1}; --label-offset shifts integer labels)"
    )


def multi_label_evaluation(classifier, texts, label_sets_read, data, output, batch_size, mistakes, overwrite, run):
    """`evaluate` of a multi-label `classifier` on `texts` and their label sets as read: subset
    accuracy (also as `accuracy`), Hamming loss, micro / macro / samples F1, each label's precision,
    recall, F1 and support at the run's thresholds (`multi_label.scores`), each label's counts of
    true and false positives and negatives (confusion.png draws all but the true negatives, which
    would outweigh the rest), and the
    `mistakes` decisions furthest on the wrong side of their threshold."""
    names = classifier.label_names
    truth = _label_set_matrix(label_sets_read, names, data)
    probabilities = classifier.probabilities(texts, batch_size)
    decided = multi_label.decide(probabilities, classifier.thresholds)
    scores = multi_label.scores(truth, decided, names)
    confusion = {
        name: {
            kind: int(np.sum((truth[:, i] == want) & (decided[:, i] == said))) for kind, (want, said) in KINDS.items()
        }
        for i, name in enumerate(names)
    }
    result = {
        "runs": [os.path.abspath(member) for member in as_paths(run)],
        "rows": len(texts),
        "multi_label": True,
        "accuracy": scores["subset_accuracy"],
        **{key: value for key, value in scores.items() if key != "labels"},
        "per_label": {name: {**scores["labels"][name], **confusion[name]} for name in names},
        "thresholds": dict(zip(names, classifier.thresholds)),
        "label_names": names,
        "long_texts": classifier.long_texts,
        "longer_than_read": classifier.longer_than_read(texts),
    }
    wrong_side = np.abs(probabilities - np.asarray(classifier.thresholds)) * (decided != truth.astype(bool))
    rows, columns = np.nonzero(wrong_side)
    worst = np.argsort(-wrong_side[rows, columns], kind="stable")[:mistakes]
    label_mistakes = [
        {
            "text": texts[rows[k]],
            "label": names[columns[k]],
            "mistake": "missed" if truth[rows[k], columns[k]] else "extra",
            "probability": float(probabilities[rows[k], columns[k]]),
            "threshold": float(classifier.thresholds[columns[k]]),
            "true": [name for name, hot in zip(names, truth[rows[k]]) if hot],
        }
        for k in worst
    ]
    # True negatives, thousands a label where the others are tens, would wash out every other cell.
    drawn = [kind for kind in KINDS if kind != "true_negatives"]
    table = np.array([[confusion[name][kind] for kind in drawn] for name in names])
    rows_named = [f"{name} ({scores['labels'][name]['support']})" for name in names]

    def write(folder):
        with open(os.path.join(folder, "metrics.json"), "w", encoding="utf-8") as handle:
            json.dump({**result, "label_mistakes": label_mistakes}, handle, indent=2, ensure_ascii=False)
        with open(os.path.join(folder, "report.md"), "w", encoding="utf-8") as handle:
            handle.write(_multi_label_report(result, label_mistakes, run, data))
        _confusion_png(table, rows_named, os.path.join(folder, "confusion.png"), columns=drawn, xlabel="decisions")

    write_folder_atomically(os.fspath(output), write, REPORT_ENTRIES, overwrite)
    return result


# Each label's decisions on a row, by (the row has the label, the label was decided).
KINDS = {
    "true_positives": (1, True),
    "false_negatives": (1, False),
    "false_positives": (0, True),
    "true_negatives": (0, False),
}


def _label_set_matrix(label_sets_read, names, path):
    """`(rows, labels)` 0/1 of label sets read from `path`: by name, or all by id 0..n-1."""
    found = {label for labels in label_sets_read for label in labels}
    if found <= set(names):
        position = {name: i for i, name in enumerate(names)}
    elif all(label.isdigit() and int(label) < len(names) for label in found):
        position = {str(i): i for i in range(len(names))}
    else:
        unknown = sorted(found - set(names))
        raise DataError(
            f"{path}: labels the model never saw: {unknown[:5]}{' ...' if len(unknown) > 5 else ''}; "
            f"it knows {names} (or ids 0..{len(names) - 1})"
        )
    truth = np.zeros((len(label_sets_read), len(names)), int)
    for row, labels in enumerate(label_sets_read):
        truth[row, [position[label] for label in labels]] = 1
    return truth


def _multi_label_report(result, mistakes, run, data):
    lines = [
        f"# Evaluation of {' + '.join(map(os.fspath, as_paths(run)))} on {data}",
        "",
        f"{result['rows']} rows, multi-label. Macro F1 **{result['macro_f1']:.4f}**, micro F1 "
        f"{result['micro_f1']:.4f}, samples F1 {result['samples_f1']:.4f}; subset accuracy (every label of a "
        f"row right) {result['subset_accuracy']:.4f}, Hamming loss {result['hamming_loss']:.4f}.",
        "",
        "| label | threshold | precision | recall | F1 | support | false positives | false negatives |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {_markdown_cell(name)} | {result['thresholds'][name]:.2f} | {m['precision']:.4f} | {m['recall']:.4f} | "
        f"{m['f1']:.4f} | {m['support']} | {m['false_positives']} | {m['false_negatives']} |"
        for name, m in result["per_label"].items()
    ]
    if mistakes:
        lines += [
            "",
            f"The {len(mistakes)} decisions furthest on the wrong side of their threshold (extra: decided, not "
            "true; missed: true, not decided):",
            "",
            "| label | mistake | probability | threshold | true labels | text |",
            "| --- | --- | ---: | ---: | --- | --- |",
        ]
        lines += [
            f"| {_markdown_cell(m['label'])} | {m['mistake']} | {m['probability']:.4f} | {m['threshold']:.2f} | "
            f"{_markdown_cell(', '.join(m['true']))} | {_markdown_cell(m['text'][:300])} |"
            for m in mistakes
        ]
    return "\n".join(lines) + "\n"


def _markdown_cell(text):
    """`text` as one Markdown table cell: every run of whitespace (line breaks of any kind, U+0085
    included) one space; HTML, pipes and backslashes as entities; quotes as they are."""
    text = html.escape(" ".join(str(text).split()), quote=False)
    return text.replace("|", "&#124;").replace("\\", "&#92;")


def _report(result, mistakes, run, data):
    names = result["label_names"]
    lines = [
        f"# Evaluation of {' + '.join(map(os.fspath, as_paths(run)))} on {data}",
        "",
        f"{result['rows']} rows. Accuracy **{result['accuracy']:.4f}**, macro F1 **{result['macro_f1']:.4f}**, "
        f"weighted F1 {result['weighted_f1']:.4f}.",
        "",
    ]
    if "members" in result:
        lines += [
            "The runs alone (the ensemble averages their probabilities):",
            "",
            "| run | accuracy | macro F1 |",
            "| --- | ---: | ---: |",
        ]
        lines += [
            f"| {_markdown_cell(member['run'])} | {member['accuracy']:.4f} | {member['macro_f1']:.4f} |"
            for member in result["members"]
        ]
        lines += [""]
    lines += ["| class | precision | recall | F1 | support |", "| --- | ---: | ---: | ---: | ---: |"]
    lines += [
        f"| {_markdown_cell(name)} | "
        + " | ".join("–" if m[key] is None else f"{m[key]:.4f}" for key in ("precision", "recall", "f1"))
        + f" | {m['support']} |"
        for name, m in result["per_class"].items()
    ]
    lines += [
        "",
        "Confusion matrix (rows: true label, columns: predicted):",
        "",
        "| true \\ predicted | " + " | ".join(map(_markdown_cell, names)) + " |",
        "| --- |" + " ---: |" * len(names),
    ]
    lines += [
        f"| {_markdown_cell(name)} | " + " | ".join(map(str, row)) + " |"
        for name, row in zip(names, result["confusion_matrix"])
    ]
    wrong = result["rows"] - int(np.trace(result["confusion_matrix"]))
    if not wrong:  # not a table of no rows (nor with --mistakes 0, which asks for none)
        lines += ["", "No mistakes: every row is labelled right."]
    elif mistakes:
        lines += [
            "",
            f"The {len(mistakes)} most confident of the {wrong:,} mistakes:",
            "",
            "| probability | true | predicted | text |",
            "| ---: | --- | --- | --- |",
        ]
        lines += [
            f"| {m['probability']:.4f} | {_markdown_cell(m['true'])} | {_markdown_cell(m['predicted'])} | "
            f"{_markdown_cell(m['text'][:300])} |"
            for m in mistakes
        ]
    return "\n".join(lines) + "\n"


def _confusion_png(confusion, names, path, columns=None, xlabel="predicted"):
    """A heatmap of `confusion`, rows `names` (true labels) and `columns` (default: `names` as predicted)."""
    columns = names if columns is None else columns
    with _plots.drawing() as pyplot:
        height = max(4.0, 0.6 * len(names) + 2)
        width = max(4.0, (0.6 if columns is names else 1.4) * len(columns) + 2)
        figure, axes = pyplot.subplots(figsize=(width + 1, height))
        image = axes.imshow(confusion, cmap="Blues", aspect="auto")
        axes.set_xticks(range(len(columns)), [str(c).replace("_", " ") for c in columns], rotation=45, ha="right")
        axes.set_yticks(range(len(names)), names)
        axes.set_xlabel(xlabel)
        axes.set_ylabel("true" if columns is names else "label (rows with it)")
        threshold = confusion.max() / 2 if confusion.size else 0
        for (row, column), count in np.ndenumerate(confusion):
            axes.text(
                column,
                row,
                str(count),
                ha="center",
                va="center",
                color="white" if count > threshold else "black",
                fontsize=9,
            )
        figure.colorbar(image, ax=axes)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100)
        pyplot.close(figure)
    with open(path, "wb") as handle:
        handle.write(buffer.getvalue())
