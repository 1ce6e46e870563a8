"""`train(distribute="ray", workers=N)`: the multi-worker run, its processes started by Ray.

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

from keras_textattn.datasets.loading import is_pattern
from keras_textattn.run_folder import RunError
from keras_textattn.run_folder import read_json


def train_on_ray(arguments, workers, ray_address=None, cpus_per_worker=1):
    """Run `train(**arguments)` as a multi-worker run of `workers` Ray workers; the chief's metrics."""
    try:
        import ray
        from ray.train import RunConfig
        from ray.train import ScalingConfig
        from ray.train.tensorflow import TensorflowTrainer
    except ImportError:
        raise RunError('--distribute ray needs Ray Train: pip install "keras-textattn[ray]"') from None
    arguments = {**arguments, "distribute": "multi-worker", "output": os.path.abspath(os.fspath(arguments["output"]))}
    for name in ("data", "test_data", "validation_data"):  # the workers' working folder is not ours
        arguments[name] = _absolute(arguments.get(name))
    started = not ray.is_initialized()
    if started:
        ray.init(address=ray_address, log_to_driver=arguments.get("verbose", 1) > 0, include_dashboard=False)
    try:
        trainer = TensorflowTrainer(
            _worker_loop,
            train_loop_config=arguments,
            scaling_config=ScalingConfig(num_workers=workers, use_gpu=False, resources_per_worker={"CPU": cpus_per_worker}),
            run_config=RunConfig(name=f"keras-textattn-{os.path.basename(arguments['output'])}"),
        )
        try:
            trainer.fit()
        except Exception as error:  # Ray wraps the workers' errors; a user error is shown as one
            raise _user_error_in(error) or error
    finally:
        if started:
            ray.shutdown()
    return read_json(os.path.join(arguments["output"], "metrics.json"))


def _absolute(data):
    """Local paths in `data` (a path, a `LocalFile`, or a dict of them) made absolute; TFDS names
    and remote paths as they are."""
    from keras_textattn.datasets import LocalFile

    if isinstance(data, dict):
        return {split: _absolute(value) for split, value in data.items()}
    if isinstance(data, LocalFile):
        return dataclasses.replace(data, path=_absolute(data.path))
    if isinstance(data, (str, os.PathLike)) and "://" not in os.fspath(data) and (
            os.path.exists(os.fspath(data)) or is_pattern(os.fspath(data))):
        return os.path.abspath(os.fspath(data))
    return data


def _worker_loop(arguments):
    from keras_textattn.training.train import train

    train(**arguments)


def _user_error_in(error):
    """The `UserError` (bad arguments, bad data) that made a Ray worker fail, if that is what did."""
    from keras_textattn.errors import UserError

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
