r"""GAE processing element (HEPPO) with k-step lookahead: one element per cycle, bit-exact with the model.

Elements arrive in reverse time order: first the bootstrap row (``in_bootstrap``: only ``value`` = V(s_T) counts),
then t = T-1, T-2, ..., 0. The arithmetic (``rnd`` = round half up, ``sat`` = saturate to DATA)::

    delta_t  = sat(r_t + [alive_t] rnd(GAMMA * V_{t+1}) - V_t)
    partial_t = delta_t + sum_{j=1}^{k-1} [chain_j] rnd(C**j * delta_{t+j})
    A_t = sat(partial_t + [chain_k] rnd(C**k * A_{t+k})),   R_t = sat(A_t + V_t)

with ``chain_j = prod_{i<j} alive_{t+i}`` (a done cuts every later term). ``delta_{t+j}`` and ``A_{t+k}`` come from
delay lines cleared when the bootstrap row passes, so terms beyond T read 0. Nothing else clears them: a
continuation chunk of a long sequence (the core's CHUNKS) arrives with no bootstrap row, after any number of
bubbles, and the recursion goes on from the V_{t+1}, delta and A histories the previous chunk left.

Every product is ``rnd(a * b) + x`` for a 32-bit ``a``, a coefficient ``b`` and an integer addend ``x``, computed
by :func:`~pynq_rl.overlay.hdl.common.mac.mac` in the shape of two DSP48s with their pipeline registers (M: the
products; P: the post-adder with ``x`` on the C port; F: one fabric adder, then saturation here), exact with one
rounding. On a fabric of 18 x 18 multipliers (``GaeSpec.multiplier_port_bits = 18``: the ECP5 place-and-route
build) ``b`` is split at bit 17 as well and the M registers hold the four 18 x 18 products; the stages are the
same. Ten register stages (:data:`PE_LATENCY`), cut into blocks: :func:`gae_pe` holds stages 1 and 10,
:func:`_delta` 2-4, :func:`_partial` 5-7 and :func:`_advantage_loop` 8-9::

    1      operands: r - V; V_{t+1} for the gamma product, reset to 0 when d_t (the mask [alive_t])
    2-3    M, P of rnd(GAMMA * V_{t+1}) + (r - V)
    4      F: delta_t = sat(...); C**j registered with reset [not alive_t] (the tap masks)
    5-6    M, P of rnd(C * delta_{t+1}) + delta_t (k >= 3: the other taps without addend, masked by chain_j)
    7      F: partial_t; C**k registered with reset [not chain_k] (the tail mask)
    8      the A loop, first half: M of rnd(C**k * A_{t+k}) + partial_t, straight from the register ``adv_tail``
    9      the A loop, second half: A_t = sat(post-adder + fabric adder), no P register, into ``adv_tail``; the
           unclamped sum into ``adv3``
    10     R_t = sat(A_t + V_t), A_t copied beside it (outputs)

The A feedback loop (k >= 2) is ``adv_tail`` -> M registers -> adders and saturation -> ``adv_tail``: two register
stages, so k >= 2 closes it (the point of the lookahead, HEPPO eq. 10/11), with nothing but wires between a
register and a multiplier. Stages 1-7 are free running (a bubble passes as an invalid slot) and the A history
shifts only on valid data, so which A the element in stage 8 needs depends on whether the element ahead is still
in stage 9 (then A_{t+k} is one register nearer). ``adv_tail`` resolves that a cycle early, as the element enters
stage 8 (``ahead7``; the bootstrap row counts as an element: it writes A_T = 0)::

    adv_tail <= 0                                  on the bootstrap row in stage 9 (clear8, priority)
             <= A of the element in stage 9        k = 2 (the clamp's output), element in stage 9
                or the last A written              k = 2, none in stage 9 (see below)
             <= valid8 ? adv_hist[k-4] : adv_hist[k-3]    k >= 3 (adv_hist[-1] being the clamped adv3)
             holds                                 no element entering stage 8

For k = 2 the two cases are one wire: the tail's M registers load only with an element (or zeros with the
bootstrap row) and hold otherwise, so with stage 9 empty its sum recomputes the last element's A exactly, and
``adv_tail`` takes the clamp's output in every case. ``adv3`` keeps the unclamped sum of the last element written
(clamped where read: stage 10, the history), so each of the two loop flip-flops sits beside its own driver (the
carry chain, the clamp's LUT4) on the ECP5. For k = 1 the loop is one cycle: stage 8 only registers, stage 9
multiplies ``adv3`` (clamped) combinationally. The loop registers are ``adv3``, ``adv_hist`` and ``adv_tail``
(kept by name in synthesis: the yosys DSP-feedback bug, docs/design.md, MyHDL lessons); the M registers inside the
loop are the DSPs'.

Formats: data signed DATA (Q15.16), coefficients unsigned COEF (UQ1.23); see :mod:`pynq_rl.overlay.models.gae`,
which this block must match bit for bit.
"""

from myhdl import Signal, always, always_comb, block, intbv

from ...spec import GaeSpec
from ..common.arith import add2, and2, assign, delay_line, dff_en, mux2, or2, saturate
from ..common.mac import like, mac, mac_range, ranged, register

__all__ = ["gae_pe", "coef_powers", "PE_LATENCY"]

#: Cycles from a valid input to its valid output.
PE_LATENCY = 10


def _data(spec: GaeSpec, extra_bits: int = 0) -> Signal:
    return Signal(intbv(0, min=spec.data.min_code << extra_bits, max=(spec.data.max_code + 1) << extra_bits))


def _coef(spec: GaeSpec) -> Signal:
    """A coefficient in [0, 1] (COEF codes 0 .. 2**frac)."""
    return Signal(intbv(0, min=0, max=(1 << spec.coef.frac) + 1))


def _partial_ranges(spec: GaeSpec) -> list[tuple[int, int]]:
    """[min, max] of the running sum ``delta_t + sum_{i<=j} rnd(C**i * delta_{t+i})`` for j = 1 .. k-1 (DATA deltas,
    coefficients in [0, 1]): the last is partial_t's, ``[DATA]`` for k = 1 (no taps)."""
    data, coef, cf = _data(spec), _coef(spec), spec.coef.frac
    if spec.lookahead == 1:
        return [(data.min, data.max - 1)]
    sums = [mac_range(data, coef, data, cf)]
    for _ in range(2, spec.lookahead):
        term_lo, term_hi = mac_range(data, coef, None, cf)
        sums.append((sums[-1][0] + term_lo, sums[-1][1] + term_hi))
    return sums


@block
def coef_powers(powers, gamma_lambda, clock, spec: GaeSpec):
    """Registered chain ``powers[j] = rnd(powers[j-1] * C)``, ``powers[1] = C`` (j = 1..k; ``powers[0]`` unused).

    Each product is a :func:`~pynq_rl.overlay.hdl.common.mac.mac` with its M and P registers, then registered: C**j
    settles 3 (j - 1) cycles after ``gamma_lambda`` changes (21 for C**8). Nothing waits for it, and nothing needs
    to: C**j only matters once j elements were issued ahead of the one reading it (before that the delay-line slot
    it multiplies holds the 0 the bootstrap row wrote, and rnd(C * 0) + x = x), and those had to be loaded and
    popped first. Element i of a T-step operation reads C**j (PE stage 4) T + 15 + i cycles after START and C**k
    (stage 7) T + 18 + i, so with i >= j, T >= i + 1 a tap has 18 - j cycles to spare and the tail 21 - k: at least
    11 for any k <= 8, even if GAMMA_LAMBDA reached the core after START (the core top holds it from START on;
    ``tests/gae/test_coef_settling.py`` drives the bare core late to measure the margin on a k = 8 build and fails
    if it shrinks).

    powers       : list of k + 1 Signal(UQ1.23), out
    gamma_lambda : Signal(UQ1.23), in
    """
    cf = spec.coef.frac
    insts = []
    power1 = powers[1]  # bound outside the generator: a list used inside one would become a Verilog memory

    @always_comb
    def first():
        power1.next = gamma_lambda

    insts.append(first)
    for j in range(2, len(powers)):
        operand = ranged(-1, powers[j - 1].max - 1)  # signed, as :func:`mac` takes its data operand
        rounded = Signal(intbv(0, min=0, max=(1 << cf) + 2))  # C**j in [0, 1]: never negative
        mul = mac(rounded, operand, gamma_lambda, None, clock, cf, port_bits=spec.multiplier_port_bits)
        mul.name = f"pow{j}_mul"
        insts += [assign(operand, powers[j - 1]), mul, register(powers[j], rounded, clock)]
    return insts


@block
def _masked_register(q, d, kill, clock):
    """``q <= 0 if kill else d`` every cycle: the mask is the flip-flops' synchronous reset (no LUT)."""

    @always(clock.posedge)
    def seq():
        if kill:
            q.next = 0
        else:
            q.next = d

    return seq


class _Element:
    """One PE stage's copy of an element's side data: ``valid`` (an element), ``clear`` (the bootstrap row), ``v``
    (V_t), and where the stage holds them ``sat`` (its saturation flag so far) and ``dead`` (d_t); None elsewhere."""

    def __init__(self, valid, clear, v, sat=None, dead=None) -> None:
        self.valid, self.clear, self.v, self.sat, self.dead = valid, clear, v, sat, dead


def _element(spec: GaeSpec, sat: bool = False, dead: bool = False) -> _Element:
    """Fresh Signals for one stage's side data (``sat`` / ``dead``: the stage holds them)."""
    return _Element(
        Signal(bool(0)),
        Signal(bool(0)),
        _data(spec),
        Signal(bool(0)) if sat else None,
        Signal(bool(0)) if dead else None,
    )


@block
def _carry(q, d, clock):
    """One pipeline stage of an element's side data: each field ``q`` holds (:class:`_Element`) <= ``d``'s."""
    regs = [register(q.valid, d.valid, clock), register(q.clear, d.clear, clock), register(q.v, d.v, clock)]
    if q.sat is not None:
        regs.append(register(q.sat, d.sat, clock))
    if q.dead is not None:
        regs.append(register(q.dead, d.dead, clock))
    return regs


@block
def gae_pe(
    adv, ret, out_valid, saturated, reward, value, done, in_valid, in_bootstrap, gamma, powers, clock, spec: GaeSpec
):
    """One GAE processing element: stage 1 (operands) and stage 10 (R_t, outputs) here, the stages between in
    :func:`_delta`, :func:`_partial` and :func:`_advantage_loop`.

    adv, ret     : Signal(DATA), out  -- A_t and R_t, valid with ``out_valid``
    out_valid    : Signal(bool), out
    saturated    : Signal(bool), out  -- a delta, A or R of the element leaving stage 10 saturated (or earlier)
    reward       : Signal(DATA), in   -- r_t (dequantized)
    value        : Signal(DATA), in   -- V_t, or V_T on the bootstrap row
    done         : Signal(bool), in   -- d_t
    in_valid     : Signal(bool), in
    in_bootstrap : Signal(bool), in   -- this input is the bootstrap row (with ``in_valid``)
    gamma        : Signal(UQ1.23), in
    powers       : list of k + 1 Signal(UQ1.23), in -- C**j from :func:`coef_powers`
    clock        : Signal(bool), in
    """
    k = spec.lookahead
    lo, hi = spec.data.min_code, spec.data.max_code

    # stage 1: operands ------------------------------------------------------------------------------------------
    v_next = _data(spec)  # V of the last valid input: V_{t+1}
    gv_operand = _data(spec)  # V_{t+1}, or 0 when d_t
    rv1 = ranged(lo - hi, hi - lo)  # r_t - V_t
    side1 = _element(spec, dead=True)

    @always(clock.posedge)
    def stage1():
        side1.valid.next = in_valid and not in_bootstrap
        side1.clear.next = in_valid and in_bootstrap
        rv1.next = reward - value
        side1.v.next = value
        side1.dead.next = done
        if done:
            gv_operand.next = 0
        else:
            gv_operand.next = v_next
        if in_valid:
            v_next.next = value

    # stages 2-9 ---------------------------------------------------------------------------------------------------
    delta4, side4, coefs = _data(spec), _element(spec, sat=True, dead=True), [_coef(spec) for _ in range(1, k)]
    part7, side7, cut6 = ranged(*_partial_ranges(spec)[-1]), _element(spec, sat=True), Signal(bool(0))
    adv_a, a_clamped = _data(spec), Signal(bool(0))
    side9 = _Element(Signal(bool(0)), None, _data(spec), Signal(bool(0)))  # stage 10 needs no bootstrap flag
    delta = _delta(delta4, side4, coefs, gv_operand, rv1, side1, gamma, powers, clock, spec)
    partial = _partial(part7, side7, cut6, delta4, side4, coefs, clock, spec)
    loop = _advantage_loop(adv_a, a_clamped, side9, part7, side7, cut6, powers, clock, spec)
    delta.name, partial.name, loop.name = "delta", "partial", "loop"

    # stage 10: R_t = sat(A_t + V_t) -------------------------------------------------------------------------------
    raw_ret = _data(spec, 1)
    ret_c, ret_sat = _data(spec), Signal(bool(0))
    adv10, ret10 = _data(spec), _data(spec)
    valid10, sat10 = Signal(bool(0)), Signal(bool(0))
    flag10 = Signal(bool(0))  # R_t clamped, or (k >= 2) A_t
    sums = [
        add2(raw_ret, adv_a, side9.v),
        saturate(ret_c, ret_sat, raw_ret, lo, hi),
        or2(flag10, ret_sat, a_clamped) if k > 1 else assign(flag10, ret_sat),
    ]

    @always(clock.posedge)
    def stage10():
        valid10.next = side9.valid
        adv10.next = adv_a
        ret10.next = ret_c
        sat10.next = side9.sat or flag10

    @always_comb
    def outputs():
        adv.next = adv10
        ret.next = ret10
        out_valid.next = valid10
        saturated.next = sat10 and valid10

    return stage1, delta, partial, loop, sums, stage10, outputs


@block
def _delta(delta4, side4, coefs, gv_operand, rv1, side1, gamma, powers, clock, spec: GaeSpec):
    """PE stages 2-4: ``delta_t = sat(rnd(GAMMA * V_{t+1}) + (r_t - V_t))`` (M, P, then F and the clamp), and the
    tap coefficients C**j registered with reset [not alive_t].

    delta4     : Signal(DATA), out -- delta_t in stage 4
    side4      : _Element, out     -- the element in stage 4 (``sat``: delta_t clamped)
    coefs      : list of k - 1 Signal(COEF), out -- C**1 .. C**(k-1), 0 when d_t (chain_1 of every tap)
    gv_operand : Signal(DATA), in  -- stage 1: V_{t+1}, 0 when d_t
    rv1        : Signal, in        -- stage 1: r_t - V_t
    side1      : _Element, in      -- the element in stage 1
    gamma      : Signal(COEF), in
    powers     : list of k + 1 Signal(COEF), in
    clock      : Signal(bool), in
    """
    cf = spec.coef.frac
    lo, hi = spec.data.min_code, spec.data.max_code
    raw_delta = ranged(*mac_range(gv_operand, gamma, rv1, cf))
    gv_mac = mac(raw_delta, gv_operand, gamma, rv1, clock, cf, port_bits=spec.multiplier_port_bits)
    gv_mac.name = "gamma_v"
    side2, side3 = _element(spec, dead=True), _element(spec, dead=True)
    v1_live, dead1_live = _data(spec), Signal(bool(0))

    @always_comb
    def bootstrap_passes():  # the bootstrap row only loads v_next (V_T, stage 1): its own V and done pass as 0
        if side1.clear:
            v1_live.next = 0
            dead1_live.next = 0
        else:
            v1_live.next = side1.v
            dead1_live.next = side1.dead

    delta_c, delta_sat = _data(spec), Signal(bool(0))
    sat3_live = Signal(bool(0))
    insts = [
        gv_mac,
        bootstrap_passes,
        _carry(side2, _Element(side1.valid, side1.clear, v1_live, None, dead1_live), clock),
        _carry(side3, side2, clock),
        saturate(delta_c, delta_sat, raw_delta, lo, hi),
        and2(sat3_live, delta_sat, side3.valid),
        register(delta4, delta_c, clock),
        _carry(side4, _Element(side3.valid, side3.clear, side3.v, sat3_live, side3.dead), clock),
    ]
    for j, coef in enumerate(coefs, start=1):
        inst = _masked_register(coef, powers[j], side3.dead, clock)
        inst.name = f"coef{j}"
        insts.append(inst)
    return insts


@block
def _partial(part7, side7, cut6, delta4, side4, coefs, clock, spec: GaeSpec):
    """PE stages 5-7: ``partial_t = delta_t + sum_j [chain_j] rnd(C**j * delta_{t+j})`` (tap 1's M, P and F with
    delta_t as its addend; k >= 3: the other taps without addend, masked by chain_j), and [not chain_k] for the
    tail coefficient's mask.

    part7  : Signal, out        -- partial_t in stage 7 (its exact range, :func:`_partial_ranges`)
    side7  : _Element, out      -- the element in stage 7
    cut6   : Signal(bool), out  -- not chain_k, in stage 6
    delta4 : Signal(DATA), in   -- delta_t in stage 4
    side4  : _Element, in       -- the element in stage 4
    coefs  : list of k - 1 Signal(COEF), in
    clock  : Signal(bool), in
    """
    k, cf, ports = spec.lookahead, spec.coef.frac, spec.multiplier_port_bits
    sums = _partial_ranges(spec)
    delta_hist = [_data(spec) for _ in range(k - 1)]  # delta_{t+1} .. delta_{t+k-1}
    alive_hist = [Signal(bool(0)) for _ in range(k - 1)]  # alive_{t+1} .. alive_{t+k-1}
    alive4 = Signal(bool(0))

    @always_comb
    def alive_of_stage4():
        alive4.next = not side4.dead

    insts = [alive_of_stage4]
    if k > 1:
        dl = delay_line(delta_hist, delta4, side4.valid, side4.clear, clock)
        dl.name = "delta_hist"
        al = delay_line(alive_hist, alive4, side4.valid, side4.clear, clock)
        al.name = "alive_hist"
        insts += [dl, al]
    chains = [alive4]  # chain_1 = alive_t
    for j in range(2, k + 1):
        chain = Signal(bool(0))
        insts.append(and2(chain, chains[-1], alive_hist[j - 2]))
        chains.append(chain)
    side5, side6 = _element(spec, sat=True), _element(spec, sat=True)
    cut4, cut5 = Signal(bool(0)), Signal(bool(0))  # not chain_k: the tail term is 0
    tail_chain = chains[k - 1]

    @always_comb
    def tail_cut_of_stage4():
        cut4.next = not tail_chain

    insts += [
        tail_cut_of_stage4,
        register(cut5, cut4, clock),
        register(cut6, cut5, clock),
        _carry(side5, side4, clock),
        _carry(side6, side5, clock),
        _carry(side7, side6, clock),
    ]
    if k > 1:
        part = ranged(*sums[0])
        tap = mac(part, delta_hist[0], coefs[0], delta4, clock, cf, port_bits=ports)
        tap.name = "tap1"
        insts.append(tap)
        for j in range(2, k):  # k >= 3: the other taps, masked by chain_j
            term = ranged(*mac_range(delta_hist[j - 1], coefs[j - 1], None, cf))
            mul = mac(term, delta_hist[j - 1], coefs[j - 1], None, clock, cf, port_bits=ports)
            mul.name = f"tap{j}"
            kill4, kill5, kill6 = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
            masked = like(term)
            acc = ranged(*sums[j - 1])
            insts += [
                mul,
                _not(kill4, chains[j - 1]),
                register(kill5, kill4, clock),
                register(kill6, kill5, clock),
                _mask(masked, term, kill6),
                add2(acc, part, masked),
            ]
            part = acc
    else:
        delta5, delta6 = _data(spec), _data(spec)
        insts += [register(delta5, delta4, clock), register(delta6, delta5, clock)]
        part = delta6
    insts.append(register(part7, part, clock))  # its exact range: the loop's sum is 34 bits for k = 2, a LUT4 clamp
    return insts


@block
def _advantage_loop(adv_a, a_clamped, side9, part7, side7, cut6, powers, clock, spec: GaeSpec):
    """PE stages 8-9, the A loop: ``A_t = sat(partial_t + [chain_k] rnd(C**k * A_{t+k}))`` (see the module
    docstring for ``adv_tail`` and ``adv3``). The mask is the tail coefficient's synchronous reset. ``adv3``,
    ``adv_hist`` and ``adv_tail`` keep their names: the synthesis report finds the loop registers by them
    (docs/design.md, MyHDL lessons).

    adv_a     : Signal(DATA), out -- A_t of the element last written (``adv3`` clamped)
    a_clamped : Signal(bool), out -- A_t clamped: stage 9 (k = 1) or 10 (k >= 2)
    side9     : _Element, out     -- the element in stage 9 (``valid``, ``v``, ``sat``)
    part7     : Signal, in        -- partial_t in stage 7
    side7     : _Element, in      -- the element in stage 7
    cut6      : Signal(bool), in  -- not chain_k, in stage 6
    powers    : list of k + 1 Signal(COEF), in -- C**k for the tail
    clock     : Signal(bool), in
    """
    k, cf, ports = spec.lookahead, spec.coef.frac, spec.multiplier_port_bits
    lo, hi = spec.data.min_code, spec.data.max_code
    adv_hist = [_data(spec) for _ in range(k - 2)]  # A_{t+2} .. A_{t+k-1}, shifted as A_t is written
    side8 = _element(spec, sat=True)
    insts = [_carry(side8, side7, clock)]
    tail_coef = _coef(spec)  # C**k, or 0 when chain_k is 0
    raw_adv = ranged(*mac_range(_data(spec), tail_coef, part7, cf))
    adv_c = _data(spec)  # A_t = sat(raw_adv) (k <= 2 read it)
    sat9_next = Signal(bool(0))  # the element's flag so far, into stage 9's register
    if k > 1:
        # adv3 keeps the raw sum of the element last written, clamped where it is read: the clamp's LUTs then
        # feed adv_tail alone, and the sum's carry chain feeds adv3 (each flip-flop beside its driver)
        adv3 = like(raw_adv)
        insts += [saturate(adv_a, a_clamped, adv3, lo, hi), assign(sat9_next, side8.sat)]
        if k == 2:
            insts.append(saturate(adv_c, None, raw_adv, lo, hi))
        adv3_next = raw_adv
    else:
        adv3 = _data(spec)  # k = 1: adv3 is the multiplier's operand, and A_t itself
        adv3_next = adv_c
        clamped8 = Signal(bool(0))
        insts += [
            assign(adv_a, adv3),
            saturate(adv_c, a_clamped, raw_adv, lo, hi),
            and2(clamped8, a_clamped, side8.valid),
            or2(sat9_next, side8.sat, clamped8),
        ]
    if k > 1:
        tail_coef_inst = _masked_register(tail_coef, powers[k], cut6, clock)  # aligned with stage 7
        # adv_tail is A_{t+k} for the element in stage 8, a register: no select in front of the multipliers.
        # The tail's M registers load only with an element in stage 8 (or the bootstrap row, as zeros), so with
        # no element in stage 9 the loop's sum recomputes the last one: adv_c == adv3 then.
        adv_tail = _data(spec)
        ahead7 = Signal(bool(0))  # an element (or the bootstrap row) in stage 8
        insts.append(or2(ahead7, side7.valid, side7.clear))
        if k == 2:
            tail_next = adv_c  # the element in stage 9's A, or (none) adv3's == adv_c
        else:
            history = [adv_a] + adv_hist  # A of the last, second last ... element written
            tail_next = _data(spec)
            insts.append(mux2(tail_next, history[k - 3], history[k - 2], side8.valid))
        at = dff_en(adv_tail, tail_next, ahead7, side8.clear, clock)
        at.name = "adv_tail"
        insts.append(at)
        tail_mac = mac(
            raw_adv,
            adv_tail,
            tail_coef,
            part7,
            clock,
            cf,
            m_reg=True,
            p_reg=False,
            port_bits=ports,
            load=ahead7,
            clear=side7.clear,
        )
    else:
        cut7, part8 = Signal(bool(0)), like(part7)
        tail_coef_inst = _masked_register(tail_coef, powers[k], cut7, clock)  # aligned with stage 8
        insts += [register(cut7, cut6, clock), register(part8, part7, clock)]
        tail_mac = mac(raw_adv, adv3, tail_coef, part8, clock, cf, m_reg=False, p_reg=False)
    tail_coef_inst.name = "tail_coef"
    tail_mac.name = "tail_mac"
    insts += [tail_coef_inst, tail_mac]
    if adv_hist:
        ah = delay_line(adv_hist, adv_a, side8.valid, side8.clear, clock)
        ah.name = "adv_hist"
        insts.append(ah)

    @always(clock.posedge)
    def stage9():
        if side8.clear:
            adv3.next = 0
        elif side8.valid:
            adv3.next = adv3_next
        side9.valid.next = side8.valid
        side9.v.next = side8.v
        side9.sat.next = sat9_next

    return insts, stage9


@block
def _mask(y, a, kill):
    """``y = 0 if kill else a`` (combinational)."""

    @always_comb
    def logic():
        if kill:
            y.next = 0
        else:
            y.next = a

    return logic


@block
def _not(y, a):
    """``y = not a`` (combinational)."""

    @always_comb
    def logic():
        y.next = not a

    return logic
