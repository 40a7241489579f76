"""Typed user-facing errors. The CLI turns every ``UserError`` into exit code 2 and one line."""


class UserError(Exception):
    """An error caused by user input (config, CLI arguments, missing data); never a bug."""


class ConfigError(UserError):
    """A config file is malformed or violates a constraint.

    The message is one line: ``<file>: <key path> <constraint>, got <value>``.
    """


class DataNotFoundError(UserError):
    """A dataset file is missing; the message names the expected path and the download command."""


class AlgorithmFailure(Exception):
    """An algorithm could not produce an output for a cell (recorded, the run continues)."""


class DataValueError(UserError):
    """A data file holds a value its loader cannot use (a missing, non-numeric or infinite number); the message
    names the file, the row and the column (``dpexp.datasets.checks``)."""
