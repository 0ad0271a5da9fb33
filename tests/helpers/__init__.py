"""The tests' shared helpers, imported as `tests.helpers.<module>` (no sys.path edits):

- configs: `tiny_cfg(**over)`, a small float64 CPU TrialConfig; `config(base, **over)` and
  `defaults(base, **over)` for a file's own base fields.
- specs: a file's spec template written (and loaded) in tmp_path; the tiny two-group spec.
- checkpoints: a trial cut short in-process (a hook that checkpoints and dies at a step).
- sweeps: a tiny spec on disk, synthetic trial functions, the Ray fixtures (`ray_session`,
  `cluster`), a Recorder sink, reading a sweep's rows and comparing them with an uncut run,
  the checkpoint channel's running trials, the checkpoints the driver-side store wrote
  (`StoredCheckpoints`), and a helper thread whose errors reach the test.
- rendezvous: a Ray actor that holds trials until they run on `n` nodes (imports ray).
- toy_groups: hand-made groups with textbook character tables, for the metric tests.
- service, postgres: the sweep service on a thread or as a `grokray serve` process, the spec
  texts its tests submit (`queue_spec`, `local_spec`, `ray_spec`), `wait_for` (a wait on a
  state) and `terminate`; and a throwaway PostgreSQL server.

The data-writing fixtures (tiny sweeps, a synthetic sweep dir, the dashboard process) stay in
tests/fixtures/ (they are also scripts and the benchmarks load them) and reach the tests as the
conftest fixtures `tiny`, `sweepdir` and `dashboard_proc`.

Trial functions a test hands to Ray travel by value (`ray_session` and `cluster` register this
package's modules with cloudpickle), so Ray's workers never import tests/.
"""
