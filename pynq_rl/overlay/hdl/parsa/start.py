"""What START does before the ParSa FSM leaves IDLE: the refusal check, and the run-time registers it latches.

The check is the model's ``ParsaModel.start_error`` (:mod:`pynq_rl.overlay.models.parsa`): a mode beyond the last,
CONFIG with N_DIMS outside 1..MAX_DIMS, ACT with N_ACTIONS outside 1..MAX_ACTIONS, a coefficient above 1.0, or no
configuration for this N_DIMS. The latch takes every in-range register at START, refused or not, so the core computes
with the values of its own operation whatever the host writes meanwhile.

Registers compare as the unsigned 32-bit values they are (a signed compare against a Python-int bound converts to an
unsigned Verilog compare, docs/design.md, MyHDL lessons).
"""

from myhdl import always_comb, always_seq, block

from ...spec import ParsaMode, ParsaSpec

__all__ = ["start_check", "run_parameters"]

_ACT, _CONFIG = int(ParsaMode.ACT), int(ParsaMode.CONFIG)
_LAST = max(int(mode) for mode in ParsaMode)


@block
def start_check(refuse, cfg, eps, configured, configured_dims, spec: ParsaSpec):
    """``refuse`` = a START now would be refused with ERR_CONFIG (combinational).

    refuse          : Signal(bool), out
    cfg             : ParsaConfig, in -- ``mode``, ``n_dims``, ``n_actions``, ``alpha``, ``gamma``, ``epsilon_decay``
    eps             : Signal(32), in  -- the live EPSILON
    configured      : Signal(bool), in -- a CONFIG has been accepted
    configured_dims : Signal, in      -- its N_DIMS
    spec            : ParsaSpec
    """
    md, ma, one = spec.max_dims, spec.max_actions, 1 << spec.coef.frac

    @always_comb
    def check():
        bad = cfg.mode > _LAST
        if cfg.mode == _CONFIG and (cfg.n_dims == 0 or cfg.n_dims > md):
            bad = True
        if cfg.mode == _ACT:
            if cfg.n_actions == 0 or cfg.n_actions > ma:
                bad = True
            if cfg.alpha > one or cfg.gamma > one or eps > one or cfg.epsilon_decay > one:
                bad = True
            if not configured or cfg.n_dims != configured_dims:
                bad = True
        refuse.next = bad

    return check


@block
def run_parameters(
    n_dims, rec_words, n_actions, out_words, alpha, gamma, decay, online, starting, cfg, clock, reset, spec: ParsaSpec
):
    """The run-time registers of one operation, latched at START.

    n_dims, n_actions      : Signal, out -- N_DIMS, N_ACTIONS (kept when out of range: the START is refused)
    rec_words, out_words   : Signal, out -- 64-bit words of a state record and of an action record (EMIT_VALUES)
    alpha, gamma, decay    : Signal, out -- ALPHA, GAMMA, EPSILON_DECAY (UQ1.COEF_FRAC; ALPHA, GAMMA as signed
                             operands so the multiplies stay signed)
    online                 : Signal(bool), out -- OPTIONS.ONLINE
    starting               : Signal(bool), in -- START in IDLE (and no SOFT_RESET)
    cfg                    : ParsaConfig, in
    clock, reset           : in
    spec                   : ParsaSpec
    """
    md, ma, cf = spec.max_dims, spec.max_actions, spec.coef.frac
    one = 1 << cf

    @always_seq(clock.posedge, reset=reset)
    def latch():
        if starting:
            if cfg.n_dims <= md:
                n_dims.next = cfg.n_dims[len(n_dims) :]
                rec_words.next = 1 + ((cfg.n_dims[len(n_dims) :] + 1) >> 1)
            if cfg.n_actions <= ma:
                n_actions.next = cfg.n_actions[len(n_actions) :]
                if cfg.options[1]:
                    out_words.next = 1 + ((cfg.n_actions[len(n_actions) :] + 1) >> 1)
                else:
                    out_words.next = 1
            if cfg.alpha <= one:
                alpha.next = cfg.alpha[cf + 1 :]
            if cfg.gamma <= one:
                gamma.next = cfg.gamma[cf + 1 :]
            if cfg.epsilon_decay <= one:
                decay.next = cfg.epsilon_decay[cf + 1 :]
            online.next = cfg.options[0]

    return latch
