"""grokray: a distributed sweep service for grokking research."""

__version__ = "0.1.0"
