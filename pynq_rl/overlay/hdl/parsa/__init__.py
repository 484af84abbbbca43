"""The ParSa core in MyHDL (OPaL's parallel tile-coded Sarsa), bit-exact with :mod:`pynq_rl.overlay.models.parsa`.

One module per job:

* :mod:`.core` -- the top: the instantiation of everything below;
* :mod:`.control` -- controller FSM: the state and its decode, STATUS, the CYCLES counters, CONFIG commit, LOAD /
  DUMP / CLEAR bookkeeping; :mod:`.step` -- ACT sequencing (when the positions, workers, choice, record and update
  run), the key and pending-reward valid bits; :mod:`.fsm` -- the states, ACT's timing constants and the
  registers the controller's parts share;
* :mod:`.streams` -- what each state does with the words of ``s_axis`` (CONFIG, state records, policy rows) and the
  policy-bank port, with the positions unit and the configuration check they feed;
* :mod:`.act` -- the ACT and UPDATE datapath after the workers (reduce, choice, key memories, Sarsa update);
* :mod:`.start` -- what START refuses (``ParsaModel.start_error``) and the run-time registers it latches;
* :mod:`.positions` -- u_d of every state dimension, one per cycle (31 x 32-bit multiply);
* :mod:`.worker` -- WORKERS of them: descriptor banks, tile-index pipeline (one tiling per cycle), policy bank (one
  row of MAX_ACTIONS values per word, block RAM), preference accumulators, key-row memory, update pass;
* :mod:`.reduce` -- sum tree over the workers, saturation to q(s, .), lowest-index argmax; OR / max chains;
* :mod:`.choice` -- epsilon-greedy choice from the xorshift32 PRNG, epsilon decay;
* :mod:`.keys` -- key memory (previous action / previous q) and pending rewards (block RAMs);
* :mod:`.update` -- Sarsa delta and increment (UQ1.COEF_FRAC coefficients);
* :mod:`.config_check` -- the descriptor checks of ``ParsaModel.configure``;
* :mod:`.record_out`, :mod:`.emitter` -- action records and policy rows out of ``m_axis``;
* :mod:`.params` -- derived widths, the bus the controller broadcasts to the workers, and the bundles between the
  controller and the datapath.

Pipeline depths (``ParsaSpec.act_depth`` = 23, ``update_depth`` = 9, checked at elaboration): CYCLES_ACT =
n_dims + busiest + 23, CYCLES_UPDATE = busiest + 9, where busiest = tilings of the busiest worker.

Behaviour the emulated IP does not show: action records leave as each state record completes (the emulated IP
answers after TLAST), so a host must drain ``m_axis`` while it feeds ``s_axis`` (the DMA does); the final word
of a record is held until the next record is complete or the stream ends, so TLAST lands on the right word even
when a partial record follows. LOAD_POLICY writes rows as they arrive: a stream of the wrong length sets
ERR_STREAM but leaves the rows already received (the emulated IP changes nothing; a hardware core would need a
second policy to match).
"""
