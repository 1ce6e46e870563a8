"""Attention maps as a self-contained HTML page, a PNG heatmap, and top-token tables."""

import csv
import html
import io
import os

import numpy as np

from keras_textattn import _plots
from keras_textattn._files import write_atomically
from keras_textattn._files import write_text
from keras_textattn.errors import UserError
from keras_textattn.errors import check_whole
from keras_textattn.explain.attention_maps import Explanation
from keras_textattn.explain.attention_maps import as_explanations

LIGHTEST, DARKEST = 0.08, 0.85  # the opacity of a row's smallest and largest weight (text stays legible)
MAX_PIXELS = 10000  # a side of `to_png`'s image (10,000 x 10,000 is 400 MB of pixels)
UNIFORM = 0.3  # the opacity of every word of a row whose weights are all equal
UNREAD_SHOWN = 300  # characters of a stretch the model did not read shown before it is cut (`_unread`)
WORD, SENTENCE = "220, 50, 32", "32, 90, 220"  # RGB of the shading


def shades(weights):
    """The opacity of each weight of one row: its place between the row's smallest and
    largest weight, from `LIGHTEST` to `DARKEST`.

    Attention over a sentence is often close to uniform (0.07-0.08 per word): shaded by
    `weight / max`, every word got the same strong colour; the row's range shows which
    words the head prefers. A row of equal weights gets one light shade (`UNIFORM`).
    """
    weights = np.asarray(weights, "float64")
    if not len(weights):
        return weights
    low, high = float(weights.min()), float(weights.max())
    if high - low <= 1e-9 * max(abs(high), 1.0):
        return np.full(len(weights), UNIFORM)
    return LIGHTEST + (DARKEST - LIGHTEST) * (weights - low) / (high - low)


def _unread(stretch):
    """A stretch of text between (or around) the words read, escaped; past `UNREAD_SHOWN`
    characters, cut, greyed, with a note of how many more there are. A 4 MB text, of which the encoder
    reads the first words, made a 4 MB page (and 4 MB more for each head's line)."""
    if len(stretch) <= UNREAD_SHOWN:
        return html.escape(stretch)
    return (
        f'<span class="p">{html.escape(stretch[:UNREAD_SHOWN])} … {len(stretch) - UNREAD_SHOWN:,} more '
        "characters the model did not read</span> "
    )


def _highlighted(text, spans, weights, colour):
    """`text` with each span's background shaded by `shades(weights)`; hover shows the weight."""
    parts, cursor = [], 0
    for span, weight, alpha in zip(spans, weights, shades(weights)):
        parts.append(_unread(text[cursor : span["start"]]))
        parts.append(
            f'<span class="w" style="background: rgba({colour}, {alpha:.3f})" title="{float(weight):.4f}">'
            f"{html.escape(text[span['start'] : span['end']])}</span>"
        )
        cursor = span["end"]
    parts.append(_unread(text[cursor:]))
    return "".join(parts)


def _rows(name, weights, text, spans, colour, unit):
    """The lines of one attention map: one line for a single row; for several rows (heads,
    queries), their mean first and the rows themselves folded away."""

    def line(label, row):
        scale = f"{float(np.min(row)):.3f}-{float(np.max(row)):.3f}" if len(row) else ""
        return (
            f'<div class="row"><div class="label">{html.escape(label)}<br><small>{scale}</small></div>'
            f'<div class="text">{_highlighted(text, spans, row, colour)}</div></div>'
        )

    weights = np.asarray(weights)
    if len(weights) == 1:
        return line(f"{name}{unit}", weights[0])
    folded = "".join(line(f"{name} [{index}]{unit}", row) for index, row in enumerate(weights))
    return (
        line(f"{name}{unit}, mean of {len(weights)}", weights.mean(0))
        + f"<details><summary>{len(weights)} rows of {html.escape(name)}</summary>{folded}</details>"
    )


def to_html(explanations, title="Attention"):
    """One self-contained HTML page (no external assets, no script): for each text, its
    prediction, then each attention map's words shaded by weight (`shades`: darkest for the
    row's largest weight, lightest for its smallest; the range is printed under the map's
    name, and a word's weight shows on hover). A map with several heads or queries shows their
    mean first and folds the heads away. For HCAN, the sentences are shaded the same way. Text
    the model did not read (past its sequence length) is cut after `UNREAD_SHOWN` characters.
    `explanations`: `explain()`'s list, or one `Explanation`."""
    if not isinstance(title, str):
        raise UserError(f"title must be a string; got {type(title).__name__}")
    blocks = []
    for explanation in as_explanations(explanations, "to_html"):
        probabilities = ", ".join(f"{html.escape(name)} {p:.3f}" for name, p in explanation.probabilities.items())
        rows = [
            _rows(name, weights, explanation.text, explanation.tokens, WORD, "")
            for name, weights in explanation.attention.items()
        ]
        rows += [
            _rows(name, weights, explanation.text, explanation.sentences, SENTENCE, " (sentences)")
            for name, weights in explanation.sentence_attention.items()
        ]
        blocks.append(
            f"<section><h2>{html.escape(', '.join(explanation.predicted()) or 'no label')}</h2>"
            f'<p class="p">{probabilities}</p>'
            f"{''.join(rows)}</section>"
        )
    legend = (
        '<p class="legend">Each line shades its words from <span class="w" style="background: '
        f'rgba({WORD}, {LIGHTEST})">its smallest weight</span> to <span class="w" style="background: '
        f'rgba({WORD}, {DARKEST})">its largest</span> (the numbers under its name); hover a word for its '
        "weight.</p>"
    )
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:70em}.row{display:flex;margin:.2em 0}"
        ".label{flex:0 0 14em;color:#555;padding-right:1em}.text{line-height:1.8}.w{border-radius:3px;padding:0 1px}"
        ".p,.legend{color:#555}summary{color:#555;cursor:pointer;margin:.3em 0}"
        "section{border-bottom:1px solid #ddd;padding-bottom:1em}"
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>{legend}{''.join(blocks)}</body></html>\n"
    )


def image_format(path):
    """The format `to_png` writes to `path`: its extension's (`.jpg`, `.svg`, `.pdf`, ... as
    matplotlib writes them), PNG for a path without one; a `UserError` for another extension."""
    from matplotlib.backend_bases import FigureCanvasBase

    extension = os.path.splitext(os.fspath(path))[1][1:].lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    if extension and extension not in formats:
        raise UserError(
            f"{os.fspath(path)}: cannot draw a .{extension} image; give a path ending in "
            f"{', '.join('.' + name for name in sorted(formats))}"
        )
    return extension or "png"


def to_png(explanation, path, width=1200, height=400, max_tokens=60):
    """A heatmap of one explanation: one row per attention map row, one column per token
    (the first `max_tokens`), saved as a `width` x `height` pixel PNG at `path` (or in the format
    of its extension: `image_format`), written whole or not at all. Chinese and Japanese tokens
    need a CJK font (`_plots.CJK_FONTS`); without one they are drawn as boxes."""
    if not isinstance(explanation, Explanation):
        count = f" of {len(explanation)}" if isinstance(explanation, (list, tuple)) else ""
        raise UserError(f"to_png draws one Explanation (explain(...)[i]); got {type(explanation).__name__}{count}")
    for name, value in (("width", width), ("height", height), ("max_tokens", max_tokens)):
        check_whole(name, value)
    for name, value in (("width", width), ("height", height)):
        if value > MAX_PIXELS:  # a million failed inside Agg with std::bad_alloc
            raise UserError(f"{name} must be at most {MAX_PIXELS} pixels; got {value}")
    file_format = image_format(path)
    labels, rows = [], []
    for name, weights in explanation.attention.items():
        for index, row in enumerate(weights):
            labels.append(name if len(weights) == 1 else f"{name} [{index}]")
            rows.append(np.asarray(row[:max_tokens], "float64"))
    tokens = [t["token"] for t in explanation.tokens[:max_tokens]]
    with _plots.drawing() as plt:
        figure = plt.figure(figsize=(width / 100, height / 100), dpi=100)
        axes = figure.add_axes([0.2, 0.3, 0.78, 0.6])
        if rows and tokens:
            axes.imshow(np.stack(rows), aspect="auto", cmap="Reds")
            axes.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=8)
            axes.set_yticks(range(len(labels)), labels, fontsize=8)
        else:  # an empty text: a note, not a stripe of one cell beside labels of rows that are not there
            axes.set_axis_off()
            axes.text(
                0.5,
                0.5,
                "no words to show: the model read none in this text",
                ha="center",
                va="center",
                transform=axes.transAxes,
                fontsize=12,
            )
        axes.set_title(f"predicted: {', '.join(explanation.predicted()) or 'no label'}", fontsize=10)
        write_atomically(path, lambda temporary: figure.savefig(temporary, dpi=100, format=file_format))
        plt.close(figure)


def write_top_tokens(table, csv_path=None, markdown_path=None):
    """Write `top_tokens(...)` as CSV (`label,rank,token,score`) and/or a markdown table, each
    file whole or not at all."""
    if csv_path:
        rows = io.StringIO(newline="")
        writer = csv.writer(rows)
        writer.writerow(["label", "rank", "token", "score"])
        for label, tokens in table.items():
            for rank, (token, score) in enumerate(tokens, start=1):
                writer.writerow([label, rank, token, f"{score:.6f}"])
        write_text(csv_path, rows.getvalue())
    if markdown_path:
        lines = ["| label | top attended tokens |", "| --- | --- |"]
        for label, tokens in table.items():
            words = ", ".join(token.replace("|", "\\|") for token, _ in tokens)
            lines.append(f"| {label.replace('|', chr(92) + '|')} | {words} |")
        write_text(markdown_path, "\n".join(lines) + "\n")
