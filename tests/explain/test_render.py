"""The attention page as a person sees it: rendered by headless Chromium, read from its pixels."""

import dataclasses
import html.parser
import shutil
import subprocess

import matplotlib.image
import numpy as np
import pytest

from keras_textattn.explain import Explanation
from keras_textattn.explain import to_html
from keras_textattn.explain import to_png
from keras_textattn.explain import top_tokens
from keras_textattn.explain.render import DARKEST
from keras_textattn.explain.render import LIGHTEST
from keras_textattn.explain.render import UNREAD_SHOWN
from keras_textattn.explain.render import WORD
from keras_textattn.explain.render import shades

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium not installed (CI installs Debian's chromium: .ci/run)"
)


def _explanation(weights, text="stocks fell after earnings"):
    """A text of four words and one attention map of `weights` (rows, 4)."""
    tokens, start = [], 0
    for word in text.split():
        start = text.index(word, start)
        tokens.append({"token": word, "start": start, "end": start + len(word)})
        start += len(word)
    return Explanation(
        text=text,
        tokens=tokens,
        label="Business",
        probabilities={"Business": 0.9, "World": 0.1},
        attention={"attention": np.asarray(weights, "float64")},
    )


def test_png_sizes_are_checked(tmp_path):
    """Sizes matplotlib cannot draw are one clear error, and nothing is written."""
    for size, message in (
        (dict(width=0), "width must be a positive whole number; got 0"),
        (dict(height=-5), "height must be a positive whole number; got -5"),
        (dict(max_tokens=0), "max_tokens must be a positive whole number; got 0"),
        # A million pixels a side failed inside Agg with std::bad_alloc.
        (dict(width=10**6), "width must be at most 10000 pixels; got 1000000"),
        (dict(height=10001), "height must be at most 10000 pixels; got 10001"),
    ):
        with pytest.raises(ValueError, match=message):
            to_png(_explanation(np.array([[0.1, 0.2, 0.3, 0.4]])), tmp_path / "map.png", **size)
    assert not list(tmp_path.iterdir())


def test_what_the_renderers_take(tmp_path):
    """to_html and top_tokens take one Explanation or a list; to_png one. Anything else, or a
    folder as the image's path, is one clear error, and nothing is written."""
    explanation = _explanation(np.array([[0.1, 0.2, 0.3, 0.4]]))
    assert to_html(explanation) == to_html([explanation]) and "earnings" in to_html(explanation)
    assert top_tokens(explanation, min_count=1) == top_tokens([explanation], min_count=1)
    for value, message in (("some text", "got str"), ([explanation, "x"], "item 1 is str"), (None, "got NoneType")):
        with pytest.raises(ValueError, match=f"to_html takes explain\\(\\)'s Explanations .*{message}"):
            to_html(value)
    with pytest.raises(ValueError, match="^title must be a string; got int$"):  # an AttributeError from html.escape
        to_html(explanation, title=3)
    with pytest.raises(ValueError, match="top_tokens takes .* item 0 is dict"):
        top_tokens([{"label": "Business"}])
    with pytest.raises(ValueError, match=r"to_png draws one Explanation \(explain\(...\)\[i\]\); got list of 1"):
        to_png([explanation], tmp_path / "map.png")
    with pytest.raises(ValueError, match=f"{tmp_path} is a folder; give the path of a file to write"):
        to_png(explanation, tmp_path)
    assert not list(tmp_path.iterdir())


def test_shades_follow_the_row_range():
    np.testing.assert_allclose(shades([0.07, 0.08, 0.075]), [LIGHTEST, DARKEST, (LIGHTEST + DARKEST) / 2])
    assert set(shades([0.25] * 4)) == {0.3} and len(shades([])) == 0


def test_heads_fold_away_behind_their_mean():
    weights = np.random.default_rng(0).dirichlet(np.ones(4), size=15)
    page = to_html([_explanation(weights)])

    class Lines(html.parser.HTMLParser):
        labels, in_details, folded = [], 0, 0

        def handle_starttag(self, tag, attrs):
            self.in_details += tag == "details"
            if ("class", "label") in attrs:
                self.folded += self.in_details > 0

        def handle_endtag(self, tag):
            self.in_details -= tag == "details"

    lines = Lines()
    lines.feed(page)
    assert "attention, mean of 15" in page and "<summary>15 rows of attention</summary>" in page
    assert lines.folded == 15  # every head inside <details>; the mean line outside
    assert f"{weights.mean(0).min():.3f}-{weights.mean(0).max():.3f}" in page  # the mean line's range


def _rendered(page, tmp_path, size=(900, 500)):
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    shot = tmp_path / "page.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={size[0]},{size[1]}",
            f"--screenshot={shot}",
            path.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return (matplotlib.image.imread(shot)[..., :3] * 255).round()


def _pixels_of(image, alpha):
    """How many pixels show the word colour at `alpha` over the white page (within 4 levels)."""
    colour = 255 - alpha * (255 - np.array([float(c) for c in WORD.split(",")]))
    return int(np.sum(np.all(np.abs(image - colour) <= 4, axis=-1)))


@needs_chromium
def test_nearly_uniform_attention_is_readable_in_a_browser(tmp_path):
    """Weights of 0.24-0.26 (close to uniform) must show as four clearly different shades,
    the lightest almost white and the darkest strong red. Shaded by weight / max, as
    before, all four were strong red (opacity 0.92-1.0)."""
    weights = [0.24, 0.245, 0.255, 0.26]
    image = _rendered(to_html([_explanation([weights])]), tmp_path)
    counts = {round(float(alpha), 2): _pixels_of(image, alpha) for alpha in shades(weights)}
    # Each word's box is about 15 x 40 pixels or more (glyphs cover part of it); the legend's
    # two boxes add to the lightest and darkest counts only.
    assert min(counts.values()) > 200, counts
    assert sorted(counts) == [LIGHTEST, 0.27, 0.66, DARKEST]
    colours = [255 - alpha * (255 - np.array([220.0, 50.0, 32.0])) for alpha in (LIGHTEST, DARKEST)]
    assert np.abs(colours[0] - colours[1]).max() > 150  # almost white against strong red


def test_chinese_tokens_are_drawn_in_the_png_not_boxes(cjk_font, tmp_path):
    """Two heatmaps that differ only in one Chinese token must differ in pixels: a font without
    the glyphs draws both as the same box (as DejaVu Sans alone did), and the label is lost."""
    weights = [[0.1, 0.2, 0.3, 0.4]]
    images = []
    for text in ("股 市 下 跌", "股 市 上 涨"):
        to_png(_explanation(weights, text), tmp_path / "map.png", width=400, height=300)
        images.append(matplotlib.image.imread(tmp_path / "map.png"))
    changed = np.any(np.abs(images[0] - images[1]) > 0.1, axis=-1)
    rows, columns = np.nonzero(changed)
    assert changed.sum() > 20, changed.sum()
    assert rows.min() > 300 * 0.7  # only in the token labels under the heatmap


@needs_chromium
def test_text_the_model_did_not_read_is_cut(tmp_path):
    """A 4 MB text of which the model read four words: the page stays small, and under the
    words read a browser shows a short excerpt and a note, not screens of unread text. Before,
    the whole text was on the page; its words filled the screen."""
    tail = " and then" * 450_000
    explanation = _explanation([[0.1, 0.2, 0.3, 0.4]], text="stocks fell after earnings" + tail)
    page = to_html(explanation)
    assert len(page) < 5000 and f"… {len(tail) - UNREAD_SHOWN:,} more characters the model did not read" in page
    # An unread stretch between words read (HCAN: a sentence's words past its length) is cut the same way.
    text = "stocks fell" + tail + " after earnings"
    read = [
        {"token": word, "start": text.index(word), "end": text.index(word) + len(word)}
        for word in ("stocks", "fell", "after", "earnings")
    ]
    middle = to_html(dataclasses.replace(explanation, text=text, tokens=read))
    assert len(middle) < 5000 and f"… {len(tail) + 1 - UNREAD_SHOWN:,} more" in middle  # the space before "after"
    assert middle.index("more characters") < middle.index(">after</span>")
    image = _rendered(page, tmp_path, size=(900, 900))
    ink = image.min(axis=-1) < 128  # glyphs of black (and #555) text
    assert ink[:450].mean() > 0.003 and ink[450:].mean() < 0.001  # the page ends in the top half


def test_a_text_without_words_draws_a_note_not_an_empty_heatmap(tmp_path):
    """An empty text has no tokens: the PNG says so in words. It drew a one-cell heatmap stretched
    beside the labels of four heads, a pale stripe by the first head's row and nothing by the others."""
    to_png(_explanation(np.zeros((4, 0)), text=""), tmp_path / "empty.png")
    pixels = (matplotlib.image.imread(tmp_path / "empty.png")[..., :3] * 255).round()
    tinted = (pixels[..., 0] > 240) & (pixels[..., 2] < 245) & (pixels[..., 0] - pixels[..., 2] > 8)  # Reds' palest
    assert not tinted.any()
    middle = pixels[150:250, 240:1180].min(axis=-1) < 100  # the note's letters, in the middle of the plot
    assert 0.005 < middle.mean() < 0.2
