"""tf.distribute for a run: the strategy, the chief, and batches every replica can split."""

import os

import tensorflow as tf

from keras_textattn.errors import check_whole
from keras_textattn.run_folder import RunError


def configure_cpu_devices(count):
    """Split the CPU into `count` logical devices (for MirroredStrategy without GPUs).

    Must run before TensorFlow initialises its devices, i.e. first in a process.
    """
    check_whole("cpu-devices", count)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)


def make_strategy(distribute):
    """None, "mirrored" (all visible GPUs, else all logical CPUs) or "multi-worker" (TF_CONFIG)."""
    if distribute in (None, "none"):
        return tf.distribute.get_strategy()
    if distribute == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]
        return tf.distribute.MirroredStrategy(devices)
    if distribute == "multi-worker":
        if not os.environ.get("TF_CONFIG"):
            raise RunError(
                "--distribute multi-worker needs TF_CONFIG (the cluster and this worker's task); "
                "see the docs' guide 'Distributed training'"
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise RunError(f"unknown distribute {distribute!r} (--distribute); use none, mirrored or multi-worker")


def is_chief(strategy):
    """The chief writes the run folder: task "chief", else worker 0 of a cluster without one."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def even_first_batch(batches, rows, batch_size, strategy, split):
    """`batches` of a split of `rows` rows whose first batch splits evenly over the strategy's
    replicas: Keras's `fit` reduces the first batch across replicas to build its step, which fails
    when their parts differ in size (keras-team/keras#19246); later partial batches are fine. A
    split of fewer rows than a batch, and not a multiple of the replicas, comes in two batches
    (the most rows that split evenly, then the rest); one of fewer rows than replicas is an error."""
    replicas = strategy.num_replicas_in_sync
    if rows < replicas:
        raise RunError(
            f"the {split} split holds {rows} row{'s' * (rows != 1)}, fewer than the {replicas} replicas of "
            "--distribute mirrored (each needs one); give more rows, or train on one device"
        )
    if rows >= batch_size or rows % replicas == 0:
        return batches  # the first batch is a full one (a multiple of the replicas) or splits evenly
    even = rows - rows % replicas

    def two_batches(*batch):
        parts = [
            tf.nest.map_structure(lambda tensor: tensor[start:end], batch) for start, end in ((0, even), (even, rows))
        ]
        return tf.data.Dataset.from_tensors(parts[0]).concatenate(tf.data.Dataset.from_tensors(parts[1]))

    return batches.flat_map(two_batches)
