"""The per-key memories of the ParSa core: what each key (an agent / environment) kept from its previous step, and
the rewards the host left for it.

* key memory: (a', q(s', a')) of the key's last action record, written in the cycle the record is decided (the
  emitter takes it), read at the header word of the key's next state record; the Sarsa update of that record uses
  them as (a, q(s, a));
* pending rewards: a REWARD register write (REWARD_KEY, REWARD) stores r for a key whose next state record carries
  no reward (FLAGS.REWARD clear); read with the key memory.

Both are block RAMs (one word per key, :func:`~pynq_rl.overlay.hdl.common.bram.ram_sdp_rf`, registered read), which
is why they sit apart from the FSM. Whether a word is valid is the FSM's business: its ``key_valid`` / ``pend_valid``
bit vectors are cleared all at once by CLEAR and an accepted CONFIG, which a RAM cannot do. Rewards are saturated to
VALUE_W bits: the header's with a flag (STATUS.SATURATED), the REWARD register's without one::

    RECV, header word          key_ren: key_q, pend_q <- word [key] (read-first)
    RUN cycle 0                the FSM takes prev_action, prev_q, pend_reward (or the header's reward)
    RUN t_last / HOLD          key_we (emitter idle, not terminal): word [key] <- (chosen_r, chosen_q)
"""

from myhdl import Signal, always_comb, block, concat, intbv

from ..common.arith import saturate
from ..common.bram import memory_style, ram_sdp_rf
from .params import ParsaWidths

__all__ = ["key_memory"]


@block
def key_memory(
    hdr_key_lo,
    prev_action,
    prev_q,
    pend_we,
    pend_reward,
    reward_sat,
    reward_flag,
    hdr_key,
    hdr_reward,
    key_ren,
    s_tdata,
    deciding,
    em_idle,
    terminal,
    chosen_r,
    chosen_q,
    cfg,
    clock,
    wd: ParsaWidths,
):
    """Key memory and pending-reward memory (one word per key each), and the reward saturation.

    hdr_key_lo  : Signal(intbv[KEY_BITS]), out -- the record's key as a memory address
    prev_action : Signal(intbv[ACTION_BITS]), out -- a of the key's previous record (read at its header word)
    prev_q      : Signal(signed VALUE_W), out -- q(s, a) of the key's previous record
    pend_we     : Signal(bool), out -- a REWARD write for a key < KEYS (the FSM sets the key's pend_valid bit)
    pend_reward : Signal(signed VALUE_W), out -- the key's pending reward (read with ``prev_action``)
    reward_sat  : Signal(signed VALUE_W), out -- the header's reward saturated (combinational)
    reward_flag : Signal(bool), out -- the header's reward saturated
    hdr_key     : Signal(16), in -- the record header's key (record_receiver)
    hdr_reward  : Signal(signed 32), in -- the record header's reward
    key_ren     : Signal(bool), in -- a record's header word is on ``s_tdata``: read its key's words
    s_tdata     : Signal(64), in
    deciding    : Signal(bool), in -- the FSM has an action record decided (RUN at t_last, or HOLD)
    em_idle     : Signal(bool), in -- the emitter takes the record now
    terminal    : Signal(bool), in -- the record ends its key's episode: nothing to keep
    chosen_r    : Signal(intbv[ACTION_BITS]), in -- a' of the record
    chosen_q    : Signal(signed VALUE_W), in -- q(s', a')
    cfg         : ParsaConfig, in -- ``reward_key``, ``reward``, ``reward_written``
    clock       : Signal(bool), in
    wd          : ParsaWidths
    """
    kb, ab, vw, keys = wd.key_bits, wd.action_bits, wd.vw, wd.spec.keys
    vlo, vhi = -(1 << (vw - 1)), (1 << (vw - 1)) - 1
    key_raddr = Signal(intbv(0)[kb:])
    key_we = Signal(bool(0))
    key_wdata, key_q = Signal(intbv(0)[ab + vw :]), Signal(intbv(0)[ab + vw :])
    pend_waddr = Signal(intbv(0)[kb:])
    pend_wdata, pend_q = Signal(intbv(0)[vw:]), Signal(intbv(0)[vw:])
    pend_raw = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
    pend_sat = Signal(intbv(0, min=vlo, max=vhi + 1))

    # # #
    # valid bits in the FSM, not zero contents, say which words hold anything: either style works
    key_style, pend_style = (memory_style(wd.spec.uram_min_bits, 1 << kb, w) for w in (ab + vw, vw))
    key_mem = ram_sdp_rf(key_q, key_wdata, hdr_key_lo, key_we, key_raddr, key_ren, clock, 1 << kb, key_style)
    key_mem.name = "key_mem"
    pend_mem = ram_sdp_rf(pend_q, pend_wdata, pend_waddr, pend_we, key_raddr, key_ren, clock, 1 << kb, pend_style)
    pend_mem.name = "pend_mem"
    insts = [key_mem, pend_mem]
    if vw < 32:
        insts += [saturate(reward_sat, reward_flag, hdr_reward, vlo, vhi), saturate(pend_sat, None, pend_raw, vlo, vhi)]
    else:

        @always_comb
        def no_saturation():
            reward_sat.next = hdr_reward
            pend_sat.next = pend_raw
            reward_flag.next = 0

        insts.append(no_saturation)

    @always_comb
    def ports():
        # the key memory takes (a', q[a']) in the cycle the record is decided, so a next record of the same key,
        # whose header can arrive in the very next cycle, reads it back (the read is registered, read-first)
        key_we.next = em_idle and not terminal and deciding
        key_raddr.next = s_tdata[kb:]
        hdr_key_lo.next = hdr_key[kb:]
        key_wdata.next = concat(chosen_r, chosen_q[vw:])
        prev_action.next = key_q[ab + vw : vw]
        prev_q.next = key_q[vw:].signed()
        pend_reward.next = pend_q.signed()
        pend_we.next = cfg.reward_written and cfg.reward_key < keys
        pend_waddr.next = cfg.reward_key[kb:]
        pend_raw.next = cfg.reward.signed()
        pend_wdata.next = pend_sat[vw:]

    insts.append(ports)
    return insts
