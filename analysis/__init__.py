"""Analysis of grokray sweep outputs: reads the Parquet contract only, never training code."""
