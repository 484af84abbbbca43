"""The replay core (on-chip RMM): a K-ary sum tree with one memory per level (its K banks side by side as
columns), a bottom-up updater and a top-down sampler (see :mod:`.core`).

One module per job: :mod:`.core` (the top and its contract), :mod:`.command` (the FSM, STATUS, CYCLES, the SET input
register), :mod:`.tree` (the level memories), :mod:`.updater` (the bottom-up updater, TOTAL, NONZERO),
:mod:`.sampler` (the sampler and its target arithmetic), :mod:`.issue` (the sampler's control: START's check, sample
issue, the uniform source), :mod:`.descend` (one descent stage per level), :mod:`.stages` (its enable-gated
registers), :mod:`.dump` (DUMP), :mod:`.output` (the output register), :mod:`.multiply` and :mod:`.select`
(generated multipliers and multiplexers)."""
