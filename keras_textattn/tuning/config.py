"""Search spaces from tuner configs (YAML), checked before any training.

One config per paper model ships with the package, in `keras_textattn/tuning/configs/`
(`tuner_configs/` in a checkout): `load_config("lama")` reads the shipped `lama.yaml`, so a
search needs no checkout (`keras-textattn tune --config lama`).
"""

import copy
import dataclasses
import importlib.resources
import math
import os

import yaml

from keras_textattn.errors import SEEDS
from keras_textattn.errors import UserError
from keras_textattn.models import BUILDERS
from keras_textattn.models import PRESETS
from keras_textattn.models import get_spec
from keras_textattn.models.spec import GIVEN_BY_TRAINING
from keras_textattn_config.schedules import EPOCH_SCHEDULES
from keras_textattn_config.schedules import parse_schedule

TOP_LEVEL = {
    "model": True,
    "objective": False,
    "preset": False,
    "tuner": False,
    "encoder": False,
    "fixed": False,
    "hyperparameters": True,
}
TUNER_SETTINGS = {
    "max_trials": int,
    "epochs": int,
    "batch_size": int,
    "executions_per_trial": int,
    "seed": int,
    "lr_schedule": str,
}
ENCODER_SETTINGS = {
    "max_tokens": int,
    "min_frequency": int,
    "sequence_length": int,
    "max_sentences": int,
    "split_long_sentences": bool,
    "bigram_buckets": int,
}
OBJECTIVES = ("val_accuracy", "val_loss", "val_macro_f1", "accuracy", "loss", "macro_f1")
TYPES = ("int", "float", "choice", "boolean")
KEYS = {
    "int": {"type", "min", "max", "step", "sampling", "default"},
    "float": {"type", "min", "max", "step", "sampling", "default"},
    "choice": {"type", "values", "default"},
    "boolean": {"type", "default"},
}
# `freeze_embeddings`: searched only with pretrained vectors (`tune(embeddings=...)`); a fixed
# one is `tune(freeze_embeddings=True)`.
TRAINING_HYPERPARAMETERS = ("learning_rate", "freeze_embeddings")
# Searched by cutting what the one adapted encoder gives (`TextEncoder.cut_vocabulary`,
# `TextEncoder.cut_length`; a flat model's `sequence_length` only): see `tune`.
ENCODER_HYPERPARAMETERS = ("max_tokens", "sequence_length")
# Builder arguments that must agree with the encoder's output (`ModelSpec.shape_arguments`):
# set under `encoder`, never under `fixed`.
SHAPE_ARGUMENTS = tuple(name for name in GIVEN_BY_TRAINING if name in ENCODER_SETTINGS)


SHIPPED = importlib.resources.files(__package__) / "configs"


def shipped_configs():
    """The names of the configs shipped with the package (one per paper model)."""
    return sorted(entry.name[: -len(".yaml")] for entry in SHIPPED.iterdir() if entry.name.endswith(".yaml"))


class ConfigError(UserError):
    """A tuner config that cannot be used; the message names the file, the key and what is allowed."""


class _TwiceGiven(Exception):
    pass


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise _TwiceGiven(
                    f"{key}: given twice (line {key_node.start_mark.line + 1}); YAML would keep the last one silently"
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


@dataclasses.dataclass
class TuningConfig:
    """A checked tuner config (`path`: the file read): `hyperparameters` maps a name to its
    spec dict. `preset`: the builder arguments a trial takes where the config neither fixes
    nor searches them, as `train`'s preset ("cpu": sizes that train in minutes on 2 cores;
    "paper": the builder's own defaults, the paper's sizes). `lr_schedule`: every trial's
    learning-rate schedule, a function of the epoch ("constant", "cosine", "step:E1,...");
    None until `tune` sets the preset's, as `train` would use (`ModelSpec.training_defaults`)."""

    path: str
    model: str
    preset: str = "cpu"
    objective: str = None  # None: by the data, `objective_for`
    max_trials: int = 10
    epochs: int = 3
    batch_size: int = 32
    executions_per_trial: int = 1
    seed: int = 0
    lr_schedule: str = None
    encoder: dict = dataclasses.field(default_factory=dict)
    fixed: dict = dataclasses.field(default_factory=dict)
    hyperparameters: dict = dataclasses.field(default_factory=dict)
    embeddings: dict = None  # set by `tune`: {"source": "word2vec" or a file, "frozen": bool}, or None

    @property
    def direction(self):
        return "min" if self.objective.endswith("loss") else "max"

    def objective_for(self, multi_label):
        """The objective a search maximises (a loss: minimises): the config's, else the validation
        accuracy, or for `multi_label` data the validation macro F1 at each label's best threshold
        (`BestThresholdMacroF1`: the subset accuracy rewards a model for leaving rare labels out).
        A macro F1 objective on single-label data is a `ConfigError`: only multi-label runs log it."""
        if self.objective is None:
            return "val_macro_f1" if multi_label else "val_accuracy"
        if self.objective.endswith("macro_f1") and not multi_label:
            raise ConfigError(
                f"{self.path}: objective: {self.objective} is for multi-label data (each label's threshold); "
                "a search of single-label data takes val_accuracy or val_loss"
            )
        return self.objective

    def largest(self, name):
        """The largest value of the encoder hyperparameter `name` (`max_tokens` or
        `sequence_length`) the search can try (the encoder is adapted with it), or None when it
        is not searched."""
        spec = self.hyperparameters.get(name)
        if spec is None:
            return None
        return max(spec["values"]) if spec["type"] == "choice" else spec["max"]


def _is(value, kind):
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, kind)


def load_config(path):
    """Read and check a tuner config: a YAML file, the name of a shipped one
    (`shipped_configs()`: "lama" reads `configs/lama.yaml`; a file of that name wins), or
    a dict of the keys a YAML file holds (named "config" in the errors).

    Raises:
        ConfigError: a key given twice, an unknown key, a wrong type, an empty range, a default outside
            its range or choices, or a hyperparameter the model's builder does not take.
    """
    if isinstance(path, dict):
        return _checked_config("config", copy.deepcopy(path))
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(
            f"a tuner config is a YAML file, the name of a shipped one or a dict of its keys; got {type(path).__name__}"
        )
    path = os.fspath(path)
    if not os.path.isfile(path):
        if path not in shipped_configs():
            raise ConfigError(
                f"{path}: no such tuner config (a YAML file, or the name of one shipped with "
                f"keras-textattn: {', '.join(shipped_configs())})"
            )
        path = str(SHIPPED / f"{path}.yaml")
    with open(path, encoding="utf-8") as handle:
        try:
            raw = yaml.load(handle, Loader=_UniqueKeyLoader)
        except yaml.YAMLError as error:  # its first line is the context; the problem and its place follow
            mark = getattr(error, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            problem = getattr(error, "problem", None) or str(error).splitlines()[0]
            raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
        except _TwiceGiven as error:
            raise ConfigError(f"{path}: {error}") from None
    return _checked_config(path, raw)


def _checked_config(path, raw):
    """The `TuningConfig` of `raw`, a config's keys read from `path` (a file, or "config"), checked."""

    def fail(key, problem, allowed=None):
        raise ConfigError(f"{path}: {key}: {problem}" + (f"; allowed: {allowed}" if allowed else ""))

    _check_top_level(fail, raw)
    model = raw["model"]
    if model not in BUILDERS:
        fail("model", f"unknown model {model!r}", ", ".join(sorted(BUILDERS)))
    config = TuningConfig(path=path, model=model)
    preset = raw.get("preset", config.preset)
    if preset not in PRESETS:
        fail("preset", f"unknown preset {preset!r}", ", ".join(PRESETS))
    config.preset = preset
    objective = raw.get("objective", config.objective)
    if objective is not None and objective not in OBJECTIVES:
        fail("objective", f"unknown objective {objective!r}", ", ".join(OBJECTIVES))
    config.objective = objective
    _set_sections(fail, config, raw)
    searchable = get_spec(model).settable_arguments() + list(TRAINING_HYPERPARAMETERS)
    fixed = _set_fixed(fail, config, raw, searchable)
    spaces = raw["hyperparameters"]
    if not isinstance(spaces, dict) or not spaces:
        fail("hyperparameters", "expected a non-empty mapping of name to search space")
    searchable += list(ENCODER_HYPERPARAMETERS)
    for name, spec in spaces.items():
        _check_space(fail, config, name, spec, searchable, fixed)
    config.hyperparameters = dict(spaces)
    return config


def _check_top_level(fail, raw):
    if not isinstance(raw, dict):
        fail("(top level)", "expected a mapping of keys", ", ".join(TOP_LEVEL))
    for key in raw:
        if key not in TOP_LEVEL:
            fail(key, "unknown key", ", ".join(TOP_LEVEL))
    for key, required in TOP_LEVEL.items():
        if required and key not in raw:
            fail(key, "missing")


def _set_sections(fail, config, raw):
    """The config's `tuner` and `encoder` settings, checked."""
    for section, allowed in (("tuner", TUNER_SETTINGS), ("encoder", ENCODER_SETTINGS)):
        values = raw.get(section) or {}
        if not isinstance(values, dict):
            fail(section, "expected a mapping", ", ".join(allowed))
        for key, value in values.items():
            if key not in allowed:
                fail(f"{section}.{key}", "unknown key", ", ".join(allowed))
            if key == "lr_schedule":  # a function of the epoch: trials have no resumable plateau state
                try:
                    kind = parse_schedule(value)[0] if isinstance(value, str) else None
                except UserError:
                    kind = None
                if kind not in EPOCH_SCHEDULES:
                    fail(
                        f"{section}.{key}",
                        f"expected a schedule that is a function of the epoch, got {value!r}",
                        "constant, cosine, step:E1,E2,... (increasing epochs counted from 1)",
                    )
                continue
            if allowed[key] is bool:
                if not _is(value, bool):
                    fail(f"{section}.{key}", f"expected true or false, got {value!r}")
                continue
            if key == "seed":
                if not _is(value, int) or not 0 <= value < SEEDS:
                    fail(f"{section}.{key}", f"expected an integer from 0 to {SEEDS - 1}, got {value!r}")
            elif not _is(value, allowed[key]) or value < 1:
                fail(f"{section}.{key}", f"expected a positive integer, got {value!r}")
        if section == "tuner":
            for key, value in values.items():
                setattr(config, key, value)
        else:
            config.encoder = dict(values)


def _set_fixed(fail, config, raw, searchable):
    """The config's `fixed` builder arguments, checked; returns them as given."""
    model = config.model
    fixed = raw.get("fixed") or {}
    if not isinstance(fixed, dict):
        fail("fixed", "expected a mapping of builder arguments to values", ", ".join(searchable))
    for name in fixed:
        if name in ENCODER_HYPERPARAMETERS + SHAPE_ARGUMENTS:
            fail(f"fixed.{name}", f"a fixed {name} is set under `encoder`")
        if name not in searchable:
            fail(f"fixed.{name}", f"not an argument of the {model} builder", ", ".join(searchable))
        if name in get_spec(model).flag_arguments() and not _is(fixed[name], bool):
            fail(f"fixed.{name}", f"expected true or false, got {fixed[name]!r}")
        if name == "freeze_embeddings":
            fail(
                f"fixed.{name}",
                "fixed frozen embeddings are asked for with --freeze-embeddings (tune(freeze_embeddings=True))",
            )
        if name == "learning_rate":
            _check_learning_rates(fail, f"fixed.{name}", [fixed[name]])
    config.fixed = dict(fixed)
    for name in ("max_sentences", "split_long_sentences"):
        if name in config.encoder and not get_spec(model).is_hierarchical(config.fixed):
            fail(f"encoder.{name}", f"for hierarchical models; {model} reads flat texts here")
    return fixed


def _check_space(fail, config, name, spec, searchable, fixed):
    """One search space of `hyperparameters`."""
    model = config.model
    key = f"hyperparameters.{name}"
    if name in SHAPE_ARGUMENTS and name not in searchable:
        fail(
            key,
            f"{name} is set under `encoder`: the encoder is adapted once, and its ids of every trial have "
            "the one shape it gives (of these shapes, a search varies a flat model's sequence_length)",
        )
    if name == "hierarchical":
        fail(
            key,
            "hierarchical decides what the encoder gives (sentences of words, or one row of words), which "
            "every trial reads: fix it under `fixed`",
        )
    if name == "sequence_length" and get_spec(model).is_hierarchical(config.fixed):
        fail(
            key,
            f"{model} reads sentences here: its words per sentence are set under `encoder` (a search "
            "varies a flat model's sequence_length)",
        )
    if name not in searchable:
        fail(key, f"not an argument of the {model} builder", ", ".join(searchable))
    if name in fixed:
        fail(key, "also given under `fixed`")
    if not isinstance(spec, dict):
        fail(key, "expected a mapping with `type`", ", ".join(TYPES))
    kind = spec.get("type")
    if kind not in TYPES:
        fail(f"{key}.type", f"unknown type {kind!r}", ", ".join(TYPES))
    for field in spec:
        if field not in KEYS[kind]:
            fail(f"{key}.{field}", f"unknown key for type {kind}", ", ".join(sorted(KEYS[kind])))
    if "default" not in spec:
        fail(f"{key}.default", "missing (the paper's value)")
    default = spec["default"]
    _check_values(fail, key, kind, spec, default)
    if name == "freeze_embeddings" and kind != "boolean":
        fail(f"{key}.type", f"freeze_embeddings is searched as boolean, not {kind}")
    if name in ENCODER_HYPERPARAMETERS:
        _check_encoder_hyperparameter(fail, key, name, spec, config.encoder)
    if name == "learning_rate":
        ends = {"choice": spec.get("values"), "boolean": [default]}.get(kind, [spec.get("min"), spec.get("max")])
        _check_learning_rates(fail, key, ends)


def _check_values(fail, key, kind, spec, default):
    """The range (int, float) or the choices of a search space, and its default among them."""
    if kind in ("int", "float"):
        number = int if kind == "int" else float
        for field in ("min", "max"):
            if field not in spec:
                fail(f"{key}.{field}", "missing")
            if not _is(spec[field], number):
                fail(f"{key}.{field}", f"expected {'an integer' if kind == 'int' else 'a number'}, got {spec[field]!r}")
        if not spec["min"] < spec["max"]:
            fail(key, f"empty range: min {spec['min']} must be below max {spec['max']}")
        sampling = spec.get("sampling", "linear")
        if sampling not in ("linear", "log"):
            fail(f"{key}.sampling", f"unknown sampling {sampling!r}", "linear, log")
        if sampling == "log" and spec["min"] <= 0:
            fail(f"{key}.min", f"log sampling needs min > 0, got {spec['min']}")
        if "step" in spec and (not _is(spec["step"], number) or spec["step"] <= 0):
            fail(f"{key}.step", f"expected a positive {kind}, got {spec['step']!r}")
        if not _is(default, number) or not spec["min"] <= default <= spec["max"]:
            fail(f"{key}.default", f"{default!r} is outside the range", f"{spec['min']} to {spec['max']}")
    elif kind == "choice":
        values = spec.get("values")
        if not isinstance(values, list) or not values:
            fail(f"{key}.values", "expected a non-empty list")
        if len({type(v) for v in values}) > 1:
            fail(f"{key}.values", f"mixed types in {values!r}")
        if default not in values:
            fail(f"{key}.default", f"{default!r} is not one of the choices", ", ".join(map(str, values)))
    elif not isinstance(default, bool):
        fail(f"{key}.default", f"expected true or false, got {default!r}")


def _check_learning_rates(fail, key, rates):
    """Learning rates are positive numbers, as `train` requires (Adam takes a negative one and
    climbs the loss)."""
    if not all(_is(rate, float) and rate > 0 for rate in rates):
        fail(key, f"learning rates are positive numbers; got {rates!r}")


def _check_encoder_hyperparameter(fail, key, name, spec, encoder):
    """`max_tokens`: whole numbers of at least 3 (padding and OOV count); `sequence_length`:
    positive ones; neither also set under `encoder` (the encoder is adapted with the largest
    value searched)."""
    if spec["type"] not in ("int", "choice"):
        fail(f"{key}.type", f"{name} is searched as int or choice, not {spec['type']}")
    values = spec["values"] if spec["type"] == "choice" else [spec["min"], spec["max"]]
    if name == "max_tokens" and not all(_is(value, int) and value >= 3 for value in values):
        fail(key, f"{name} counts padding and OOV: expected integers of at least 3, got {values!r}")
    if not all(_is(value, int) and value >= 1 for value in values):
        fail(key, f"expected positive integers (tokens per text), got {values!r}")
    if name in encoder:
        fail(
            f"encoder.{name}",
            "also searched under `hyperparameters`; the encoder is adapted with the largest "
            "value searched, so remove it here",
        )
