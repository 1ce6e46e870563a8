"""The names of `train()`'s learning-rate schedules, and how a name is read (no TensorFlow here;
the callbacks that apply them: `keras_textattn.training.schedules`)."""

from keras_textattn_config.checks import RunError

SCHEDULES = ("constant", "cosine", "plateau", "step:E1,E2,...")
# The kinds whose rate is a function of the training done alone (`rate_at`): the ones a loop
# without validation data (a tuner trial) can apply.
EPOCH_SCHEDULES = ("constant", "cosine", "step")


def parse_schedule(schedule):
    """`(kind, drop epochs)` of a schedule's name, or a `RunError` that lists the choices."""
    schedule = schedule or "constant"
    if schedule in ("constant", "cosine", "plateau"):
        return schedule, ()
    if isinstance(schedule, str) and schedule.startswith("step:"):
        try:
            drops = tuple(int(epoch) for epoch in schedule[len("step:") :].split(","))
        except ValueError:
            drops = ()
        if drops and all(epoch >= 1 for epoch in drops) and list(drops) == sorted(set(drops)):
            return "step", drops
    raise RunError(
        f"unknown learning-rate schedule {schedule!r} (--lr-schedule); use one of {', '.join(SCHEDULES)} "
        "(step: increasing epochs counted from 1, e.g. step:20,25)"
    )
