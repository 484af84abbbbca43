/* pynq-rl register map, generated from pynq_rl/overlay/spec/ by `pynq-rl build regs`: do not edit. */
#ifndef PYNQ_RL_REGS_H
#define PYNQ_RL_REGS_H

#include <stdint.h>

#define PYNQ_RL_SPEC_VERSION_MAJOR                           1u
#define PYNQ_RL_SPEC_VERSION_MINOR                           0u

/* value of field F (a PYNQ_RL_<CORE>_<REG>_<FIELD> prefix) in register value v, and x placed in F */
#define PYNQ_RL_GET(v, F) (((uint32_t)(v) & F##_MASK) >> F##_OFFSET)
#define PYNQ_RL_SET(F, x) (((uint32_t)(x) << F##_OFFSET) & F##_MASK)

/* Pynq-Z2 (xc7z020clg400-1): base addresses */
#define PYNQ_RL_PYNQ_Z2_GAE_BASE                             0x40000000u
#define PYNQ_RL_PYNQ_Z2_GAE_DMA_BASE                         0x40010000u
#define PYNQ_RL_PYNQ_Z2_REPLAY_BASE                          0x40020000u
#define PYNQ_RL_PYNQ_Z2_REPLAY_DMA_BASE                      0x40030000u
#define PYNQ_RL_PYNQ_Z2_PARSA_BASE                           0x40040000u
#define PYNQ_RL_PYNQ_Z2_PARSA_DMA_BASE                       0x40050000u

/* Pynq-Z2 gae core: its build-parameter registers read */
#define PYNQ_RL_PYNQ_Z2_GAE_LANES                            8u
#define PYNQ_RL_PYNQ_Z2_GAE_T_MAX                            1024u
#define PYNQ_RL_PYNQ_Z2_GAE_LOOKAHEAD                        2u
#define PYNQ_RL_PYNQ_Z2_GAE_FORMAT                           0x08171020u
#define PYNQ_RL_PYNQ_Z2_GAE_RUN_LENGTH                       32u

/* Pynq-Z2 replay core: its build-parameter registers read */
#define PYNQ_RL_PYNQ_Z2_REPLAY_K                             16u
#define PYNQ_RL_PYNQ_Z2_REPLAY_LEVELS                        4u
#define PYNQ_RL_PYNQ_Z2_REPLAY_CAPACITY                      65536u
#define PYNQ_RL_PYNQ_Z2_REPLAY_FORMAT                        0x00000A10u

/* Pynq-Z2 parsa core: its build-parameter registers read */
#define PYNQ_RL_PYNQ_Z2_PARSA_MAX_DIMS                       20u
#define PYNQ_RL_PYNQ_Z2_PARSA_MAX_ACTIONS                    10u
#define PYNQ_RL_PYNQ_Z2_PARSA_WORKERS                        4u
#define PYNQ_RL_PYNQ_Z2_PARSA_TILES_PER_WORKER               1024u
#define PYNQ_RL_PYNQ_Z2_PARSA_MAX_TILINGS                    64u
#define PYNQ_RL_PYNQ_Z2_PARSA_KEYS                           16u
#define PYNQ_RL_PYNQ_Z2_PARSA_FORMAT                         0x04101010u

/* ZCU106 (xczu7ev-ffvc1156-2-e): base addresses */
#define PYNQ_RL_ZCU106_GAE_BASE                              0xA0000000u
#define PYNQ_RL_ZCU106_GAE_DMA_BASE                          0xA0010000u
#define PYNQ_RL_ZCU106_REPLAY_BASE                           0xA0020000u
#define PYNQ_RL_ZCU106_REPLAY_DMA_BASE                       0xA0030000u
#define PYNQ_RL_ZCU106_PARSA_BASE                            0xA0040000u
#define PYNQ_RL_ZCU106_PARSA_DMA_BASE                        0xA0050000u

/* ZCU106 gae core: its build-parameter registers read */
#define PYNQ_RL_ZCU106_GAE_LANES                             64u
#define PYNQ_RL_ZCU106_GAE_T_MAX                             1024u
#define PYNQ_RL_ZCU106_GAE_LOOKAHEAD                         2u
#define PYNQ_RL_ZCU106_GAE_FORMAT                            0x08171020u
#define PYNQ_RL_ZCU106_GAE_RUN_LENGTH                        32u

/* ZCU106 replay core: its build-parameter registers read */
#define PYNQ_RL_ZCU106_REPLAY_K                              16u
#define PYNQ_RL_ZCU106_REPLAY_LEVELS                         5u
#define PYNQ_RL_ZCU106_REPLAY_CAPACITY                       1048576u
#define PYNQ_RL_ZCU106_REPLAY_FORMAT                         0x00000A10u

/* ZCU106 parsa core: its build-parameter registers read */
#define PYNQ_RL_ZCU106_PARSA_MAX_DIMS                        20u
#define PYNQ_RL_ZCU106_PARSA_MAX_ACTIONS                     10u
#define PYNQ_RL_ZCU106_PARSA_WORKERS                         8u
#define PYNQ_RL_ZCU106_PARSA_TILES_PER_WORKER                4096u
#define PYNQ_RL_ZCU106_PARSA_MAX_TILINGS                     32u
#define PYNQ_RL_ZCU106_PARSA_KEYS                            256u
#define PYNQ_RL_ZCU106_PARSA_FORMAT                          0x04101010u

/* gae core: pynq-rl.org:rl:gae_core:1.0 */
#define PYNQ_RL_GAE_MAGIC                                    0x6AE0u

/* ID (read-only): Core identity: magic number and spec version */
#define PYNQ_RL_GAE_ID_OFFSET                                0x00u
#define PYNQ_RL_GAE_ID_RESET                                 0x6AE00100u
#define PYNQ_RL_GAE_ID_VERSION_MINOR_OFFSET                  0u  /* spec minor version */
#define PYNQ_RL_GAE_ID_VERSION_MINOR_SIZE                    8u
#define PYNQ_RL_GAE_ID_VERSION_MINOR_MASK                    0x000000FFu
#define PYNQ_RL_GAE_ID_VERSION_MAJOR_OFFSET                  8u  /* spec major version */
#define PYNQ_RL_GAE_ID_VERSION_MAJOR_SIZE                    8u
#define PYNQ_RL_GAE_ID_VERSION_MAJOR_MASK                    0x0000FF00u
#define PYNQ_RL_GAE_ID_MAGIC_OFFSET                          16u  /* core magic number */
#define PYNQ_RL_GAE_ID_MAGIC_SIZE                            16u
#define PYNQ_RL_GAE_ID_MAGIC_MASK                            0xFFFF0000u

/* CTRL (read-write): Control */
#define PYNQ_RL_GAE_CTRL_OFFSET                              0x04u
#define PYNQ_RL_GAE_CTRL_RESET                               0x00000000u
#define PYNQ_RL_GAE_CTRL_START_OFFSET                        0u  /* Start an operation (auto-clears). (pulse) */
#define PYNQ_RL_GAE_CTRL_START_SIZE                          1u
#define PYNQ_RL_GAE_CTRL_START_MASK                          0x00000001u
#define PYNQ_RL_GAE_CTRL_SOFT_RESET_OFFSET                   1u  /* Abort, flush the streams and clear STATUS (auto-clears). (pulse) */
#define PYNQ_RL_GAE_CTRL_SOFT_RESET_SIZE                     1u
#define PYNQ_RL_GAE_CTRL_SOFT_RESET_MASK                     0x00000002u
#define PYNQ_RL_GAE_CTRL_MODE_OFFSET                         2u  /* Core-specific operating mode. */
#define PYNQ_RL_GAE_CTRL_MODE_SIZE                           4u
#define PYNQ_RL_GAE_CTRL_MODE_MASK                           0x0000003Cu

/* STATUS (read-only): Status; error and saturation flags are sticky until the next START */
#define PYNQ_RL_GAE_STATUS_OFFSET                            0x08u
#define PYNQ_RL_GAE_STATUS_RESET                             0x00000000u
#define PYNQ_RL_GAE_STATUS_BUSY_OFFSET                       0u  /* an operation is running */
#define PYNQ_RL_GAE_STATUS_BUSY_SIZE                         1u
#define PYNQ_RL_GAE_STATUS_BUSY_MASK                         0x00000001u
#define PYNQ_RL_GAE_STATUS_DONE_OFFSET                       1u  /* the last operation finished (cleared by START) */
#define PYNQ_RL_GAE_STATUS_DONE_SIZE                         1u
#define PYNQ_RL_GAE_STATUS_DONE_MASK                         0x00000002u
#define PYNQ_RL_GAE_STATUS_ERR_CONFIG_OFFSET                 2u  /* START refused: a configuration register is out of range */
#define PYNQ_RL_GAE_STATUS_ERR_CONFIG_SIZE                   1u
#define PYNQ_RL_GAE_STATUS_ERR_CONFIG_MASK                   0x00000004u
#define PYNQ_RL_GAE_STATUS_ERR_STREAM_OFFSET                 3u  /* the input stream ended early or ran long (TLAST misplaced) */
#define PYNQ_RL_GAE_STATUS_ERR_STREAM_SIZE                   1u
#define PYNQ_RL_GAE_STATUS_ERR_STREAM_MASK                   0x00000008u
#define PYNQ_RL_GAE_STATUS_SATURATED_OFFSET                  4u  /* a fixed-point result saturated during the last operation */
#define PYNQ_RL_GAE_STATUS_SATURATED_SIZE                    1u
#define PYNQ_RL_GAE_STATUS_SATURATED_MASK                    0x00000010u

/* CYCLES (read-only): Clock cycles of the compute phase of the last operation */
#define PYNQ_RL_GAE_CYCLES_OFFSET                            0x0Cu
#define PYNQ_RL_GAE_CYCLES_RESET                             0x00000000u

/* LANES (read-only): Build parameter: processing elements (trajectories per batch) */
#define PYNQ_RL_GAE_LANES_OFFSET                             0x10u

/* T_MAX (read-only): Build parameter: timesteps the FILO stacks hold */
#define PYNQ_RL_GAE_T_MAX_OFFSET                             0x14u

/* LOOKAHEAD (read-only): Build parameter: k of the k-step lookahead */
#define PYNQ_RL_GAE_LOOKAHEAD_OFFSET                         0x18u

/* FORMAT (read-only): Build parameters: fixed-point formats */
#define PYNQ_RL_GAE_FORMAT_OFFSET                            0x1Cu
#define PYNQ_RL_GAE_FORMAT_DATA_W_OFFSET                     0u  /* data word width (bits) */
#define PYNQ_RL_GAE_FORMAT_DATA_W_SIZE                       8u
#define PYNQ_RL_GAE_FORMAT_DATA_W_MASK                       0x000000FFu
#define PYNQ_RL_GAE_FORMAT_FRAC_BITS_OFFSET                  8u  /* fractional bits of data words */
#define PYNQ_RL_GAE_FORMAT_FRAC_BITS_SIZE                    8u
#define PYNQ_RL_GAE_FORMAT_FRAC_BITS_MASK                    0x0000FF00u
#define PYNQ_RL_GAE_FORMAT_COEF_FRAC_OFFSET                  16u  /* fractional bits of GAMMA and GAMMA_LAMBDA */
#define PYNQ_RL_GAE_FORMAT_COEF_FRAC_SIZE                    8u
#define PYNQ_RL_GAE_FORMAT_COEF_FRAC_MASK                    0x00FF0000u
#define PYNQ_RL_GAE_FORMAT_CODE_BITS_OFFSET                  24u  /* bits per quantized code in q8 mode */
#define PYNQ_RL_GAE_FORMAT_CODE_BITS_SIZE                    8u
#define PYNQ_RL_GAE_FORMAT_CODE_BITS_MASK                    0xFF000000u

/* T (read-write): Timesteps of the first streamed (latest) chunk of every lane-batch (1..T_MAX); with CHUNKS = C a lane-batch has T + (C-1) x T_MAX steps */
#define PYNQ_RL_GAE_T_OFFSET                                 0x20u
#define PYNQ_RL_GAE_T_RESET                                  0x00000000u

/* LANES_USED (read-write): Lanes of the last lane-batch (1..LANES); the others use all LANES */
#define PYNQ_RL_GAE_LANES_USED_OFFSET                        0x24u
#define PYNQ_RL_GAE_LANES_USED_RESET                         0x00000000u

/* GAMMA (read-write): Discount gamma, unsigned with COEF_FRAC fractional bits */
#define PYNQ_RL_GAE_GAMMA_OFFSET                             0x28u
#define PYNQ_RL_GAE_GAMMA_RESET                              0x00000000u

/* GAMMA_LAMBDA (read-write): gamma * lambda, unsigned with COEF_FRAC fractional bits */
#define PYNQ_RL_GAE_GAMMA_LAMBDA_OFFSET                      0x2Cu
#define PYNQ_RL_GAE_GAMMA_LAMBDA_RESET                       0x00000000u

/* R_SCALE (read-write): q8 block mode: reward dequantization scale, a DATA code within the 25-bit SCALE range (code x scale is one DSP); START refuses others */
#define PYNQ_RL_GAE_R_SCALE_OFFSET                           0x30u
#define PYNQ_RL_GAE_R_SCALE_RESET                            0x00000000u

/* R_OFFSET (read-write): q8 block mode: reward dequantization offset (DATA format) */
#define PYNQ_RL_GAE_R_OFFSET_OFFSET                          0x34u
#define PYNQ_RL_GAE_R_OFFSET_RESET                           0x00000000u

/* V_SCALE (read-write): q8 block mode: value dequantization scale, a DATA code within the 25-bit SCALE range; START refuses others */
#define PYNQ_RL_GAE_V_SCALE_OFFSET                           0x38u
#define PYNQ_RL_GAE_V_SCALE_RESET                            0x00000000u

/* V_OFFSET (read-write): q8 block mode: value dequantization offset (DATA format) */
#define PYNQ_RL_GAE_V_OFFSET_OFFSET                          0x3Cu
#define PYNQ_RL_GAE_V_OFFSET_RESET                           0x00000000u

/* BATCHES (read-write): Lane-batches streamed back to back in one operation (1..BATCHES_MAX): B x (S+1) input records in, B x S output records out for S steps per lane-batch */
#define PYNQ_RL_GAE_BATCHES_OFFSET                           0x40u
#define PYNQ_RL_GAE_BATCHES_RESET                            0x00000001u

/* CHUNKS (read-write): T_MAX chunks of every lane-batch (1..CHUNKS_MAX), streamed latest first: the first T steps long with the bootstrap row, the others T_MAX steps without one; the recursion runs on across them (one long sequence) */
#define PYNQ_RL_GAE_CHUNKS_OFFSET                            0x44u
#define PYNQ_RL_GAE_CHUNKS_RESET                             0x00000001u

/* RUN_LENGTH (read-only): Build parameter: input records per run in q8-runs mode (each run headed by a SCALE and an OFFSET header record) */
#define PYNQ_RL_GAE_RUN_LENGTH_OFFSET                        0x48u

#define PYNQ_RL_GAE_MODE_RAW                                 0u
#define PYNQ_RL_GAE_MODE_Q8                                  1u
#define PYNQ_RL_GAE_MODE_Q8_RUNS                             2u

/* replay core: pynq-rl.org:rl:replay_core:1.0 */
#define PYNQ_RL_REPLAY_MAGIC                                 0x5E9Au

/* ID (read-only): Core identity: magic number and spec version */
#define PYNQ_RL_REPLAY_ID_OFFSET                             0x00u
#define PYNQ_RL_REPLAY_ID_RESET                              0x5E9A0100u
#define PYNQ_RL_REPLAY_ID_VERSION_MINOR_OFFSET               0u  /* spec minor version */
#define PYNQ_RL_REPLAY_ID_VERSION_MINOR_SIZE                 8u
#define PYNQ_RL_REPLAY_ID_VERSION_MINOR_MASK                 0x000000FFu
#define PYNQ_RL_REPLAY_ID_VERSION_MAJOR_OFFSET               8u  /* spec major version */
#define PYNQ_RL_REPLAY_ID_VERSION_MAJOR_SIZE                 8u
#define PYNQ_RL_REPLAY_ID_VERSION_MAJOR_MASK                 0x0000FF00u
#define PYNQ_RL_REPLAY_ID_MAGIC_OFFSET                       16u  /* core magic number */
#define PYNQ_RL_REPLAY_ID_MAGIC_SIZE                         16u
#define PYNQ_RL_REPLAY_ID_MAGIC_MASK                         0xFFFF0000u

/* CTRL (read-write): Control */
#define PYNQ_RL_REPLAY_CTRL_OFFSET                           0x04u
#define PYNQ_RL_REPLAY_CTRL_RESET                            0x00000000u
#define PYNQ_RL_REPLAY_CTRL_START_OFFSET                     0u  /* Start an operation (auto-clears). (pulse) */
#define PYNQ_RL_REPLAY_CTRL_START_SIZE                       1u
#define PYNQ_RL_REPLAY_CTRL_START_MASK                       0x00000001u
#define PYNQ_RL_REPLAY_CTRL_SOFT_RESET_OFFSET                1u  /* Abort, flush the streams and clear STATUS (auto-clears). (pulse) */
#define PYNQ_RL_REPLAY_CTRL_SOFT_RESET_SIZE                  1u
#define PYNQ_RL_REPLAY_CTRL_SOFT_RESET_MASK                  0x00000002u
#define PYNQ_RL_REPLAY_CTRL_MODE_OFFSET                      2u  /* Core-specific operating mode. */
#define PYNQ_RL_REPLAY_CTRL_MODE_SIZE                        4u
#define PYNQ_RL_REPLAY_CTRL_MODE_MASK                        0x0000003Cu

/* STATUS (read-only): Status; error and saturation flags are sticky until the next START */
#define PYNQ_RL_REPLAY_STATUS_OFFSET                         0x08u
#define PYNQ_RL_REPLAY_STATUS_RESET                          0x00000000u
#define PYNQ_RL_REPLAY_STATUS_BUSY_OFFSET                    0u  /* an operation is running */
#define PYNQ_RL_REPLAY_STATUS_BUSY_SIZE                      1u
#define PYNQ_RL_REPLAY_STATUS_BUSY_MASK                      0x00000001u
#define PYNQ_RL_REPLAY_STATUS_DONE_OFFSET                    1u  /* the last operation finished (cleared by START) */
#define PYNQ_RL_REPLAY_STATUS_DONE_SIZE                      1u
#define PYNQ_RL_REPLAY_STATUS_DONE_MASK                      0x00000002u
#define PYNQ_RL_REPLAY_STATUS_ERR_CONFIG_OFFSET              2u  /* START refused: a configuration register is out of range */
#define PYNQ_RL_REPLAY_STATUS_ERR_CONFIG_SIZE                1u
#define PYNQ_RL_REPLAY_STATUS_ERR_CONFIG_MASK                0x00000004u
#define PYNQ_RL_REPLAY_STATUS_ERR_STREAM_OFFSET              3u  /* the input stream ended early or ran long (TLAST misplaced) */
#define PYNQ_RL_REPLAY_STATUS_ERR_STREAM_SIZE                1u
#define PYNQ_RL_REPLAY_STATUS_ERR_STREAM_MASK                0x00000008u
#define PYNQ_RL_REPLAY_STATUS_SATURATED_OFFSET               4u  /* a fixed-point result saturated during the last operation */
#define PYNQ_RL_REPLAY_STATUS_SATURATED_SIZE                 1u
#define PYNQ_RL_REPLAY_STATUS_SATURATED_MASK                 0x00000010u

/* CYCLES (read-only): Clock cycles of the compute phase of the last operation */
#define PYNQ_RL_REPLAY_CYCLES_OFFSET                         0x0Cu
#define PYNQ_RL_REPLAY_CYCLES_RESET                          0x00000000u

/* K (read-only): Build parameter: fan-out of the sum tree */
#define PYNQ_RL_REPLAY_K_OFFSET                              0x10u

/* LEVELS (read-only): Build parameter: levels below the root; capacity = K**LEVELS */
#define PYNQ_RL_REPLAY_LEVELS_OFFSET                         0x14u

/* FORMAT (read-only): Build parameters: leaf priority format */
#define PYNQ_RL_REPLAY_FORMAT_OFFSET                         0x18u
#define PYNQ_RL_REPLAY_FORMAT_LEAF_W_OFFSET                  0u  /* bits of a leaf priority (unsigned) */
#define PYNQ_RL_REPLAY_FORMAT_LEAF_W_SIZE                    8u
#define PYNQ_RL_REPLAY_FORMAT_LEAF_W_MASK                    0x000000FFu
#define PYNQ_RL_REPLAY_FORMAT_LEAF_FRAC_OFFSET               8u  /* fractional bits of a leaf priority */
#define PYNQ_RL_REPLAY_FORMAT_LEAF_FRAC_SIZE                 8u
#define PYNQ_RL_REPLAY_FORMAT_LEAF_FRAC_MASK                 0x0000FF00u

/* TOTAL (read-only): Root of the sum tree: total priority in leaf LSBs (low 32 bits) */
#define PYNQ_RL_REPLAY_TOTAL_OFFSET                          0x1Cu
#define PYNQ_RL_REPLAY_TOTAL_RESET                           0x00000000u

/* TOTAL_HI (read-only): Root of the sum tree: total priority in leaf LSBs (high 32 bits) */
#define PYNQ_RL_REPLAY_TOTAL_HI_OFFSET                       0x20u
#define PYNQ_RL_REPLAY_TOTAL_HI_RESET                        0x00000000u

/* SEED (read-write): PRNG state: a write reseeds (0 means PRNG_ZERO_SEED; while BUSY, when the operation ends), a read returns the current state (save it to resume the sample stream) */
#define PYNQ_RL_REPLAY_SEED_OFFSET                           0x24u
#define PYNQ_RL_REPLAY_SEED_RESET                            0x9E3779B9u

/* COUNT (read-write): SAMPLE / SAMPLE_UNIFORM: samples in this batch (1..MAX_COUNT) */
#define PYNQ_RL_REPLAY_COUNT_OFFSET                          0x28u
#define PYNQ_RL_REPLAY_COUNT_RESET                           0x00000000u

/* STRIDE (read-write): SAMPLE / SAMPLE_UNIFORM: stratum width as a UQ0.32 fraction, floor((2**32 - 1) / COUNT); START refuses COUNT * STRIDE >= 2**32 */
#define PYNQ_RL_REPLAY_STRIDE_OFFSET                         0x2Cu
#define PYNQ_RL_REPLAY_STRIDE_RESET                          0x00000000u

/* NONZERO (read-only): Leaves whose priority is not 0 */
#define PYNQ_RL_REPLAY_NONZERO_OFFSET                        0x30u
#define PYNQ_RL_REPLAY_NONZERO_RESET                         0x00000000u

/* CAPACITY (read-only): Build parameter: leaves (K**LEVELS) */
#define PYNQ_RL_REPLAY_CAPACITY_OFFSET                       0x34u

#define PYNQ_RL_REPLAY_MODE_SET                              0u
#define PYNQ_RL_REPLAY_MODE_SAMPLE                           1u
#define PYNQ_RL_REPLAY_MODE_SAMPLE_UNIFORM                   2u
#define PYNQ_RL_REPLAY_MODE_DUMP                             3u
#define PYNQ_RL_REPLAY_MODE_CLEAR                            4u

/* parsa core: pynq-rl.org:rl:parsa_core:1.0 */
#define PYNQ_RL_PARSA_MAGIC                                  0x5A25u

/* ID (read-only): Core identity: magic number and spec version */
#define PYNQ_RL_PARSA_ID_OFFSET                              0x00u
#define PYNQ_RL_PARSA_ID_RESET                               0x5A250100u
#define PYNQ_RL_PARSA_ID_VERSION_MINOR_OFFSET                0u  /* spec minor version */
#define PYNQ_RL_PARSA_ID_VERSION_MINOR_SIZE                  8u
#define PYNQ_RL_PARSA_ID_VERSION_MINOR_MASK                  0x000000FFu
#define PYNQ_RL_PARSA_ID_VERSION_MAJOR_OFFSET                8u  /* spec major version */
#define PYNQ_RL_PARSA_ID_VERSION_MAJOR_SIZE                  8u
#define PYNQ_RL_PARSA_ID_VERSION_MAJOR_MASK                  0x0000FF00u
#define PYNQ_RL_PARSA_ID_MAGIC_OFFSET                        16u  /* core magic number */
#define PYNQ_RL_PARSA_ID_MAGIC_SIZE                          16u
#define PYNQ_RL_PARSA_ID_MAGIC_MASK                          0xFFFF0000u

/* CTRL (read-write): Control */
#define PYNQ_RL_PARSA_CTRL_OFFSET                            0x04u
#define PYNQ_RL_PARSA_CTRL_RESET                             0x00000000u
#define PYNQ_RL_PARSA_CTRL_START_OFFSET                      0u  /* Start an operation (auto-clears). (pulse) */
#define PYNQ_RL_PARSA_CTRL_START_SIZE                        1u
#define PYNQ_RL_PARSA_CTRL_START_MASK                        0x00000001u
#define PYNQ_RL_PARSA_CTRL_SOFT_RESET_OFFSET                 1u  /* Abort, flush the streams and clear STATUS (auto-clears). (pulse) */
#define PYNQ_RL_PARSA_CTRL_SOFT_RESET_SIZE                   1u
#define PYNQ_RL_PARSA_CTRL_SOFT_RESET_MASK                   0x00000002u
#define PYNQ_RL_PARSA_CTRL_MODE_OFFSET                       2u  /* Core-specific operating mode. */
#define PYNQ_RL_PARSA_CTRL_MODE_SIZE                         4u
#define PYNQ_RL_PARSA_CTRL_MODE_MASK                         0x0000003Cu

/* STATUS (read-only): Status; error and saturation flags are sticky until the next START */
#define PYNQ_RL_PARSA_STATUS_OFFSET                          0x08u
#define PYNQ_RL_PARSA_STATUS_RESET                           0x00000000u
#define PYNQ_RL_PARSA_STATUS_BUSY_OFFSET                     0u  /* an operation is running */
#define PYNQ_RL_PARSA_STATUS_BUSY_SIZE                       1u
#define PYNQ_RL_PARSA_STATUS_BUSY_MASK                       0x00000001u
#define PYNQ_RL_PARSA_STATUS_DONE_OFFSET                     1u  /* the last operation finished (cleared by START) */
#define PYNQ_RL_PARSA_STATUS_DONE_SIZE                       1u
#define PYNQ_RL_PARSA_STATUS_DONE_MASK                       0x00000002u
#define PYNQ_RL_PARSA_STATUS_ERR_CONFIG_OFFSET               2u  /* START refused: a configuration register is out of range */
#define PYNQ_RL_PARSA_STATUS_ERR_CONFIG_SIZE                 1u
#define PYNQ_RL_PARSA_STATUS_ERR_CONFIG_MASK                 0x00000004u
#define PYNQ_RL_PARSA_STATUS_ERR_STREAM_OFFSET               3u  /* the input stream ended early or ran long (TLAST misplaced) */
#define PYNQ_RL_PARSA_STATUS_ERR_STREAM_SIZE                 1u
#define PYNQ_RL_PARSA_STATUS_ERR_STREAM_MASK                 0x00000008u
#define PYNQ_RL_PARSA_STATUS_SATURATED_OFFSET                4u  /* a fixed-point result saturated during the last operation */
#define PYNQ_RL_PARSA_STATUS_SATURATED_SIZE                  1u
#define PYNQ_RL_PARSA_STATUS_SATURATED_MASK                  0x00000010u

/* CYCLES (read-only): Clock cycles of the compute phase of the last operation */
#define PYNQ_RL_PARSA_CYCLES_OFFSET                          0x0Cu
#define PYNQ_RL_PARSA_CYCLES_RESET                           0x00000000u

/* MAX_DIMS (read-only): Build parameter: largest state dimension */
#define PYNQ_RL_PARSA_MAX_DIMS_OFFSET                        0x10u

/* MAX_ACTIONS (read-only): Build parameter: largest number of actions */
#define PYNQ_RL_PARSA_MAX_ACTIONS_OFFSET                     0x14u

/* WORKERS (read-only): Build parameter: parallel tile units */
#define PYNQ_RL_PARSA_WORKERS_OFFSET                         0x18u

/* FORMAT (read-only): Build parameters: widths and formats */
#define PYNQ_RL_PARSA_FORMAT_OFFSET                          0x1Cu
#define PYNQ_RL_PARSA_FORMAT_VALUE_W_OFFSET                  0u  /* bits of a policy value (signed) */
#define PYNQ_RL_PARSA_FORMAT_VALUE_W_SIZE                    8u
#define PYNQ_RL_PARSA_FORMAT_VALUE_W_MASK                    0x000000FFu
#define PYNQ_RL_PARSA_FORMAT_STATE_FRAC_OFFSET               8u  /* fractional bits of state words (int32) */
#define PYNQ_RL_PARSA_FORMAT_STATE_FRAC_SIZE                 8u
#define PYNQ_RL_PARSA_FORMAT_STATE_FRAC_MASK                 0x0000FF00u
#define PYNQ_RL_PARSA_FORMAT_COEF_FRAC_OFFSET                16u  /* fractional bits of ALPHA, GAMMA, EPSILON, EPSILON_DECAY (unsigned) */
#define PYNQ_RL_PARSA_FORMAT_COEF_FRAC_SIZE                  8u
#define PYNQ_RL_PARSA_FORMAT_COEF_FRAC_MASK                  0x00FF0000u
#define PYNQ_RL_PARSA_FORMAT_MAX_SET_DIMS_OFFSET             24u  /* largest number of dimensions of one tiling */
#define PYNQ_RL_PARSA_FORMAT_MAX_SET_DIMS_SIZE               8u
#define PYNQ_RL_PARSA_FORMAT_MAX_SET_DIMS_MASK               0xFF000000u

/* TILES_PER_WORKER (read-only): Build parameter: policy rows in each worker's bank */
#define PYNQ_RL_PARSA_TILES_PER_WORKER_OFFSET                0x20u

/* MAX_TILINGS (read-only): Build parameter: tilings one worker can own */
#define PYNQ_RL_PARSA_MAX_TILINGS_OFFSET                     0x24u

/* KEYS (read-only): Build parameter: keys (agents/flows) with their own previous state-action */
#define PYNQ_RL_PARSA_KEYS_OFFSET                            0x28u

/* N_DIMS (read-write): State dimensions in use (1..MAX_DIMS); set before CONFIG */
#define PYNQ_RL_PARSA_N_DIMS_OFFSET                          0x2Cu
#define PYNQ_RL_PARSA_N_DIMS_RESET                           0x00000000u

/* N_ACTIONS (read-write): Actions in use (1..MAX_ACTIONS) */
#define PYNQ_RL_PARSA_N_ACTIONS_OFFSET                       0x30u
#define PYNQ_RL_PARSA_N_ACTIONS_RESET                        0x00000000u

/* N_TILINGS (read-write): Tiling descriptors in the CONFIG stream (1..WORKERS*MAX_TILINGS) */
#define PYNQ_RL_PARSA_N_TILINGS_OFFSET                       0x34u
#define PYNQ_RL_PARSA_N_TILINGS_RESET                        0x00000000u

/* FRAC_BITS (read-write): Fractional bits of policy values, rewards and q values (the run-time Q format; kept with the policy, the arithmetic does not depend on it) */
#define PYNQ_RL_PARSA_FRAC_BITS_OFFSET                       0x38u
#define PYNQ_RL_PARSA_FRAC_BITS_RESET                        0x00000000u

/* ALPHA (read-write): Step size per tiling, unsigned with COEF_FRAC fractional bits (<= 1.0) */
#define PYNQ_RL_PARSA_ALPHA_OFFSET                           0x3Cu
#define PYNQ_RL_PARSA_ALPHA_RESET                            0x00000000u

/* GAMMA (read-write): Discount, unsigned with COEF_FRAC fractional bits (<= 1.0) */
#define PYNQ_RL_PARSA_GAMMA_OFFSET                           0x40u
#define PYNQ_RL_PARSA_GAMMA_RESET                            0x00000000u

/* EPSILON (read-write): Exploration probability, unsigned with COEF_FRAC fractional bits (<= 1.0); live: decays after every chosen action (a write while BUSY acts when the operation ends) */
#define PYNQ_RL_PARSA_EPSILON_OFFSET                         0x44u
#define PYNQ_RL_PARSA_EPSILON_RESET                          0x00000000u

/* EPSILON_DECAY (read-write): Factor applied to EPSILON after every chosen action (<= 1.0) */
#define PYNQ_RL_PARSA_EPSILON_DECAY_OFFSET                   0x48u
#define PYNQ_RL_PARSA_EPSILON_DECAY_RESET                    0x00010000u

/* OPTIONS (read-write): Run-time options */
#define PYNQ_RL_PARSA_OPTIONS_OFFSET                         0x4Cu
#define PYNQ_RL_PARSA_OPTIONS_RESET                          0x00000000u
#define PYNQ_RL_PARSA_OPTIONS_ONLINE_OFFSET                  0u  /* apply Sarsa updates */
#define PYNQ_RL_PARSA_OPTIONS_ONLINE_SIZE                    1u
#define PYNQ_RL_PARSA_OPTIONS_ONLINE_MASK                    0x00000001u
#define PYNQ_RL_PARSA_OPTIONS_EMIT_VALUES_OFFSET             1u  /* follow each action record with the N_ACTIONS q values */
#define PYNQ_RL_PARSA_OPTIONS_EMIT_VALUES_SIZE               1u
#define PYNQ_RL_PARSA_OPTIONS_EMIT_VALUES_MASK               0x00000002u

/* SEED (read-write): PRNG state: a write reseeds (0 means PRNG_ZERO_SEED; while BUSY, when the operation ends), a read returns the current state */
#define PYNQ_RL_PARSA_SEED_OFFSET                            0x50u
#define PYNQ_RL_PARSA_SEED_RESET                             0x9E3779B9u

/* REWARD_KEY (read-write): Key addressed by the next REWARD write */
#define PYNQ_RL_PARSA_REWARD_KEY_OFFSET                      0x54u
#define PYNQ_RL_PARSA_REWARD_KEY_RESET                       0x00000000u

/* REWARD (read-write): Writing it stores a pending reward (value code) for REWARD_KEY, used by that key's next state record without the REWARD flag (while BUSY: stored when the operation ends, for REWARD_KEY then) */
#define PYNQ_RL_PARSA_REWARD_OFFSET                          0x58u
#define PYNQ_RL_PARSA_REWARD_RESET                           0x00000000u

/* CYCLES_ACT (read-only): Cycles from a state record's last beat to its action record */
#define PYNQ_RL_PARSA_CYCLES_ACT_OFFSET                      0x5Cu
#define PYNQ_RL_PARSA_CYCLES_ACT_RESET                       0x00000000u

/* CYCLES_UPDATE (read-only): Cycles of the Sarsa update pass of the last state record */
#define PYNQ_RL_PARSA_CYCLES_UPDATE_OFFSET                   0x60u
#define PYNQ_RL_PARSA_CYCLES_UPDATE_RESET                    0x00000000u

/* MBOX_ACTION (read-only): Mailbox result: the last MAILBOX decision's action and the live STATUS flags; while a MAILBOX decision runs, a read is answered when it is DONE (or after ParsaSpec.mailbox_wait cycles, DONE still 0) */
#define PYNQ_RL_PARSA_MBOX_ACTION_OFFSET                     0x64u
#define PYNQ_RL_PARSA_MBOX_ACTION_RESET                      0x00000000u
#define PYNQ_RL_PARSA_MBOX_ACTION_ACTION_OFFSET              0u  /* chosen action (PARSA_NO_ACTION for a TERMINAL or rejected record) */
#define PYNQ_RL_PARSA_MBOX_ACTION_ACTION_SIZE                16u
#define PYNQ_RL_PARSA_MBOX_ACTION_ACTION_MASK                0x0000FFFFu
#define PYNQ_RL_PARSA_MBOX_ACTION_EXPLORED_OFFSET            16u  /* the action was the epsilon-greedy random choice */
#define PYNQ_RL_PARSA_MBOX_ACTION_EXPLORED_SIZE              1u
#define PYNQ_RL_PARSA_MBOX_ACTION_EXPLORED_MASK              0x00010000u
#define PYNQ_RL_PARSA_MBOX_ACTION_BUSY_OFFSET                24u  /* STATUS.BUSY at the time of the read */
#define PYNQ_RL_PARSA_MBOX_ACTION_BUSY_SIZE                  1u
#define PYNQ_RL_PARSA_MBOX_ACTION_BUSY_MASK                  0x01000000u
#define PYNQ_RL_PARSA_MBOX_ACTION_DONE_OFFSET                25u  /* STATUS.DONE at the time of the read */
#define PYNQ_RL_PARSA_MBOX_ACTION_DONE_SIZE                  1u
#define PYNQ_RL_PARSA_MBOX_ACTION_DONE_MASK                  0x02000000u
#define PYNQ_RL_PARSA_MBOX_ACTION_ERR_CONFIG_OFFSET          26u  /* STATUS.ERR_CONFIG at the time of the read */
#define PYNQ_RL_PARSA_MBOX_ACTION_ERR_CONFIG_SIZE            1u
#define PYNQ_RL_PARSA_MBOX_ACTION_ERR_CONFIG_MASK            0x04000000u
#define PYNQ_RL_PARSA_MBOX_ACTION_ERR_STREAM_OFFSET          27u  /* STATUS.ERR_STREAM at the time of the read */
#define PYNQ_RL_PARSA_MBOX_ACTION_ERR_STREAM_SIZE            1u
#define PYNQ_RL_PARSA_MBOX_ACTION_ERR_STREAM_MASK            0x08000000u
#define PYNQ_RL_PARSA_MBOX_ACTION_SATURATED_OFFSET           28u  /* STATUS.SATURATED at the time of the read */
#define PYNQ_RL_PARSA_MBOX_ACTION_SATURATED_SIZE             1u
#define PYNQ_RL_PARSA_MBOX_ACTION_SATURATED_MASK             0x10000000u

/* MBOX_Q (read-only): Mailbox result: q(s, a) of the last MAILBOX decision's action (int32 value code) */
#define PYNQ_RL_PARSA_MBOX_Q_OFFSET                          0x68u
#define PYNQ_RL_PARSA_MBOX_Q_RESET                           0x00000000u

/* MBOX_KEY (write-only): Mailbox record word 0: the state record's header bits [31:0] */
#define PYNQ_RL_PARSA_MBOX_KEY_OFFSET                        0x70u
#define PYNQ_RL_PARSA_MBOX_KEY_RESET                         0x00000000u
#define PYNQ_RL_PARSA_MBOX_KEY_KEY_OFFSET                    0u  /* key (agent or flow) */
#define PYNQ_RL_PARSA_MBOX_KEY_KEY_SIZE                      16u
#define PYNQ_RL_PARSA_MBOX_KEY_KEY_MASK                      0x0000FFFFu
#define PYNQ_RL_PARSA_MBOX_KEY_FLAGS_OFFSET                  16u  /* flags (ParsaFlag: REWARD, TERMINAL) */
#define PYNQ_RL_PARSA_MBOX_KEY_FLAGS_SIZE                    8u
#define PYNQ_RL_PARSA_MBOX_KEY_FLAGS_MASK                    0x00FF0000u

/* MBOX_REWARD (write-only): Mailbox record word 1: reward (int32 value code, saturated to VALUE_W) */
#define PYNQ_RL_PARSA_MBOX_REWARD_OFFSET                     0x74u
#define PYNQ_RL_PARSA_MBOX_REWARD_RESET                      0x00000000u

/* MBOX_STATE_0 (write-only): Mailbox record word 2: state word 0 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_0_OFFSET                    0x78u
#define PYNQ_RL_PARSA_MBOX_STATE_0_RESET                     0x00000000u

/* MBOX_STATE_1 (write-only): Mailbox record word 3: state word 1 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_1_OFFSET                    0x7Cu
#define PYNQ_RL_PARSA_MBOX_STATE_1_RESET                     0x00000000u

/* MBOX_STATE_2 (write-only): Mailbox record word 4: state word 2 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_2_OFFSET                    0x80u
#define PYNQ_RL_PARSA_MBOX_STATE_2_RESET                     0x00000000u

/* MBOX_STATE_3 (write-only): Mailbox record word 5: state word 3 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_3_OFFSET                    0x84u
#define PYNQ_RL_PARSA_MBOX_STATE_3_RESET                     0x00000000u

/* MBOX_STATE_4 (write-only): Mailbox record word 6: state word 4 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_4_OFFSET                    0x88u
#define PYNQ_RL_PARSA_MBOX_STATE_4_RESET                     0x00000000u

/* MBOX_STATE_5 (write-only): Mailbox record word 7: state word 5 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_5_OFFSET                    0x8Cu
#define PYNQ_RL_PARSA_MBOX_STATE_5_RESET                     0x00000000u

/* MBOX_STATE_6 (write-only): Mailbox record word 8: state word 6 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_6_OFFSET                    0x90u
#define PYNQ_RL_PARSA_MBOX_STATE_6_RESET                     0x00000000u

/* MBOX_STATE_7 (write-only): Mailbox record word 9: state word 7 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_7_OFFSET                    0x94u
#define PYNQ_RL_PARSA_MBOX_STATE_7_RESET                     0x00000000u

/* MBOX_STATE_8 (write-only): Mailbox record word 10: state word 8 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_8_OFFSET                    0x98u
#define PYNQ_RL_PARSA_MBOX_STATE_8_RESET                     0x00000000u

/* MBOX_STATE_9 (write-only): Mailbox record word 11: state word 9 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_9_OFFSET                    0x9Cu
#define PYNQ_RL_PARSA_MBOX_STATE_9_RESET                     0x00000000u

/* MBOX_STATE_10 (write-only): Mailbox record word 12: state word 10 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_10_OFFSET                   0xA0u
#define PYNQ_RL_PARSA_MBOX_STATE_10_RESET                    0x00000000u

/* MBOX_STATE_11 (write-only): Mailbox record word 13: state word 11 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_11_OFFSET                   0xA4u
#define PYNQ_RL_PARSA_MBOX_STATE_11_RESET                    0x00000000u

/* MBOX_STATE_12 (write-only): Mailbox record word 14: state word 12 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_12_OFFSET                   0xA8u
#define PYNQ_RL_PARSA_MBOX_STATE_12_RESET                    0x00000000u

/* MBOX_STATE_13 (write-only): Mailbox record word 15: state word 13 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_13_OFFSET                   0xACu
#define PYNQ_RL_PARSA_MBOX_STATE_13_RESET                    0x00000000u

/* MBOX_STATE_14 (write-only): Mailbox record word 16: state word 14 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_14_OFFSET                   0xB0u
#define PYNQ_RL_PARSA_MBOX_STATE_14_RESET                    0x00000000u

/* MBOX_STATE_15 (write-only): Mailbox record word 17: state word 15 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_15_OFFSET                   0xB4u
#define PYNQ_RL_PARSA_MBOX_STATE_15_RESET                    0x00000000u

/* MBOX_STATE_16 (write-only): Mailbox record word 18: state word 16 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_16_OFFSET                   0xB8u
#define PYNQ_RL_PARSA_MBOX_STATE_16_RESET                    0x00000000u

/* MBOX_STATE_17 (write-only): Mailbox record word 19: state word 17 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_17_OFFSET                   0xBCu
#define PYNQ_RL_PARSA_MBOX_STATE_17_RESET                    0x00000000u

/* MBOX_STATE_18 (write-only): Mailbox record word 20: state word 18 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_18_OFFSET                   0xC0u
#define PYNQ_RL_PARSA_MBOX_STATE_18_RESET                    0x00000000u

/* MBOX_STATE_19 (write-only): Mailbox record word 21: state word 19 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_19_OFFSET                   0xC4u
#define PYNQ_RL_PARSA_MBOX_STATE_19_RESET                    0x00000000u

/* MBOX_STATE_20 (write-only): Mailbox record word 22: state word 20 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_20_OFFSET                   0xC8u
#define PYNQ_RL_PARSA_MBOX_STATE_20_RESET                    0x00000000u

/* MBOX_STATE_21 (write-only): Mailbox record word 23: state word 21 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_21_OFFSET                   0xCCu
#define PYNQ_RL_PARSA_MBOX_STATE_21_RESET                    0x00000000u

/* MBOX_STATE_22 (write-only): Mailbox record word 24: state word 22 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_22_OFFSET                   0xD0u
#define PYNQ_RL_PARSA_MBOX_STATE_22_RESET                    0x00000000u

/* MBOX_STATE_23 (write-only): Mailbox record word 25: state word 23 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_23_OFFSET                   0xD4u
#define PYNQ_RL_PARSA_MBOX_STATE_23_RESET                    0x00000000u

/* MBOX_STATE_24 (write-only): Mailbox record word 26: state word 24 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_24_OFFSET                   0xD8u
#define PYNQ_RL_PARSA_MBOX_STATE_24_RESET                    0x00000000u

/* MBOX_STATE_25 (write-only): Mailbox record word 27: state word 25 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_25_OFFSET                   0xDCu
#define PYNQ_RL_PARSA_MBOX_STATE_25_RESET                    0x00000000u

/* MBOX_STATE_26 (write-only): Mailbox record word 28: state word 26 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_26_OFFSET                   0xE0u
#define PYNQ_RL_PARSA_MBOX_STATE_26_RESET                    0x00000000u

/* MBOX_STATE_27 (write-only): Mailbox record word 29: state word 27 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_27_OFFSET                   0xE4u
#define PYNQ_RL_PARSA_MBOX_STATE_27_RESET                    0x00000000u

/* MBOX_STATE_28 (write-only): Mailbox record word 30: state word 28 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_28_OFFSET                   0xE8u
#define PYNQ_RL_PARSA_MBOX_STATE_28_RESET                    0x00000000u

/* MBOX_STATE_29 (write-only): Mailbox record word 31: state word 29 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_29_OFFSET                   0xECu
#define PYNQ_RL_PARSA_MBOX_STATE_29_RESET                    0x00000000u

/* MBOX_STATE_30 (write-only): Mailbox record word 32: state word 30 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_30_OFFSET                   0xF0u
#define PYNQ_RL_PARSA_MBOX_STATE_30_RESET                    0x00000000u

/* MBOX_STATE_31 (write-only): Mailbox record word 33: state word 31 (int32, STATE format) */
#define PYNQ_RL_PARSA_MBOX_STATE_31_OFFSET                   0xF4u
#define PYNQ_RL_PARSA_MBOX_STATE_31_RESET                    0x00000000u

#define PYNQ_RL_PARSA_MODE_ACT                               0u
#define PYNQ_RL_PARSA_MODE_CONFIG                            1u
#define PYNQ_RL_PARSA_MODE_LOAD_POLICY                       2u
#define PYNQ_RL_PARSA_MODE_DUMP_POLICY                       3u
#define PYNQ_RL_PARSA_MODE_CLEAR                             4u
#define PYNQ_RL_PARSA_MODE_MAILBOX                           5u

#endif /* PYNQ_RL_REGS_H */
