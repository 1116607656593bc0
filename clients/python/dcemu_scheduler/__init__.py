"""Write a scheduler for dcemu in Python: ``on_request(request) -> decision``.

dcemu starts your program (``[scheduler.external]`` in a scenario) and asks
it, at every placement decision, where a task should run; this module
speaks protocol v1 (docs/external-scheduler.md) on stdin/stdout for you::

    from dcemu_scheduler import Place, Request, Wait, run

    def least_loaded(req: Request) -> Place | Wait:
        fits = [s for s in req.servers if s.fits(req.task)]
        if not fits:
            return Wait()
        return Place(min(fits, key=lambda s: (s.load(), s.index)).index)

    run(least_loaded)

Virtual time stands still while your function runs. Use ``request.rng`` for
randomness (the scheduler's own stream, so runs stay deterministic) and
print diagnostics to stderr, never stdout (stdout carries the protocol).
Standard library only.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, TextIO, Union

from .chacha import ChaCha8

__all__ = [
    "PROTOCOL",
    "ChaCha8",
    "Decision",
    "Place",
    "Profile",
    "Report",
    "Request",
    "Scheduler",
    "Server",
    "ServerState",
    "Task",
    "Wait",
    "run",
    "serve",
]

PROTOCOL = 1
"""The protocol version this module speaks."""


@dataclass(frozen=True)
class Server:
    """A server's configuration, from ``hello``."""

    index: int
    slots: int
    cores: int
    memory_mb: int
    config_class: int
    """Index of its configuration (server type), as in ``Profile.speed``."""
    core_speed: float
    idle_w: float
    peak_w: float


@dataclass(frozen=True)
class Report:
    """A server's latest report to the scheduler."""

    free_slots: int
    running: int
    busy_cores: int
    """Cores in use by tasks and the primary tenant, of ``cores``."""
    cores: int
    primary_cores: int
    reserve_cores: int
    memory_used_mb: int
    memory_mb: int


@dataclass(frozen=True)
class Task:
    """What the scheduler knows of the task to place."""

    id: int
    priority: int
    cores: int
    """Slots it takes (its threads)."""
    memory_mb: int
    service_ns: int
    """The work it declares: its time alone on one core of speed 1."""
    flow_bps: int
    app: Optional[int]
    submitted_ns: int
    evictions: int


@dataclass(frozen=True)
class Profile:
    """The task's classification (Paragon §2), when classification ran."""

    speed: list[float]
    tolerated: list[float]
    caused: list[float]


@dataclass(frozen=True)
class ServerState:
    """A server the task may use now, as the scheduler sees it."""

    server: Server
    free_slots: int
    free_memory_mb: int
    primary_room: Optional[int]
    """Slots its primary tenant leaves, when dcemu bounds room by it."""
    report: Optional[Report]

    @property
    def index(self) -> int:
        return self.server.index

    def fits(self, task: Task, memory: bool = True) -> bool:
        """Whether ``task`` fits its free slots and its primary tenant's
        room (and its free memory, with ``memory``): dcemu's own rule. A
        placement must fit the slots; memory may be over-committed."""
        taken = self.server.slots - self.free_slots
        return (
            self.free_slots >= task.cores
            and (self.primary_room is None or taken + task.cores <= self.primary_room)
            and (not memory or self.free_memory_mb >= task.memory_mb)
        )

    def load(self) -> float:
        """Busy cores over cores in its latest report, else the share of
        its slots taken (dcemu's ``least-loaded`` load)."""
        r = self.report
        if r is not None:
            return r.busy_cores / max(r.cores, 1)
        return (self.server.slots - self.free_slots) / max(self.server.slots, 1)


@dataclass
class Request:
    """One placement decision: where should ``task`` run now?"""

    id: int
    time_ns: int
    task: Task
    profile: Optional[Profile]
    servers: list[ServerState]
    """Servers the task may use that have a free slot, in dcemu's order."""
    rng: ChaCha8
    """The scheduler's random stream at this request; draws move it."""
    cluster: list[Server]
    """Every server, by index."""


@dataclass(frozen=True)
class Place:
    """Start the task on the server of this index."""

    server: int


@dataclass(frozen=True)
class Wait:
    """Leave the task queued until something changes."""


Decision = Union[Place, Wait]


class Scheduler(Protocol):
    """Anything with ``on_request``; ``on_hello`` is optional."""

    def on_request(self, request: Request) -> Decision: ...


Handler = Union[Scheduler, Callable[[Request], Decision]]


def _report(v: Optional[dict]) -> Optional[Report]:
    return None if v is None else Report(**v)


def serve(handler: Handler, stdin: TextIO, stdout: TextIO) -> int:
    """Answers dcemu on ``stdin``/``stdout`` until it closes ``stdin``;
    returns the number of requests answered."""
    decide: Callable[[Request], Decision] = (
        handler if callable(handler) and not hasattr(handler, "on_request") else handler.on_request  # type: ignore[union-attr]
    )
    first = stdin.readline()
    if not first:
        return 0
    hello = json.loads(first)
    if hello.get("type") != "hello":
        raise ValueError(f"expected hello from dcemu, got {first!r}")
    if hello.get("protocol") != PROTOCOL:
        raise ValueError(f"dcemu speaks protocol {hello.get('protocol')}, this module {PROTOCOL}")
    cluster = [
        Server(
            index=s["index"],
            slots=s["slots"],
            cores=s["cores"],
            memory_mb=s["memory_mb"],
            config_class=s["class"],
            core_speed=s["core_speed"],
            idle_w=s["idle_w"],
            peak_w=s["peak_w"],
        )
        for s in hello["servers"]
    ]
    key = bytes.fromhex(hello["rng"]["key"])
    stream = hello["rng"]["stream"]
    on_hello = getattr(handler, "on_hello", None)
    if on_hello is not None:
        on_hello(cluster)
    stdout.write(json.dumps({"type": "hello", "protocol": PROTOCOL}) + "\n")
    stdout.flush()
    answered = 0
    # one stream object for the run: its block cache serves the next requests
    rng = ChaCha8(key, stream)
    for line in stdin:
        msg = json.loads(line)
        if msg.get("type") != "place":
            raise ValueError(f"unknown request type {msg.get('type')!r}")
        rng.word_pos = msg["rng_word_pos"]
        p = msg.get("profile")
        req = Request(
            id=msg["id"],
            time_ns=msg["time_ns"],
            task=Task(**msg["task"]),
            profile=None if p is None else Profile(p["speed"], p["tolerated"], p["caused"]),
            servers=[
                ServerState(
                    server=cluster[s["index"]],
                    free_slots=s["free_slots"],
                    free_memory_mb=s["free_memory_mb"],
                    primary_room=s.get("primary_room"),
                    report=_report(s.get("report")),
                )
                for s in msg["servers"]
            ],
            rng=rng,
            cluster=cluster,
        )
        decision = decide(req)
        out: dict = {"id": req.id, "task": req.task.id}
        if isinstance(decision, Place):
            out["decision"] = "place"
            out["server"] = decision.server
        elif isinstance(decision, Wait):
            out["decision"] = "wait"
        else:
            raise TypeError(f"on_request returned {decision!r}, not Place or Wait")
        if rng.word_pos != msg["rng_word_pos"]:
            out["rng_word_pos"] = rng.word_pos
        stdout.write(json.dumps(out) + "\n")
        stdout.flush()
        answered += 1
    return answered


def run(handler: Handler) -> None:
    """Serves dcemu on this process's stdin and stdout."""
    serve(handler, sys.stdin, sys.stdout)
