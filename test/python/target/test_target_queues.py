"""The queue model of docs/isa.md section 3: two queues, tokens, SYNC, hazards, and the
dependency insertion that makes a program hazard-free with no more waiting than it needs."""

import numpy as np
import pytest

from xnpu.backend.isa_dependencies import dependency_flags, insert_dependencies
from xnpu.backend.simulator import Machine
from xnpu.core.errors import XnpuError
from xnpu.target.cost import instruction_cycles, program_cycles
from xnpu.target.description import load_target
from xnpu.target.encoding import make_instruction
from xnpu.target.footprints import footprint
from xnpu.target.queues import TOKEN_CAPACITY, check_hazards, queue_of, schedule

DEFAULT = load_target("xnpu_default")
A = DEFAULT.memory.channel_alignment


def load(sram: int, ddr: int = 0, rows: int = 4, **flags):
    """A 4x8x16 map (512 bytes) from DDR into SRAM."""
    return make_instruction("LOAD", layout=1, sram_addr=sram, ddr_addr=ddr, d0=rows, d1=8, d2=16, **flags)


def store(sram: int, ddr: int, **flags):
    return make_instruction("STORE", layout=1, sram_addr=sram, ddr_addr=ddr, d0=4, d1=8, d2=16, **flags)


def clamp(source: int, target: int, **flags):
    return make_instruction("CLAMP", in_addr=source, out_addr=target, h=4, w=8, c=16, min=-5, max=5, **flags)


def timing_of(program):
    return schedule(program, [instruction_cycles(i, DEFAULT) for i in program])


def test_independent_instructions_of_the_two_queues_overlap():
    program = [load(0), clamp(4096, 8192)]
    timing = timing_of(program)
    assert timing.start == (0, 0)
    assert timing.cycles == max(instruction_cycles(i, DEFAULT) for i in program)
    check_hazards(program, timing, A)  # nothing in common: no hazard


def test_a_queue_runs_in_order_and_a_wait_takes_the_token_of_a_signal():
    first, second = load(0, signal=1), load(1024)
    use = clamp(0, 4096, wait=1)
    timing = timing_of([first, second, use])
    assert timing.start[1] == timing.end[0]  # one DMA at a time
    assert timing.start[2] == timing.end[0]  # CLAMP waits for the first LOAD's token only
    assert timing.cycles == max(timing.end[1], timing.end[2])


def test_the_kth_wait_takes_the_kth_signal():
    program = [load(0, signal=1), load(1024, signal=1), clamp(0, 4096, wait=1), clamp(1024, 8192, wait=1)]
    timing = timing_of(program)
    assert timing.start[2] == timing.end[0] and timing.start[3] == max(timing.end[1], timing.end[2])


def test_sync_is_a_barrier_of_both_queues():
    program = [load(0), make_instruction("SYNC"), clamp(4096, 8192)]
    timing = timing_of(program)
    assert timing.start[1] == timing.end[0] and timing.start[2] == timing.end[1]


def test_a_program_with_a_hazard_is_refused_naming_both_instructions():
    reads_what_is_loaded = [load(0), clamp(0, 4096)]  # RAW with no token
    with pytest.raises(XnpuError, match=r"^instruction 1 \(CLAMP\): hazard: it reads SRAM \[0, 512\) which "
                                        r"instruction 0 \(LOAD\), earlier in the program, writes; it starts at cycle 0"):
        check_hazards(reads_what_is_loaded, timing_of(reads_what_is_loaded), A)
    overwrites_what_is_read = [clamp(0, 4096), load(0)]  # WAR: the LOAD must wait for the CLAMP
    with pytest.raises(XnpuError, match=r"^instruction 1 \(LOAD\): hazard: it writes SRAM \[0, 512\) which instruction 0 \(CLAMP\)"):
        check_hazards(overwrites_what_is_read, timing_of(overwrites_what_is_read), A)
    stores_before_computed = [clamp(0, 4096), store(4096, 65536)]
    with pytest.raises(XnpuError, match=r"^instruction 1 \(STORE\): hazard: it reads SRAM"):
        check_hazards(stores_before_computed, timing_of(stores_before_computed), A)


def test_the_simulator_refuses_a_hazardous_program_before_running_it():
    machine = Machine(DEFAULT, ddr_size=1 << 20)
    machine.sram[4096:4608] = 7
    with pytest.raises(XnpuError, match=r"^instruction 1 \(CLAMP\): hazard: "):
        machine.execute([load(0), clamp(0, 4096)])
    assert (machine.sram[4096:4608] == 7).all()  # nothing ran
    stats = machine.execute(insert_dependencies([load(0), clamp(0, 4096)], A))
    assert stats.cycles == sum(instruction_cycles(i, DEFAULT) for i in [load(0), clamp(0, 4096)])


def test_a_wait_no_signal_satisfies_is_a_deadlock():
    with pytest.raises(XnpuError, match=r"^instruction 0 \(CLAMP\): deadlock: it waits for a token from the DMA queue"):
        timing_of([clamp(0, 4096, wait=1), load(8192)])
    with pytest.raises(XnpuError, match="deadlock"):  # a token signalled after a SYNC comes too late
        timing_of([clamp(0, 4096, wait=1), make_instruction("SYNC"), load(8192, signal=1)])


def test_a_counter_holds_a_bounded_number_of_tokens():
    program = [load(16 * n, signal=1, rows=1) for n in range(TOKEN_CAPACITY + 1)]
    with pytest.raises(XnpuError, match=rf"instruction {TOKEN_CAPACITY} \(LOAD\): its signal would be token {TOKEN_CAPACITY + 1}"):
        timing_of(program)


def test_dependencies_order_exactly_the_conflicting_pairs():
    # double buffering: tile k is loaded into buffer k % 2 while tile k - 1 is computed
    buffers, outputs = (0, 1024), (4096, 8192)
    program = []
    for k in range(4):
        program.append(load(buffers[k % 2], ddr=512 * k))
        if k:
            program.append(clamp(buffers[(k - 1) % 2], outputs[(k - 1) % 2]))
            program.append(store(outputs[(k - 1) % 2], 65536 + 512 * k))
    program.append(clamp(buffers[1], outputs[1]))
    program.append(store(outputs[1], 65536 + 4096))
    flags = dependency_flags(program, A)
    ordered = insert_dependencies(program, A)
    timing = timing_of(ordered)
    check_hazards(ordered, timing, A)
    serial = sum(instruction_cycles(i, DEFAULT) for i in program)
    assert timing.cycles < serial  # loads overlap the CLAMPs of the other buffer
    assert flags[0] == (0, 1)  # LOAD 0 signals the CLAMP of tile 0
    assert flags[2] == (1, 1)  # CLAMP 0 waits for LOAD 0 and signals STORE 0
    # no more waiting than needed: every instruction starts as soon as its queue is free and
    # every earlier instruction of the other queue it conflicts with has completed
    assert list(timing.start) == _as_soon_as_possible(program)


def _as_soon_as_possible(program) -> list[int]:
    prints = [footprint(i, A) for i in program]

    def conflict(a, b) -> bool:
        def meet(xs, ys):
            return any(x[0] < y[1] and y[0] < x[1] for x in xs for y in ys)

        return any(meet(getattr(a, f"{m}_writes"), getattr(b, f"{m}_reads") + getattr(b, f"{m}_writes"))
                   or meet(getattr(a, f"{m}_reads"), getattr(b, f"{m}_writes")) for m in ("sram", "ddr"))

    start, end, free = [], [], {}
    for n, instruction in enumerate(program):
        queue = queue_of(instruction)
        begin = max([free.get(queue, 0)] + [end[p] for p in range(n)
                                             if queue_of(program[p]) != queue and conflict(prints[p], prints[n])])
        start.append(begin)
        end.append(begin + instruction_cycles(instruction, DEFAULT))
        free[queue] = end[-1]
    return start


def test_program_cycles_is_the_makespan():
    program = insert_dependencies([load(0), clamp(0, 4096), load(1024)], A)
    timing = timing_of(program)
    assert program_cycles(program, DEFAULT) == timing.cycles == max(timing.end)
    assert timing.cycles < sum(instruction_cycles(i, DEFAULT) for i in program)  # the second LOAD overlaps


def test_the_machine_computes_what_program_order_says():
    rng = np.random.default_rng(3)
    machine = Machine(DEFAULT, ddr_size=1 << 20)
    tiles = rng.integers(-20, 20, (4, 512)).astype(np.int8)
    for k in range(4):
        machine.write_ddr(512 * k, tiles[k].tobytes())
    buffers, outputs = (0, 1024), (4096, 8192)
    program = []
    for k in range(4):
        program += [load(buffers[k % 2], ddr=512 * k), clamp(buffers[k % 2], outputs[k % 2]),
                    store(outputs[k % 2], 65536 + 512 * k)]
    machine.execute(insert_dependencies(program, A))
    got = np.frombuffer(machine.read_ddr(65536, 2048), np.int8).reshape(4, 512)
    assert np.array_equal(got, np.clip(tiles, -5, 5))
