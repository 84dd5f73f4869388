"""Catalogue of device types.

A device type is either ``cpu`` (a CPU slot on a node without GPUs) or a GPU
generation. Each entry carries its memory, peak FP32 TFLOPS, PCIe generation
and a simple power model; ``relative_speed`` is the documented estimate used to
extend measured throughputs (Gavel measured K80, P100 and V100) to other GPU
types, following HadarE's initial estimate: speed ~ TFLOPS x sqrt(VRAM) x PCIe
factor, normalised so that V100 = 1.0.

Numbers are vendor datasheet values (FP32 peak, board power).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DeviceType", "CATALOGUE", "device_names", "get_device", "device_key"]


@dataclass(frozen=True)
class DeviceType:
    """One device type.

    Attributes:
        name: Canonical name (``"cpu"``, ``"V100"``, ...).
        is_gpu: False only for ``cpu``.
        mem_gb: GPU memory in GB (0 for cpu).
        tflops: Peak FP32 TFLOPS of one device (for cpu: one 20-core slot, rough).
        pcie_gen: PCIe generation of the board (3, 4 or 5).
        idle_w: Idle power of one device in watts (attributed to its node while on).
        active_w: Extra power in watts while the device runs a worker.
    """

    name: str
    is_gpu: bool
    mem_gb: float
    tflops: float
    pcie_gen: int
    idle_w: float
    active_w: float

    @property
    def raw_speed(self) -> float:
        """HadarE-style raw speed: TFLOPS x sqrt(VRAM) x PCIe factor."""
        pcie = {3: 1.0, 4: 1.1, 5: 1.2}.get(self.pcie_gen, 1.0)
        return self.tflops * math.sqrt(max(self.mem_gb, 1.0)) * pcie

    @property
    def relative_speed(self) -> float:
        """Estimated speed relative to a V100 (V100 = 1.0)."""
        return self.raw_speed / CATALOGUE["V100"].raw_speed

    @property
    def key(self) -> str:
        """Lower-case key used in job-table columns (``tput_<key>``)."""
        return self.name.lower()


_ENTRIES = [
    DeviceType("cpu", False, 0.0, 1.0, 3, 0.0, 5.0),  # power per core, see specs.PowerModel
    DeviceType("K80", True, 12.0, 4.1, 3, 25.0, 125.0),
    DeviceType("P100", True, 16.0, 9.3, 3, 30.0, 220.0),
    DeviceType("V100", True, 16.0, 14.0, 3, 35.0, 265.0),
    DeviceType("T4", True, 16.0, 8.1, 3, 10.0, 60.0),
    DeviceType("A100", True, 40.0, 19.5, 4, 50.0, 350.0),
    DeviceType("H100", True, 80.0, 51.0, 5, 70.0, 630.0),
    DeviceType("RTX3090", True, 24.0, 35.6, 4, 30.0, 320.0),
    DeviceType("TitanRTX", True, 24.0, 16.3, 3, 25.0, 255.0),
    DeviceType("T400", True, 2.0, 1.09, 3, 5.0, 25.0),
    DeviceType("A2000", True, 6.0, 8.0, 4, 8.0, 62.0),
]

CATALOGUE: dict[str, DeviceType] = {d.name: d for d in _ENTRIES}
_BY_KEY: dict[str, DeviceType] = {d.key: d for d in _ENTRIES}


def device_names() -> list[str]:
    """Names of every device type in the catalogue."""
    return list(CATALOGUE)


class UnknownDeviceError(KeyError, ValueError):
    """A device type name that is not in the catalogue (a ``KeyError`` and a ``ValueError``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def get_device(name: str) -> DeviceType:
    """Look a device type up by name, case-insensitively.

    Raises:
        UnknownDeviceError: (a ``KeyError`` and a ``ValueError``) naming the unknown type
            and listing the known ones.
    """
    dev = _BY_KEY.get(str(name).lower())
    if dev is None:
        raise UnknownDeviceError(f"unknown device type {name!r}; known: {', '.join(CATALOGUE)}")
    return dev


def device_key(name: str | None) -> str:
    """Key of a device type (``None`` means a CPU node -> ``"cpu"``)."""
    return "cpu" if name is None else get_device(name).key
