"""Typed user-facing errors. The CLI turns every ``UserError`` into exit code 2 and one line."""


class UserError(Exception):
    """An error caused by user input (config, CLI arguments, missing data); never a bug."""


class ConfigError(UserError):
    """A config file is malformed or violates a constraint.

    The message is one line: ``<file>: <key path> <constraint>, got <value>``.
    """


class DataNotFoundError(UserError):
    """A dataset file is missing; the message names the expected path and the download command."""


class NotBatchable(Exception):
    """A fast path declines: its stated preconditions do not hold for these inputs.  Raised before anything is
    drawn, so the caller may take the general path with the same streams; the only exception a caller may answer
    with another path (every other one fails its cells with its message, counted in the manifest)."""


class AlgorithmFailure(Exception):
    """An algorithm could not produce an output for a cell (recorded, the run continues)."""


class NonFiniteInput(UserError):
    """An estimator was handed a NaN or ±inf in the rows it reads (private or public x or y), or a non-finite
    parameter of a loop that needs finite numbers: it refuses before computing anything, with a one-line reason
    (``non-finite value in private x: 2 rows``), instead of looping forever or releasing a DP-labelled number
    computed from NaN (issue 33)."""


class DataValueError(UserError):
    """A data file holds a value its loader cannot use (a missing, non-numeric or infinite number); the message
    names the file, the row and the column (``dpexp.datasets.checks``)."""
