"""Where an asynchronous run stands between two versions, and how a resumed run stands there
again: the pieces of its checkpoint that are about the simulated clock.

An asynchronous run always has clients in flight, each waiting on one event: a transfer or a
computation (a SimPy timeout that records itself when it ends), or its turn at the server
processor. SimPy's processes cannot be saved, so the protocol keeps, for each client in
flight, the stage of its life it is in and what that stage carries (`AsyncProtocol.position`),
and every timeout it waits on keeps what its record will say (`.record`, set by
`Protocol._timed` and `WirelessLink._transfer`). A checkpoint saves those; a resumed run puts
the same timeouts back on SimPy's queue at the same instants to the bit (`at`), in the order
the originals were made (SimPy breaks ties of time by that order), queues the same requests at
the server in the same order, and starts each client's process at its stage.

A checkpoint is taken only when nothing is due at the current instant that anything waits on
(`quiet`): an event due now would be processed by the uninterrupted run in an order a resumed
run could not know. (After a version is made, nothing else is due then unless two events end
at the same instant to the bit; the run is then saved at the next version that can be.)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import simpy

from scala_netsim.core.events import EventKind
from scala_netsim.learn.contract import ServerStep
from scala_netsim.learn.messages import ActivationMessage, GradientMessage, ModelMessage
from scala_netsim.sim.timeouts import RecordedAt

#: what a stage may carry besides tensors, numbers, lists and tuples (saved as dicts)
CARRIED = {cls.__name__: cls for cls in (ModelMessage, ActivationMessage, GradientMessage,
                                         ServerStep)}


def quiet(env: simpy.Environment) -> bool:
    """Is nothing due at this instant but events nobody waits on (a finished process; the
    version the driver ran until, put back by SimPy when it stopped on it)?"""
    # SimPy has no public view of its queue; (time, priority, id, event) entries
    return all(time > env.now or not event.callbacks for time, _, _, event in env._queue)


def pack(value: Any) -> Any:
    """`value` in the types a checkpoint may hold (torch.load with weights_only)."""
    if isinstance(value, EventKind):
        return {"event_kind": value.value}
    if isinstance(value, tuple(CARRIED.values())) and dataclasses.is_dataclass(value) \
            and not isinstance(value, type):
        return {"carried": type(value).__name__,
                **{f.name: pack(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple | list):
        return type(value)(pack(v) for v in value)
    return value


def unpack(value: Any) -> Any:
    """What `pack` saved."""
    if isinstance(value, dict) and "event_kind" in value:
        return EventKind(value["event_kind"])
    if isinstance(value, dict) and "carried" in value:
        fields = {name: unpack(v) for name, v in value.items() if name != "carried"}
        return CARRIED[value["carried"]](**fields)
    if isinstance(value, tuple | list):
        return type(value)(unpack(v) for v in value)
    return value


def rebuild(protocol: Any, record: Any) -> simpy.Event:
    """A timeout ending when the one `record` (packed) describes did, recorded as it would
    have been: a computation by the protocol, a transfer by its link."""
    record = unpack(record)
    what, start, duration_s = record[:3]
    timeout = RecordedAt(protocol.env, start + duration_s, record)
    timeout.callbacks.append(protocol._computed if what == "compute"
                             else protocol.link._transferred)
    return timeout
