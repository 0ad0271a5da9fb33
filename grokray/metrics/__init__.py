"""Metrics: grokking detection (`grokking`) and the mechanism metrics.

- `grokray.metrics.grokking`: GrokDetector (grok / memorize / un-grok steps, early stop);
- `grokray.metrics.mechanism`: what the trainer calls at each evaluation (`MetricInputs`,
  `metrics_due`, `compute_eval_metrics`) and after training (`summarize`);
- spectra, axioms, wedderburn, circulant, agop: the measurements themselves.

Submodules are imported on use, so importing this package stays cheap (no torch).
"""

from grokray.metrics.grokking import GrokDetector, SeedTrack

__all__ = ["GrokDetector", "SeedTrack"]
