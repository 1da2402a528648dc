"""Host fallback: what no pattern selected for the target runs on the host, in `npu.host` segments.

After unit selection, an op that is neither an npu op nor part of the program's boundary
(program inputs' quantize, outputs' dequantize, constants) has no accelerator operation on
this target: a float op the quantizer left (a softmax), or a fixed op no unit takes (a 9x9
kernel on a 7x7 unit). Like Vela's CPU fallback or TVM's BYOC partitioning, each such op is
placed on the host, with its reason (`why_not`, the legality module's words) as
`npu.host_reason`. Connected host ops are merged into one segment (one hand-off each) as
long as no path leaves the segment and comes back into it (that would need the accelerator
in the middle of the segment); the `fixed.dequantize` / `fixed.quantize` ops converting a
float op's int8 operands and result go with it, so segments hand off int8 tensors (and float
program outputs), and the constants a segment reads are copied into it. The module is then put back in an order where every value is defined before
its use (a segment stands where its last op stood, its users after it).
"""

from __future__ import annotations

import heapq

from xdsl.dialects import func
from xdsl.ir import Block, Operation, Region, SSAValue

from xnpu.dialects import fixed, nn, npu

CONSTANTS = (fixed.ConstantOp, nn.ConstantOp)


def split_output_dequantizes(function: func.FuncOp) -> None:
    """A dequantize read both by the return and inside the graph becomes two: the return's stays a
    program output (int8 from the accelerator), the other converts for a host op."""
    for op in list(function.body.block.ops):
        if not isinstance(op, fixed.DequantizeOp):
            continue
        uses = list(op.result.uses)
        if not any(isinstance(u.operation, func.ReturnOp) for u in uses) or all(
                isinstance(u.operation, func.ReturnOp) for u in uses):
            continue
        inner = op.clone()
        function.body.block.insert_op_after(inner, op)
        op.result.replace_uses_with_if(inner.result, lambda use: not isinstance(use.operation, func.ReturnOp))


def _ancestors(ops: list[Operation]) -> dict[Operation, frozenset[Operation]]:
    """Every top-level op each op depends on, transitively (the block is in program order)."""
    ancestors: dict[Operation, frozenset[Operation]] = {}
    for op in ops:
        found: set[Operation] = set()
        for value in op.operands:
            owner = value.owner
            if isinstance(owner, Operation) and owner in ancestors:
                found.add(owner)
                found |= ancestors[owner]
        ancestors[op] = frozenset(found)
    return ancestors


def _acyclic(members: set[Operation], ancestors: dict[Operation, frozenset[Operation]]) -> bool:
    """No value from outside `members` that one of them reads depends on one of them."""
    for member in members:
        for value in member.operands:
            owner = value.owner
            if isinstance(owner, Operation) and owner not in members and ancestors.get(owner, frozenset()) & members:
                return False
    return True


def segments(host_ops: list[Operation], ancestors: dict[Operation, frozenset[Operation]]) -> list[list[Operation]]:
    """Maximal connected groups of host ops, in program order, that the accelerator need not enter.

    Every op starts alone; groups joined by a def-use edge merge while the merged group stays
    acyclic, until none can. A dequantize joins the group of the float op it feeds first, so a
    float value never passes between two segments (a hand-off is int8, or a float program output).
    """
    order = {op: index for index, op in enumerate(host_ops)}
    group_of = dict(order)
    groups = {index: {op} for op, index in order.items()}
    edges = sorted(((value.owner, op) for op in host_ops for value in op.operands if value.owner in order),
                   key=lambda edge: not isinstance(edge[0], fixed.DequantizeOp))
    merged = True
    while merged:
        merged = False
        for producer, user in edges:
            first, second = group_of[producer], group_of[user]
            if first == second or not _acyclic(groups[first] | groups[second], ancestors):
                continue
            groups[first] |= groups.pop(second)
            for op in groups[first]:
                group_of[op] = first
            merged = True
    ordered = [sorted(group, key=order.__getitem__) for group in groups.values()]
    return sorted(ordered, key=lambda group: order[group[0]])


def outline(members: list[Operation], block: Block) -> npu.HostOp:
    """Move `members` (in program order) into one npu.host, inserted where the last one stood."""
    inside = set(members)
    inputs: list[SSAValue] = []
    constants: list[Operation] = []
    for member in members:
        for value in member.operands:
            owner = value.owner
            if isinstance(owner, CONSTANTS) and owner not in inside:
                if owner not in constants:
                    constants.append(owner)
            elif owner not in inside and value not in inputs:
                inputs.append(value)
    outputs = [result for member in members for result in member.results
               if any(use.operation not in inside for use in result.uses)]
    body = Block(arg_types=[value.type for value in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
    for op in (*constants, *members):
        copy = op.clone(value_mapper=mapping)
        body.add_op(copy)
        mapping.update(zip(op.results, copy.results))
    body.add_op(npu.HostYieldOp([mapping[value] for value in outputs]))
    host = npu.HostOp(inputs, [value.type for value in outputs], Region(body))
    block.insert_op_after(host, members[-1])
    for value, result in zip(outputs, host.outputs):
        value.replace_uses_with_if(result, lambda use: use.operation not in inside)
    for member in reversed(members):
        member.detach()
        member.erase()
    for constant in constants:
        if not constant.results[0].uses:
            constant.detach()
            constant.erase()
    return host


def sort_topologically(block: Block) -> None:
    """Reorder `block` so that every op follows its operands' producers, otherwise keeping program order."""
    ops = list(block.ops)
    index = {op: i for i, op in enumerate(ops)}
    waiting = {op: {v.owner for v in op.operands if v.owner in index} for op in ops}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op, producers in waiting.items():
        for producer in producers:
            users[producer].append(op)
    ready = [index[op] for op, producers in waiting.items() if not producers]
    heapq.heapify(ready)
    order = []
    while ready:
        op = ops[heapq.heappop(ready)]
        order.append(op)
        for user in users[op]:
            waiting[user].discard(op)
            if not waiting[user]:
                heapq.heappush(ready, index[user])
    assert len(order) == len(ops), "host segments made a cycle"
    if order != ops:
        for op in ops:
            op.detach()
        block.add_ops(order)


def place_on_host(function: func.FuncOp, host_ops: list[Operation]) -> list[npu.HostOp]:
    """Outline `host_ops` (top-level ops of `function`, in program order) into npu.host segments."""
    block = function.body.block
    ops = list(block.ops)
    hosts = [outline(group, block) for group in segments(host_ops, _ancestors(ops))]
    sort_topologically(block)
    return hosts
