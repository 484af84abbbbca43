"""The ParSa core in MyHDL (OPaL's parallel tile-coded Sarsa), bit-exact with :mod:`pynq_rl.overlay.models.parsa`.

One module per job:

* :mod:`.core` -- controller FSM: stream parsing, START checks, CONFIG validation and commit, ACT sequencing, Sarsa
  delta and increment (UQ1.16 coefficients), epsilon-greedy choice from the xorshift32 PRNG and epsilon decay, key
  memory (valid / previous action / previous q) and pending rewards, LOAD / DUMP / CLEAR, the CYCLES counters;
* :mod:`.positions` -- u_d of every state dimension, one per cycle (31 x 32-bit multiply);
* :mod:`.worker` -- WORKERS of them: descriptor banks, tile-index pipeline (one tiling per cycle), policy bank (one
  row of MAX_ACTIONS values per word, block RAM), preference accumulators, key-row memory, update pass;
* :mod:`.reduce` -- sum tree over the workers, saturation to q(s, .), lowest-index argmax;
* :mod:`.config_check` -- the descriptor checks of ``ParsaModel.configure``;
* :mod:`.emitter` -- action records and policy rows out of ``m_axis``.

Pipeline depths (``ParsaSpec.act_depth`` = 20, ``update_depth`` = 8, checked at elaboration): CYCLES_ACT =
n_dims + busiest + 20, CYCLES_UPDATE = busiest + 8, where busiest = tilings of the busiest worker.

Behaviour the emulated IP does not show: action records leave as each state record completes (the emulated IP
answers after TLAST), so a host must drain ``m_axis`` while it feeds ``s_axis`` (the DMA does); the final word
of a record is held until the next record is complete or the stream ends, so TLAST lands on the right word even
when a partial record follows. LOAD_POLICY writes rows as they arrive: a stream of the wrong length sets
ERR_STREAM but leaves the rows already received (the emulated IP changes nothing; a hardware core would need a
second policy to match).
"""
