"""The collectives' modelled bytes against hand computations."""

from __future__ import annotations

import pytest

from nsight_lab.distributed.traffic import call_bytes, modelled_bytes

MiB = 1024 * 1024


def test_all_reduce_is_twice_n_minus_one_over_n_of_the_tensor():
    s = 256 * MiB  # the benchmark's all-reduce
    assert modelled_bytes("allreduce", s, 2) == s  # 2 * 1 / 2
    assert modelled_bytes("allreduce", s, 4) == 1.5 * s  # 2 * 3 / 4
    assert modelled_bytes("allreduce", s, 8) == 1.75 * s  # 2 * 7 / 8
    assert modelled_bytes("allreduce", s, 1) == 0.0  # one rank sends nothing


def test_gather_scatter_broadcast_factors():
    s = 96.0
    assert modelled_bytes("allgather", s, 4) == 72.0  # 3 / 4 of the output
    assert modelled_bytes("reduce_scatter", s, 3) == 64.0  # 2 / 3 of the input
    assert modelled_bytes("alltoall", s, 2) == 48.0
    assert modelled_bytes("broadcast", s, 8) == 96.0
    with pytest.raises(KeyError):
        modelled_bytes("send", s, 2)


def test_call_bytes_reads_the_payload_where_each_op_keeps_it():
    torch = pytest.importorskip("torch", reason="the c10d arguments are tensors")
    x = torch.ones(1000)  # 4,000 bytes
    # all-reduce: (tensors, group, op, ...), the payload is the tensor.
    assert call_bytes("allreduce_", ([x],), 4) == 2 * 3 / 4 * 4000
    # all-gather: (outputs, inputs, group): S is the gathered output, 4 x 4,000.
    outs = [[torch.ones(1000) for _ in range(4)]]
    assert call_bytes("allgather_", (outs, [x]), 4) == 3 / 4 * 16000
    # reduce-scatter into a tensor: (output, input): S is the input.
    assert call_bytes("_reduce_scatter_base_", (torch.ones(250), x), 4) == 3000
    assert call_bytes("send", ([x],), 4) is None  # point-to-point: not modelled
