"""The package's shape, read from its source (AST): no import cycles, no function too long to
read, `train()` small, the examples built on the library alone, and every `TrainConfig` field
reachable from the command line."""

import ast
import dataclasses
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("keras_textattn", "keras_textattn_config", "keras_textattn_cli")
LONGEST_FUNCTION = 100  # lines of code, docstrings, comments and blank lines not counted


def _modules():
    """`{module name: path}` of every module of `PACKAGES`."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(tree, name, is_package, modules):
    """The modules of `modules` that a module's syntax tree imports anywhere (inside functions too)."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            for alias in node.names:  # `from package import module` imports that module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {module for module in found if module in modules}


def _import_graph():
    modules = _modules()
    return {
        name: _imports(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py", modules)
        for name, path in modules.items()
    }


def _cycle(graph):
    """One import cycle of `graph` as a list of modules, or None."""
    state = {}

    def visit(module, path):
        state[module] = "open"
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                return path[path.index(imported) :] + [imported]
            if imported not in state:
                found = visit(imported, path + [imported])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_module_imports_itself_through_others():
    graph = _import_graph()
    assert len(graph) > 40 and "keras_textattn.training.run" in graph["keras_textattn.training"]
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def _code_lines(node, source_lines):
    """Lines of code of a function: its lines less blank ones, comments and its docstring."""
    lines = set(range(node.lineno, node.end_lineno + 1))
    body = node.body[0]
    if isinstance(body, ast.Expr) and isinstance(body.value, ast.Constant) and isinstance(body.value.value, str):
        lines -= set(range(body.lineno, body.end_lineno + 1))
    return sum(
        1
        for number in lines
        if source_lines[number - 1].strip() and not source_lines[number - 1].lstrip().startswith("#")
    )


def test_no_function_is_longer_than_a_screenful():
    too_long = []
    for path in _modules().values():
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                count = _code_lines(node, source.splitlines())
                if count > LONGEST_FUNCTION:
                    too_long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({count} lines)")
    assert not too_long, too_long


def test_train_takes_a_config_not_fifty_arguments():
    from keras_textattn.training import run

    tree = ast.parse(pathlib.Path(run.__file__).read_text(encoding="utf-8"))
    (train,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "train"]
    named = train.args.posonlyargs + train.args.args + train.args.kwonlyargs
    assert [argument.arg for argument in named] == ["model", "data", "output", "config"]
    assert train.args.kwarg.arg == "overrides"


def test_examples_use_the_library_not_the_command_line():
    for path in sorted((ROOT / "examples").glob("*.py")):
        modules = {
            alias.name
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        modules |= {
            node.module
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module
        }
        assert not [module for module in modules if module.startswith("keras_textattn_cli")], path.name


def test_every_config_field_has_a_flag_and_a_help_line():
    """Each `TrainConfig` field is a `train` flag with its own one-line help, parsed back to the
    field's default when not given: a field added without its flag, or a flag that reaches the
    wrong field, fails here."""
    from keras_textattn_cli import build_parser
    from keras_textattn_cli.common import config_overrides
    from keras_textattn_config.train_config import TrainConfig
    from keras_textattn_config.train_config import default_of
    from keras_textattn_config.train_config import flag_of
    from keras_textattn_config.train_config import option_of

    (commands,) = [action for action in build_parser()._actions if action.dest == "command"]
    train = commands.choices["train"]
    fields = dataclasses.fields(TrainConfig)
    for field in fields:
        action = train._option_string_actions.get(flag_of(field))
        assert action is not None, f"{field.name} has no flag"
        shown = action.help.replace("%%", "%")  # argparse prints "%%" as "%"
        assert option_of(field).help and "\n" not in option_of(field).help and shown == option_of(field).help
    args = train.parse_args(["--data", "d.csv", "--output", "run"])
    names = [field.name for field in fields]
    parsed = config_overrides(args, names)
    # --quiet's default: a progress bar on a terminal, a line per epoch elsewhere; --distribute's: none.
    flag_defaults = {"verbose": parsed["verbose"], "distribute": "none"}
    for field in fields:
        assert parsed[field.name] == flag_defaults.get(field.name, default_of(field)), field.name
    # ...and the config the flags' defaults make is train()'s own: "none" is no strategy, as None is
    # (the run's choices that read `distribute is None`, such as cutting each batch's padding, match).
    assert TrainConfig(**parsed) == TrainConfig(**flag_defaults) == TrainConfig(verbose=parsed["verbose"])


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"]])
def test_help_answers_without_tensorflow(argv):
    probe = (
        "import sys\nfrom keras_textattn_cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('imported:', sorted({'tensorflow', 'keras'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "imported: []", result.stdout[-500:]
