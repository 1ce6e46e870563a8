"""`train(..., distribute="ray", workers=N)`: the multi-worker run, its processes started by Ray.

Ray Train's `TensorflowTrainer` starts `N` workers on a Ray cluster and sets `TF_CONFIG`
in each; each worker then runs `train(..., distribute="multi-worker")`, the same loop as
processes started by hand, and worker 0 (the chief) writes the run folder. Ray is an
optional dependency: `pip install "keras-textattn[ray]"`.

The cluster: `ray_address` (or the `RAY_ADDRESS` variable, as `ray` itself reads it) names an
existing one; without it a local one is started on this machine for the run. On a cluster
of several machines, `data` and `output` must be paths every machine reads and writes (a
shared filesystem, or `gs://` / `s3://` data).
"""

import dataclasses
import os
import re
import socket

from keras_textattn.datasets.formats import LocalFile
from keras_textattn.datasets.formats import is_pattern
from keras_textattn.errors import UserError
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import read_json
from keras_textattn.text.vectors import PACKAGED_VECTORS
from keras_textattn_config.train_config import RANDOM_EMBEDDINGS

# `TrainConfig`'s fields that may be local paths: the workers' working folder is not ours.
PATH_FIELDS = ("test_data", "validation_data", "data_dir", "init_from", "embeddings")


def worker_arguments(data, output, config):
    """`(data, output, config)` as a Ray worker runs them: a multi-worker run, with the output,
    the data and the local paths among `PATH_FIELDS` made absolute (TFDS names, remote paths
    and the vectors' names "word2vec", "random" and `PACKAGED_VECTORS` as they are)."""
    paths = {
        name: _absolute(getattr(config, name))
        for name in PATH_FIELDS
        if not (name == "embeddings" and config.embeddings in ("word2vec", RANDOM_EMBEDDINGS, *PACKAGED_VECTORS))
    }
    config = dataclasses.replace(config, distribute="multi-worker", workers=None, ray_address=None, **paths)
    return _absolute(data), os.path.abspath(os.fspath(output)), config


def train_on_ray(train, model, data, output, config, workers, ray_address=None, cpus_per_worker=1):
    """Run `train(model, data, output, config)` (`worker_arguments`'s) as a multi-worker run of
    `workers` Ray workers; the chief's metrics."""
    try:
        import ray
        from ray.train import RunConfig
        from ray.train import ScalingConfig
        from ray.train.tensorflow import TensorflowTrainer
    except ImportError:
        raise RunError('--distribute ray needs Ray Train: pip install "keras-textattn[ray]"') from None
    started = not ray.is_initialized()
    if started:
        _check_reachable(ray_address or os.environ.get("RAY_ADDRESS"))
        ray.init(address=ray_address, log_to_driver=config.verbose != 0, include_dashboard=False)
    try:
        trainer = TensorflowTrainer(
            _worker_loop,
            train_loop_config={"train": train, "model": model, "data": data, "output": output, "config": config},
            scaling_config=_scaling_config(ScalingConfig, workers, cpus_per_worker),
            run_config=RunConfig(name=f"keras-textattn-{os.path.basename(output)}"),
        )
        try:
            trainer.fit()
        except Exception as error:  # Ray wraps the workers' errors; a user error is shown as one
            raise (_user_error_in(error) or error) from None
    finally:
        if started:
            ray.shutdown()
    return read_json(os.path.join(output, "metrics.json"))


def _scaling_config(ScalingConfig, workers, cpus_per_worker):
    """`workers` workers of `cpus_per_worker` CPUs each, and nothing reserved for Ray Train's
    coordinator. Ray Train V1 (Ray before V2 became the default, or `RAY_TRAIN_V2_ENABLED=0`)
    reserves a CPU for it unless told otherwise, so 2 workers on a 2-CPU machine waited for a
    third CPU without end; V2's coordinator reserves none and refuses `trainer_resources`."""
    per_worker = dict(num_workers=workers, use_gpu=False, resources_per_worker={"CPU": cpus_per_worker})
    try:
        return ScalingConfig(**per_worker, trainer_resources={"CPU": 0})
    except DeprecationWarning:  # Ray Train V2: raised, not warned, for `trainer_resources`
        return ScalingConfig(**per_worker)


def _absolute(data):
    """Local paths in `data` (a path, a `LocalFile`, or a dict of them) made absolute; TFDS names
    and remote paths as they are."""
    if isinstance(data, dict):
        return {split: _absolute(value) for split, value in data.items()}
    if isinstance(data, LocalFile):
        return dataclasses.replace(data, path=_absolute(data.path))
    if (
        isinstance(data, (str, os.PathLike))
        and "://" not in os.fspath(data)
        and (os.path.exists(os.fspath(data)) or is_pattern(os.fspath(data)))
    ):
        return os.path.abspath(os.fspath(data))
    return data


def _check_reachable(address, timeout=10):
    """A `RunError` unless something answers at a Ray cluster's `host:port` (or `ray://host:port`)
    address: for one that does not, `ray.init` retries without end. Other forms ("auto",
    "local", None) are left to Ray."""
    match = re.fullmatch(r"(?:ray://)?\[?([^\]/]+?)\]?:(\d+)", address or "")
    if not match:
        return
    try:
        socket.create_connection((match[1], int(match[2])), timeout=timeout).close()
    except OSError as error:
        raise RunError(
            f"no Ray cluster answers at {address} (--ray-address, else RAY_ADDRESS): "
            f"{error.strerror or error}; start one there (ray start --head), or give neither for a local "
            "one"
        ) from None


def _worker_loop(arguments):
    """One Ray worker's part: `train()` of a multi-worker run (the function is passed, not
    imported, so that this module and the training's do not import each other)."""
    arguments["train"](arguments["model"], arguments["data"], arguments["output"], arguments["config"])


def _user_error_in(error):
    """The `UserError` (bad arguments, bad data) that made a Ray worker fail, if that is what did."""
    seen, pending = set(), [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, UserError):
            return current
        pending += [current.__cause__, current.__context__, *getattr(current, "worker_failures", {}).values()]
    return None
