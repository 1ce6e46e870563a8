"""The command line itself: what it does to arguments before a command runs, and the line it prints for a failure."""

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from keras_textattn_cli import build_parser as _parser
from keras_textattn_cli import main

TILDE_PATHS = [
    [
        "train",
        "--model",
        "lama",
        "--data=~/d.csv",
        "--output=~/run",
        "--test-data=~/t.csv",
        "--validation-data=~/v.csv",
        "--data-dir=~/tfds",
        "--embeddings=~/v.vec",
        "--init-from=~/old",
    ],
    ["vectors", "--data=~/d.csv", "--data=~/e.csv", "--output=~/v.vec", "--dimension", "4"],
    ["export", "--run=~/run", "--format", "tflite", "--output=~/export"],
    [
        "tune",
        "--config=~/c.yaml",
        "--data=~/d.csv",
        "--directory=~/search",
        "--embeddings=~/v.vec",
        "--test-data=~/t.csv",
        "--validation-data=~/v.csv",
        "--data-dir=~/tfds",
    ],
    ["predict", "--run=~/run", "--run=~/other", "--data=~/d.csv", "--output=~/p.csv"],
    ["evaluate", "--run=~/run", "--data=~/d.csv", "--output=~/report"],
    [
        "explain",
        "--run=~/run",
        "--data=~/d.csv",
        "--html=~/a.html",
        "--png=~/a.png",
        "--top-tokens-csv=~/t.csv",
        "--top-tokens-md=~/t.md",
    ],
]


def _texts(folder):
    """`folder/texts.csv`: 20 rows of one text of six words, for `vectors`."""
    (folder / "texts.csv").write_text("text\n" + '"a good film, a dull plot"\n' * 20, encoding="utf-8")


@pytest.mark.parametrize("argv", TILDE_PATHS, ids=[argv[0] for argv in TILDE_PATHS])
def test_a_path_given_with_a_tilde_is_under_home(argv, tmp_path, monkeypatch):
    """`--output=~/runs` reaches the program as written (a shell expands `~` only at the start of
    a word): every path flag expands it, where a folder named `~` was made in the working directory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    args = vars(_parser().parse_args(argv))
    values = [
        value
        for values in args.values()
        for value in (values if isinstance(values, list) else [values])
        if isinstance(value, str)
    ]
    given = sum(argument.count("=~/") for argument in argv)
    assert sum(value.startswith(f"{tmp_path}/") for value in values) == given
    assert not [value for value in values if "~" in value]


@pytest.mark.parametrize("command", ["predict", "explain"])
def test_texts_given_with_text_are_refused_saying_how_to_give_them(command, capsys):
    """Texts are arguments. `--text "a film"` was taken for an abbreviated `--text-column`, and the
    error spoke of a column of --data the user never gave; now it says how texts are given."""
    with pytest.raises(SystemExit) as exit_:
        main([command, "--run", "run", "--text", "a good film"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"keras-textattn {command}: error: texts are given as arguments, not with --text: keras-textattn {command} "
        "--run RUN 'a text' 'another' (- reads them from standard input); --text-column names the text column of --data"
    )


@pytest.mark.parametrize(
    "argv, abbreviated",
    [
        (["predict", "--run", "run", "--text-col", "review"], "--text-col"),  # "review": a text to label
        (["train", "--model", "lama", "--data", "d.csv", "--output", "run", "--epoch", "2"], "--epoch 2"),
        (
            ["export", "--run", "run", "--format", "tflite", "--output", "e", "--quant", "int8", "--verb"],
            "--quant int8 --verb",
        ),
    ],
)
def test_options_are_not_abbreviated(argv, abbreviated, capsys):
    """Each option is written in full: an abbreviation is refused by name (argparse's default took
    it for the option it begins, and another option added later would make it ambiguous), by the
    command it was given to and after that command's usage, not the top level's."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: keras-textattn {argv[0]} ")
    assert err.strip().splitlines()[-1] == f"keras-textattn {argv[0]}: error: unrecognized arguments: {abbreviated}"


def test_vectors_written_to_a_tilde_path_land_under_home(tmp_path, monkeypatch):
    """End to end: the vectors of `--data=~/texts.csv` are written to `--output=~/v.vec` in the home
    folder, and nothing is made in the working directory."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    _texts(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    assert main(["vectors", "--data=~/texts.csv", "--output=~/v.vec", "--dimension", "4"]) == 0
    assert (home / "v.vec").read_text(encoding="utf-8").startswith("6 4\n")
    assert not list(work.iterdir())


def test_a_full_disk_is_one_line_naming_the_folder(tmp_path, small_disk, capsys):
    """Python's `OSError` ENOSPC names no file here (the vectors are written to a temporary file):
    the line names the folder of --output, and no file is left."""
    disk, _ = small_disk
    _texts(tmp_path)
    command = [
        "vectors",
        "--data",
        str(tmp_path / "texts.csv"),
        "--output",
        str(disk / "v.vec"),
        "--dimension",
        "20000",
    ]
    assert main(command) == 2  # 6 words of 20,000 numbers: about 1 MB
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"keras-textattn: error: no space left on the device that holds {disk}: free some space there, then run the "
        "command again (nothing half-written was left)"
    )
    assert os.listdir(disk) == []


def test_a_read_only_disk_is_one_line_naming_the_folder(tmp_path, small_disk, capsys):
    """EROFS named the lock file that found it (`[Errno 30] Read-only file system: '.../.run.lock'`)."""
    disk, remount = small_disk
    remount("ro")
    _texts(tmp_path)
    assert (
        main(["vectors", "--data", str(tmp_path / "texts.csv"), "--output", str(disk / "v.vec"), "--dimension", "4"])
        == 2
    )
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"keras-textattn: error: {disk} is on a read-only file system: write the output somewhere else"
    )


@pytest.mark.parametrize("command", ["train", "export", "predict"])
def test_ctrl_c_while_tensorflow_imports_is_one_line(command, tmp_path):
    """Ctrl-C in the first seconds, while TensorFlow imports, is one line and exit status 130, as it
    is later (it was an 83-line KeyboardInterrupt traceback)."""
    argv = {
        "train": ["train", "--model", "lama", "--data", "d.csv", "--output", "run"],
        "export": ["export", "--run", "run", "--format", "tflite", "--output", "out"],
        "predict": ["predict", "--run", "run", "a text"],
    }[command]
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_textattn_cli", *argv],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Once TensorFlow's library is mapped, the command line has started and TensorFlow is importing.
    deadline = time.monotonic() + 60
    while "libtensorflow" not in pathlib.Path(f"/proc/{process.pid}/maps").read_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr[-2000:]
    assert stderr.strip().splitlines()[-1].startswith("keras-textattn: interrupted") and "Traceback" not in stderr
    assert "(a replaced run was kept)" not in stderr


def test_an_output_inside_a_file_names_the_file(tmp_path, monkeypatch, capsys):
    """`--output texts.csv/v.vec`, a folder that is a file: one line naming it (was `[Errno 17] File
    exists: ...`), before any work, and the file untouched."""
    _texts(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["vectors", "--data", "texts.csv", "--output", "texts.csv/sub/v.vec", "--dimension", "4"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "keras-textattn: error: texts.csv is a file, not a folder; give a path whose folders are folders"
    )
    assert (tmp_path / "texts.csv").read_text(encoding="utf-8").startswith("text\n")


def test_a_mistyped_model_is_said_before_tensorflow_is_imported():
    """`train --model lamma` answered after seconds, TensorFlow imported first: the name (as the
    other values of the command line) is checked before it, in one line."""
    probe = (
        "import sys\nfrom keras_textattn_cli import main\n"
        "code = main(['train', '--model', 'lamma', '--data', 'd.csv', '--output', 'run'])\n"
        "print('exit', code, 'imported', sorted({'tensorflow', 'keras'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "exit 2 imported []"
    assert result.stderr.strip().splitlines() == [
        "keras-textattn: error: unknown model 'lamma' (--model); choose one of bigru, cspan, dual_axial, hcan, "
        "kim_cnn, lama, scalable_attention, transformer"
    ]


def _ended_by_exit_without_teardown(tmp_path, body):
    """A Python process that runs `body` and then `exit_without_teardown(3)`: its result."""
    probe = (
        "import atexit, pathlib, sys, threading, time\n"
        "from keras_textattn_cli.main import exit_without_teardown\n"
        f"folder = pathlib.Path({str(tmp_path)!r})\n"
        "atexit.register(lambda: (folder / 'atexit').write_text('ran'))\n"
        f"{body}\n"
        "print('printed, not flushed', end='')\n"
        "exit_without_teardown(3)\n"
        "print('never')\n"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)


def test_a_command_ends_with_its_status_its_output_and_its_exit_handlers(tmp_path):
    """`exit_without_teardown` skips only the interpreter's teardown (slow after TensorFlow's
    import): the status is the command's, buffered output is written, and the exit
    handlers (logging's, weakref finalizers', Ray's shutdown) run once."""
    result = _ended_by_exit_without_teardown(tmp_path, "atexit.register(lambda: print(' handler', end=''))")
    assert (result.returncode, result.stdout, result.stderr) == (3, "printed, not flushed handler", "")
    assert (tmp_path / "atexit").read_text() == "ran"


def test_a_command_waits_for_its_threads_before_it_ends(tmp_path):
    """A thread that is not a daemon, still running at the end, finishes first: the process then
    exits as usual (its exit handlers run once), with the command's status."""
    thread = (
        "def late():\n    time.sleep(0.5)\n    (folder / 'thread').write_text('finished')\n"
        "threading.Thread(target=late).start()"
    )
    result = _ended_by_exit_without_teardown(tmp_path, thread)
    assert (result.returncode, result.stdout, result.stderr) == (3, "printed, not flushed", "")
    assert (tmp_path / "thread").read_text() == "finished"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_the_installed_command_ends_without_the_teardown():
    """The `keras-textattn` script of the package's metadata and `python -m keras_textattn_cli`
    both run `command_line`, which ends through `exit_without_teardown`."""
    import importlib.metadata

    (script,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == "keras-textattn"]
    assert script.value == "keras_textattn_cli:command_line"
    result = subprocess.run(
        [sys.executable, "-m", "keras_textattn_cli", "train", "--model", "lamma", "--data", "d", "--output", "o"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "unknown model 'lamma'" in result.stderr
