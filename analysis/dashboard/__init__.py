"""`grokray dashboard`: a live, read-only web page over sweep output dirs (index, views, server),
and the Plotly figures that `grokray analyze report --html` shares with it."""
