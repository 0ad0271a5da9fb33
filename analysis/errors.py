"""The analysis package's user error (a subclass of GrokrayError: the CLI prints it, exit 2)."""

from grokray.errors import GrokrayError


class AnalysisError(GrokrayError, ValueError):
    """A request analysis cannot satisfy: unknown arm or column, too few points to fit."""
