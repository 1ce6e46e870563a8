"""What the PNGs we draw (attention heatmaps, confusion matrices) share: matplotlib off-screen,
with fonts for Chinese and Japanese tokens and labels."""

import contextlib

# After DejaVu Sans, for the characters it lacks (matplotlib falls back font by font, character
# by character): CJK fonts of Linux, macOS and Windows, those installed. Without one, matplotlib
# warns that the glyphs are missing and draws boxes (Debian: `apt-get install fonts-wqy-microhei`).
CJK_FONTS = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Source Han Sans",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Hiragino Sans",
    "PingFang SC",
    "Microsoft YaHei",
    "Malgun Gothic",
)


def fonts():
    """The font families the PNGs are drawn with: DejaVu Sans, then the installed `CJK_FONTS`."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return ["DejaVu Sans"] + [name for name in CJK_FONTS if name in installed]


@contextlib.contextmanager
def drawing():
    """`matplotlib.pyplot` on the Agg backend (no display), drawing with `fonts()`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    with matplotlib.rc_context({"font.family": fonts()}):
        yield pyplot
