"""Which clock a rank times with: the backend registry's ``on_host``, not a name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.contract import registry
from nsight_lab.contract.registry import BackendEntry
from nsight_lab.distributed.clock import HostClock, open_clock
from nsight_lab.options import parse_options

if TYPE_CHECKING:
    import pytest


def test_a_backend_that_times_the_host_gets_the_host_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    options = parse_options("--backend cpu --ranks 2")
    clock = open_clock("cpu", options)
    assert isinstance(clock, HostClock)
    clock.close()
    host_timer = BackendEntry(
        "hosttimer", "tiny:HostTimer", "another host timer", on_host=True, ranks=True
    )
    monkeypatch.setattr(
        registry, "BUILTIN_BACKENDS", (*registry.BUILTIN_BACKENDS, host_timer)
    )
    clock = open_clock("hosttimer", options)
    assert isinstance(clock, HostClock)
    clock.close()
