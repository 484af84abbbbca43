"""The GAE core (HEPPO): its magic number and VLNV, the CTRL.MODE values (:class:`GaeMode`), its register table
(``GAE_REGISTERS``) and its build parameters with the stream formats and cycle counts derived from them
(:class:`GaeSpec`).

One module per core, so that a core's whole spec reads in one place; it imports the register machinery and
:class:`~pynq_rl.overlay.spec.qformat.QFormat`, nothing from the other cores.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from .qformat import QFormat
from .registers import READ_ONLY, READ_WRITE, _common_registers, _register

GAE_MAGIC = 0x6AE0
GAE_VLNV = "pynq-rl.org:rl:gae_core:1.0"


class GaeMode(enum.IntEnum):
    """CTRL.MODE of the GAE core: the input word format."""

    RAW = 0
    """rewards and values as full-width fixed point (DATA format)"""
    Q8 = 1
    """rewards and values as CODE_BITS codes, dequantized on chip as code * SCALE + OFFSET with one SCALE and
    OFFSET per operation (the ``R_SCALE``, ``V_SCALE``, ``R_OFFSET`` and ``V_OFFSET`` registers: HEPPO's block
    standardization)"""
    Q8_RUNS = 2
    """rewards and values as CODE_BITS codes in runs of RUN_LENGTH records, each run headed by two header records
    that carry every lane's own reward and value SCALE, then OFFSET (:class:`GaeSpec`): the default 8-bit mode"""


GAE_REGISTERS = MappingProxyType(
    {
        **_common_registers(GAE_MAGIC),
        "LANES": _register(0x10, READ_ONLY, "Build parameter: processing elements (trajectories per batch)"),
        "T_MAX": _register(0x14, READ_ONLY, "Build parameter: timesteps the FILO stacks hold"),
        "LOOKAHEAD": _register(0x18, READ_ONLY, "Build parameter: k of the k-step lookahead"),
        "FORMAT": _register(
            0x1C,
            READ_ONLY,
            "Build parameters: fixed-point formats",
            {
                "DATA_W": (0, 8, "data word width (bits)"),
                "FRAC_BITS": (8, 8, "fractional bits of data words"),
                "COEF_FRAC": (16, 8, "fractional bits of GAMMA and GAMMA_LAMBDA"),
                "CODE_BITS": (24, 8, "bits per quantized code in q8 mode"),
            },
        ),
        "T": _register(
            0x20,
            READ_WRITE,
            "Timesteps of the first streamed (latest) chunk of every lane-batch (1..T_MAX); "
            "with CHUNKS = C a lane-batch has T + (C-1) x T_MAX steps",
        ),
        "LANES_USED": _register(0x24, READ_WRITE, "Lanes of the last lane-batch (1..LANES); the others use all LANES"),
        "GAMMA": _register(0x28, READ_WRITE, "Discount gamma, unsigned with COEF_FRAC fractional bits"),
        "GAMMA_LAMBDA": _register(0x2C, READ_WRITE, "gamma * lambda, unsigned with COEF_FRAC fractional bits"),
        "R_SCALE": _register(
            0x30,
            READ_WRITE,
            "q8 block mode: reward dequantization scale, a DATA code within the 25-bit "
            "SCALE range (code x scale is one DSP); START refuses others",
        ),
        "R_OFFSET": _register(0x34, READ_WRITE, "q8 block mode: reward dequantization offset (DATA format)"),
        "V_SCALE": _register(
            0x38,
            READ_WRITE,
            "q8 block mode: value dequantization scale, a DATA code within the 25-bit SCALE range; START "
            "refuses others",
        ),
        "V_OFFSET": _register(0x3C, READ_WRITE, "q8 block mode: value dequantization offset (DATA format)"),
        "BATCHES": _register(
            0x40,
            READ_WRITE,
            "Lane-batches streamed back to back in one operation (1..BATCHES_MAX): "
            "B x (S+1) input records in, B x S output records out for S steps per "
            "lane-batch",
            reset=1,
        ),
        "CHUNKS": _register(
            0x44,
            READ_WRITE,
            "T_MAX chunks of every lane-batch (1..CHUNKS_MAX), streamed latest first: "
            "the first T steps long with the bootstrap row, the others T_MAX steps "
            "without one; the recursion runs on across them (one long sequence)",
            reset=1,
        ),
        "RUN_LENGTH": _register(
            0x48,
            READ_ONLY,
            "Build parameter: input records per run in q8-runs mode (each run headed by a SCALE and an OFFSET "
            "header record)",
        ),
    }
)


@dataclass(frozen=True)
class GaeSpec:
    """Build parameters of one GAE core and everything derived from them.

    Stream formats (little-endian, one *record* per timestep, each record padded to whole stream beats):

    * input, ``T + 1`` records in forward time order. Record ``t < T`` holds ``LANES`` rewards, ``LANES`` values
      and ``ceil(LANES / 8)`` bytes of done bits (bit ``n`` of the done field is lane ``n``); record ``T`` holds the
      bootstrap values ``V(s_T)`` (its rewards and done bits are ignored). Rewards and values are int8 codes in q8
      mode and int32 DATA words in raw mode. Unused lanes are ignored.
    * output, ``T`` records in forward time order, each ``LANES`` advantages then ``LANES`` returns (``A + V``), all
      int32 DATA words.
    * an operation of ``BATCHES = B`` lane-batches streams B such inputs back to back (B x (T + 1) records, TLAST on
      the last) and returns B such outputs back to back (B x T records, TLAST on the last); batch ``b`` holds lanes
      ``b * LANES ...``, the last one ``LANES_USED`` of them. All batches share T, the coefficients and the q8
      registers.
    * q8-runs mode (:attr:`GaeMode.Q8_RUNS`): a lane-batch's ``S + 1`` records, in stream order, are cut into runs of
      :attr:`run_length` records (the last one may be shorter); two *header records* go ahead of each run, each the
      size of a raw record. The first holds every lane's SCALE (its reward field: LANES reward scales, its value
      field: LANES value scales; int32 words of which the core reads the low 25 bits as a signed SCALE code), the
      second every lane's OFFSET (DATA words); their done bytes are ignored. Each code of the run's records is
      dequantized with its own lane's pair: ``sat(code x SCALE + OFFSET)``. Runs restart with each lane-batch and
      run on across its chunks. The ``R_SCALE``, ``V_SCALE``, ``R_OFFSET`` and ``V_OFFSET`` registers are not read.
    * a lane-batch of ``S > T_MAX`` steps is ``CHUNKS = C`` chunks (:meth:`chunking`), streamed from the latest to the
      earliest: first steps ``[S - T, S)`` and the bootstrap row ``V(s_S)`` (T + 1 records, the register T holds
      this first chunk's length), then each earlier T_MAX steps in forward order without a bootstrap row (T_MAX
      records each): S + 1 input records. The PEs keep their recursion state (V_{t+1}, the delta and A histories)
      from one chunk to the next, so the result is the one-long-sequence recursion, bit for bit. The output
      returns the S records in the same chunk order (:meth:`stream_rows`).
    """

    lanes: int = 8
    """processing elements, i.e. trajectories computed side by side"""
    t_max: int = 1024
    """timesteps the FILO stacks hold"""
    lookahead: int = 2
    """k of the k-step lookahead (HEPPO eq. 10/11) that pipelines the A_t feedback loop"""
    code_bits: int = 8
    """bits of a quantized reward or value code (q8 mode)"""
    data: QFormat = QFormat(32, 16)
    """format of internal data words, raw-mode inputs, dequantized values and outputs"""
    coef: QFormat = QFormat(24, 23, signed=False)
    """format of GAMMA and GAMMA_LAMBDA: UQ1.23 holds 1.0 exactly and, as a signed multiply operand, fits the DSP48's
    25-bit port, so data x coefficient is 2 DSPs with the data split at bit 17 (UQ1.24 needs 26 bits; measured
    error vs float64 unchanged, 1.9e-4 -> 2.0e-4 on the 1e-3 test)"""
    run_length: int = 32
    """input records per run in q8-runs mode: one SCALE and one OFFSET per lane and run, as the OCP Microscaling
    formats share one scale per 32 elements (measured on PPO rollouts: per-lane runs of 32 cut the advantage error of
    one block per operation about 11x, for 2 more bits per element)"""
    stream_bytes: int = 8
    """AXI-Stream TDATA width in bytes (the DMA's memory-mapped width on the board's HP port)"""
    multiplier_port_bits: int = 25
    """widest signed operand of the fabric's multiplier primitive: 25 for the Zynq boards' DSP48E1/E2 (a data x
    coefficient product is 2 DSPs, each with its M register), 18 for an 18 x 18 primitive such as the ECP5's
    MULT18X18D, the place-and-route stand-in (the coefficient is split at bit 17 too: 4 primitives per product, each
    output registered, since yosys and nextpnr-ecp5 put no register inside a MULT18X18D). The arithmetic, the
    latency and every result are the same either way; only the HDL's partial products differ."""
    read_latency: ClassVar[int] = 1
    """register stages from a stack's read data to the PE (the BRAM output register); the dequantization (multiply,
    add the offset, clamp) happens on the way in, before the stacks, where it costs no compute cycles"""
    pe_latency: ClassVar[int] = 10
    """register stages of the HDL's processing element, from its inputs to A_t"""

    batches_max = 0xFFFF
    """largest BATCHES of one operation (the core's batch counter is 16 bits)"""
    chunks_max = 0xFFFF
    """largest CHUNKS of one lane-batch (the core's chunk counter is 16 bits)"""

    @property
    def pipeline_depth(self) -> int:
        """Cycles a chunk's compute phase takes beyond one per timestep: CYCLES = T + pipeline_depth for one chunk.

        The HDL's, fixed by its structure (so not a parameter): 2 for the last loaded row to reach its BRAM, 1 pop of
        the bootstrap row (a bubble in a continuation chunk), 1 BRAM read, :attr:`read_latency`,
        :attr:`pe_latency`, 1 write-back. The GAE tests hold the HDL's stage counts equal to these.
        """
        return 2 + 1 + 1 + self.read_latency + self.pe_latency + 1

    def __post_init__(self) -> None:
        limits = {
            "lanes": (1, 256),
            "t_max": (1, 1 << 16),
            "lookahead": (1, 8),
            "code_bits": (2, 8),
            "run_length": (1, 1 << 16),
        }
        for name, (lo, hi) in limits.items():
            value = getattr(self, name)
            if not lo <= value <= hi:
                raise ValueError(f"GaeSpec.{name} must be in [{lo}, {hi}], not {value!r}")
        if self.stream_bytes not in (4, 8, 16, 32, 64, 128):
            raise ValueError(f"GaeSpec.stream_bytes must be a power of two from 4 to 128, not {self.stream_bytes!r}")
        if self.data.width != 32:
            raise ValueError(f"GaeSpec.data must be 32 bits wide (stream words are int32), not {self.data.width!r}")
        if self.multiplier_port_bits not in (18, 25):
            raise ValueError(
                f"GaeSpec.multiplier_port_bits must be 25 (DSP48) or 18 (18 x 18 multipliers), not "
                f"{self.multiplier_port_bits!r}"
            )

    def cycles(self, n_steps: int, batches: int = 1) -> int:
        """CYCLES of an operation of ``batches`` lane-batches of ``n_steps`` each: the compute phases, summed, one
        per chunk (a continuation chunk pops an empty slot where the first one pops its bootstrap row)."""
        chunks, _ = self.chunking(n_steps)
        return batches * (n_steps + chunks * self.pipeline_depth)

    def chunking(self, n_steps: int) -> tuple[int, int]:
        """``(CHUNKS, T)`` of a lane-batch of ``n_steps`` steps: ``ceil(n_steps / T_MAX)`` chunks, the first
        streamed (latest) one ``T = n_steps - (CHUNKS - 1) x T_MAX`` steps long."""
        if n_steps < 1:
            raise ValueError(f"n_steps must be >= 1, not {n_steps!r}")
        chunks = -(-n_steps // self.t_max)
        return chunks, n_steps - (chunks - 1) * self.t_max

    def stream_rows(self, n_steps: int) -> np.ndarray:
        """Time index of each input record of one lane-batch of ``n_steps`` steps, in stream order (``n_steps + 1``
        records; index ``n_steps`` is the bootstrap row). The output records come newest first
        (:meth:`output_rows`)."""
        chunks, first = self.chunking(n_steps)
        tail = n_steps - first
        parts = [np.arange(tail, n_steps + 1)]
        parts += [np.arange(tail - c * self.t_max, tail - (c - 1) * self.t_max) for c in range(1, chunks)]
        return np.concatenate(parts)

    def output_rows(self, n_steps: int) -> np.ndarray:
        """Time index of each output record of one lane-batch of ``n_steps`` steps, in stream order: newest first,
        ``n_steps - 1`` down to 0. The core drains each chunk's results in the order its PEs write them back (the
        drain trails the write-back instead of waiting for A_0) and the chunks come latest first, so the whole
        lane-batch leaves in reverse time order; the driver flips it back with a view."""
        return np.arange(n_steps - 1, -1, -1)

    @property
    def done_bytes(self) -> int:
        """bytes of done bits per input record"""
        return (self.lanes + 7) // 8

    def _padded(self, nbytes: int) -> int:
        return -(-nbytes // self.stream_bytes) * self.stream_bytes

    def input_record_bytes(self, mode: GaeMode) -> int:
        """bytes of one input record (padded to whole beats) in the given mode; q8-runs header records are raw-sized
        (:attr:`header_record_bytes`)"""
        word = 4 if mode == GaeMode.RAW else 1
        return self._padded(2 * self.lanes * word + self.done_bytes)

    @property
    def header_record_bytes(self) -> int:
        """bytes of one q8-runs header record: a raw record's (LANES reward words, LANES value words, done bytes)"""
        return self.input_record_bytes(GaeMode.RAW)

    def runs(self, n_rows: int) -> int:
        """q8-runs runs of a lane-batch of ``n_rows`` input records (``S + 1`` for S steps)"""
        return -(-n_rows // self.run_length)

    def run_of_rows(self, n_steps: int) -> np.ndarray:
        """q8-runs run of each time row 0..``n_steps`` (the bootstrap row last) of a lane-batch of ``n_steps`` steps:
        its record's stream position (:meth:`stream_rows`) over :attr:`run_length`."""
        position = np.argsort(self.stream_rows(n_steps))
        return position // self.run_length

    def input_batch_bytes(self, mode: GaeMode, n_steps: int) -> int:
        """bytes of one lane-batch's input stream of ``n_steps`` steps in ``mode``, headers included"""
        n_rows = n_steps + 1
        data = n_rows * self.input_record_bytes(mode)
        if GaeMode(mode) == GaeMode.Q8_RUNS:
            data += 2 * self.runs(n_rows) * self.header_record_bytes
        return data

    def bits_per_element(self, mode: GaeMode) -> float:
        """Information bits a stored reward or value takes in ``mode``, counting its share of every scale and offset
        but not the done bits or the padding of records to whole beats: 32 (raw), 8 (q8, one block per operation:
        its four registers spread over all elements), ``8 + 2 x 32 / run_length`` (q8-runs: a 32-bit SCALE and
        OFFSET per lane and run), 10.0 for runs of 32."""
        mode = GaeMode(mode)
        if mode == GaeMode.RAW:
            return float(self.data.width)
        if mode == GaeMode.Q8:
            return float(self.code_bits)
        return self.code_bits + 2 * 32 / self.run_length

    @property
    def output_record_bytes(self) -> int:
        """bytes of one output record (advantages then returns, int32 each)"""
        return self._padded(2 * self.lanes * 4)

    def parameter_registers(self) -> dict[str, int]:
        """Values of the read-only identity and build-parameter registers (ID, LANES, T_MAX, LOOKAHEAD, FORMAT,
        RUN_LENGTH), FORMAT packed by its field table: what the HDL hard-wires and the emulated IP reports."""
        fields = GAE_REGISTERS["FORMAT"]["fields"]
        packed = {
            "DATA_W": self.data.width,
            "FRAC_BITS": self.data.frac,
            "COEF_FRAC": self.coef.frac,
            "CODE_BITS": self.code_bits,
        }
        return {
            "ID": GAE_REGISTERS["ID"]["reset"],
            "LANES": self.lanes,
            "T_MAX": self.t_max,
            "LOOKAHEAD": self.lookahead,
            "FORMAT": sum(value << fields[name]["bit_offset"] for name, value in packed.items()),
            "RUN_LENGTH": self.run_length,
        }

    @property
    def scale(self) -> QFormat:
        """format of the q8 SCALE registers: DATA's fraction in 25 signed bits, so a code times a scale fits one
        DSP48 (25 x 18); block standardization never needs more (its scales stay far below 2**24 LSB)"""
        return QFormat(25, self.data.frac)

    @property
    def code(self) -> QFormat:
        """format of q8 codes (signed integers)"""
        return QFormat(self.code_bits, 0)

    def lookahead_powers(self, gamma_lambda_code: int) -> tuple[int, ...]:
        """Coefficient codes of C**j for j = 0..k, as the core computes them once per batch.

        C**0 = 1.0 exactly; C**j = round_half_up(C**(j-1) * C) in the coefficient format.
        """
        one = 1 << self.coef.frac
        powers = [one]
        half = 1 << (self.coef.frac - 1)
        for _ in range(self.lookahead):
            powers.append((powers[-1] * gamma_lambda_code + half) >> self.coef.frac)
        return tuple(powers)
