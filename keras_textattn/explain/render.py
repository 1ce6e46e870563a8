"""Attention maps as a self-contained HTML page, a PNG heatmap, and top-token tables."""

import csv
import html

import numpy as np


def _highlighted(text, spans, weights, colour):
    """`text` with each span's background shaded by its weight (scaled to the row's maximum)."""
    top = max(float(np.max(weights)), 1e-12) if len(weights) else 1.0
    parts, cursor = [], 0
    for span, weight in zip(spans, weights):
        parts.append(html.escape(text[cursor : span["start"]]))
        alpha = float(weight) / top
        parts.append(
            f'<span class="w" style="background: rgba({colour}, {alpha:.3f})" title="{float(weight):.4f}">'
            f"{html.escape(text[span['start']:span['end']])}</span>"
        )
        cursor = span["end"]
    parts.append(html.escape(text[cursor:]))
    return "".join(parts)


def to_html(explanations, title="Attention"):
    """One self-contained HTML page (no external assets): for each text, its prediction,
    then one line per attention map row (head / query) with the words shaded by weight;
    for HCAN also one line per head with the sentences shaded."""
    blocks = []
    for explanation in explanations:
        probabilities = ", ".join(f"{html.escape(name)} {p:.3f}" for name, p in explanation.probabilities.items())
        rows = []
        for name, weights in explanation.attention.items():
            for index, row in enumerate(weights):
                label = html.escape(name if len(weights) == 1 else f"{name} [{index}]")
                rows.append(f'<tr><th>{label}</th><td>{_highlighted(explanation.text, explanation.tokens, row, "220, 50, 32")}</td></tr>')
        for name, weights in explanation.sentence_attention.items():
            for index, row in enumerate(weights):
                label = html.escape(f"{name} [{index}] (sentences)")
                rows.append(f'<tr><th>{label}</th><td>{_highlighted(explanation.text, explanation.sentences, row, "32, 90, 220")}</td></tr>')
        blocks.append(
            f'<section><h2>{html.escape(explanation.label)}</h2><p class="p">{probabilities}</p>'
            f"<table>{''.join(rows)}</table></section>"
        )
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:70em}th{text-align:left;vertical-align:top;"
        "padding-right:1em;font-weight:normal;color:#555;white-space:nowrap}td{padding:.3em 0;line-height:1.6}"
        ".w{border-radius:3px}.p{color:#555}section{border-bottom:1px solid #ddd;padding-bottom:1em}"
    )
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>{''.join(blocks)}</body></html>\n"
    )


def to_png(explanation, path, width=1200, height=400, max_tokens=60):
    """A heatmap of one explanation: one row per attention map row, one column per token
    (the first `max_tokens`), saved as a `width` x `height` pixel PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, rows = [], []
    for name, weights in explanation.attention.items():
        for index, row in enumerate(weights):
            labels.append(name if len(weights) == 1 else f"{name} [{index}]")
            rows.append(np.asarray(row[:max_tokens], "float64"))
    tokens = [t["token"] for t in explanation.tokens[:max_tokens]]
    figure = plt.figure(figsize=(width / 100, height / 100), dpi=100)
    axes = figure.add_axes([0.2, 0.3, 0.78, 0.6])
    matrix = np.stack(rows) if rows and tokens else np.zeros((1, 1))
    axes.imshow(matrix, aspect="auto", cmap="Reds")
    axes.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=8)
    axes.set_yticks(range(len(labels)), labels, fontsize=8)
    axes.set_title(f"predicted: {explanation.label}", fontsize=10)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_top_tokens(table, csv_path=None, markdown_path=None):
    """Write `top_tokens(...)` as CSV (`label,rank,token,score`) and/or a markdown table."""
    if csv_path:
        with open(csv_path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["label", "rank", "token", "score"])
            for label, tokens in table.items():
                for rank, (token, score) in enumerate(tokens, start=1):
                    writer.writerow([label, rank, token, f"{score:.6f}"])
    if markdown_path:
        lines = ["| label | top attended tokens |", "| --- | --- |"]
        for label, tokens in table.items():
            words = ", ".join(token.replace("|", "\\|") for token, _ in tokens)
            lines.append(f"| {label.replace('|', chr(92) + '|')} | {words} |")
        with open(markdown_path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
