"""The one exception type for a user's mistakes."""


class UserError(ValueError):
    """A mistake in the arguments, files or folders a user gave (not a bug of ours).

    The command line prints it as one `keras-textattn: error: ...` line and exits 2;
    every other exception keeps its traceback. A `ValueError`, so code that catches
    `ValueError` around the Python API keeps working.
    """


def check_batch_size(batch_size):
    """`batch_size` (texts per model call) is a positive whole number, else a `UserError`."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise UserError(f"batch-size must be a positive whole number; got {batch_size!r}")


SEEDS = 2**32  # NumPy's legacy seeding, which Keras's `set_random_seed` uses, takes 0 to 2**32 - 1


def check_seed(seed):
    """`seed` is a whole number from 0 to 2**32 - 1 (what Keras and NumPy take), else a `UserError`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEEDS:
        raise UserError(f"seed must be a whole number from 0 to {SEEDS - 1}; got {seed!r}")
