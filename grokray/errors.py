"""User-facing errors. The CLI prints any of these as one line and exits with code 2."""


class GrokrayError(Exception):
    """Base of every error caused by the user's input (a bad name, key, value, file)."""


class ConfigError(GrokrayError, ValueError):
    """An unknown config key or a bad value."""


class GroupError(GrokrayError, ValueError):
    """An unknown or malformed group name, or a parameter out of range."""


class SpecError(GrokrayError, ValueError):
    """A malformed sweep spec."""


class SchemaError(GrokrayError, ValueError):
    """A results table that is missing, unreadable, or of another schema version."""


def error_line(exc: BaseException) -> str:
    """`Type: message`, first line, at most 500 characters (a failed seed's `error`)."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
