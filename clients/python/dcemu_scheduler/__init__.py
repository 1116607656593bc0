"""Write a scheduler for dcemu in Python: ``on_request(request) -> decision``.

dcemu starts your program (``[scheduler.external]`` in a scenario) and asks
it, at every placement decision, where a task should run, with
``stages = ["placement", "preemption"]`` which running task a task that
found no free slot evicts (``on_preempt``; with ``stages = ["preemption"]``
only that, beside a built-in placement: ``run(on_preempt=...)``), and with ``stages =
["placement", "power"]`` which servers to put to sleep or wake (``Sleep``,
``Wake`` in a decision's ``power``), with ``"migration"`` which running
tasks move (``Migrate`` in a decision's ``migrate``), and with
``"network"`` which path each task's flow takes (``Place(i, path=k)``
among ``ServerState.paths``), also when servers
go idle (``on_idle``, answered with ``Orders``); this module speaks
protocols v1, v2 and v3 (docs/external-scheduler.md) on stdin/stdout for
you::

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
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, TextIO, Union

from .chacha import ChaCha8

__all__ = [
    "PROTOCOL",
    "PROTOCOLS",
    "ChaCha8",
    "Decision",
    "Evict",
    "IdleHandler",
    "IdleRequest",
    "Migrate",
    "Orders",
    "Path",
    "Place",
    "Placed",
    "PreemptDecision",
    "PreemptRequest",
    "PowerOrder",
    "Profile",
    "Report",
    "Request",
    "RunningTask",
    "Scheduler",
    "Server",
    "ServerState",
    "Sleep",
    "Task",
    "Wait",
    "Wake",
    "no_orders",
    "run",
    "serve",
]

PROTOCOL = 3
"""The highest protocol version this module speaks."""

PROTOCOLS = (1, 2, 3)
"""The versions it speaks: it answers dcemu's ``hello`` with the one offered
(v1 for the placement stage alone, v2 with the preemption stage, v3 with
the servers' power or migrations)."""


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
class RunningTask:
    """A task running on a server (v2's ``preempt`` requests)."""

    id: int
    priority: int
    started_ns: int
    """When its current execution started (an evicted task restarts)."""
    cores: int
    memory_mb: int
    admissible: bool
    """Whether the preemption stage lets the task asking evict it."""


@dataclass(frozen=True)
class Path:
    """v3 with the network stage: a path a task's flow could take from a
    core switch down to a server, with the bandwidth free on its busiest
    link after the scheduler's reservations (thesis §4.2.2)."""

    switches: list[str]
    free_bps: int


@dataclass(frozen=True)
class ServerState:
    """A server as the scheduler sees it: in a ``place`` request one the
    task may use now; in a ``preempt`` request one with tasks running."""

    server: Server
    free_slots: int
    free_memory_mb: int
    primary_room: Optional[int]
    """Slots its primary tenant leaves, when dcemu bounds room by it."""
    report: Optional[Report]
    running: list[RunningTask] = field(default_factory=list)
    """In a ``preempt`` request: its running tasks, least recently started
    first."""
    power: Optional[str] = None
    """v3: its power state as the scheduler knows it: ``"awake"``,
    ``"asleep"`` (ordered to sleep; a dispatch or ``Wake`` wakes it, which
    takes ``power.server_wake`` at peak power) or ``"waking"``."""
    primary: Optional[str] = None
    """v3: the name of the primary tenant that owns it, if one does (public
    configuration). Such a server never sleeps: ``Sleep`` on it is an
    error."""
    paths: Optional[list[Path]] = None
    """v3 with the network stage, for a task with a flow: every path its
    flow could take here, in dcemu's order; ``Place(i, path=k)`` names
    one by its index (it must have ``task.flow_bps`` free)."""

    def idle(self) -> bool:
        """Whether the scheduler has nothing running or on its way there
        (every slot free): the only servers that may be put to sleep."""
        return self.free_slots == self.server.slots

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


@dataclass(frozen=True)
class Placed:
    """v3 with the migration stage: a task the scheduler placed and has not
    heard the end of."""

    id: int
    server: int
    since_ns: int
    """When it was dispatched there (or its migration there began)."""
    cores: int
    memory_mb: int
    migrating: bool
    """Whether a migration of it is under way (it may not move again)."""


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
    running: list[Placed] = field(default_factory=list)
    """v3 with the migration stage: every placed task, by id."""


@dataclass
class PreemptRequest:
    """``task`` found no free slot it may take and the preemption stage
    admits victims for it: which one goes (``Evict``), if any (``Wait``)?"""

    id: int
    time_ns: int
    task: Task
    profile: Optional[Profile]
    servers: list[ServerState]
    """Every server with tasks running, by index, each with ``running``."""
    rng: ChaCha8
    cluster: list[Server]

    def admissible(self) -> list[tuple[ServerState, RunningTask]]:
        """The victims the preemption stage admits, by server then start."""
        return [(s, r) for s in self.servers for r in s.running if r.admissible]


@dataclass
class IdleRequest:
    """v3 with the power or migration stage: servers ``idle`` just went idle
    in the scheduler's view (their last task ended, was killed or moved
    away) and no ``place`` request showed them so since. Nothing to place:
    answer with ``Orders`` (to sleep them, say) or ``Orders()`` for none."""

    id: int
    time_ns: int
    idle: list[int]
    """The servers that just went idle, by index, ascending."""
    servers: list[ServerState]
    """Every server with a free slot, in dcemu's order."""
    queued: int
    """Tasks waiting in the scheduler's queue."""
    rng: ChaCha8
    cluster: list[Server]
    running: list[Placed] = field(default_factory=list)
    """With the migration stage: every placed task, by id."""


@dataclass(frozen=True)
class Sleep:
    """v3: put the server of this index to sleep. It must be ``"awake"``
    with nothing running or on its way there (``ServerState.idle``), not
    owned by a primary tenant (``ServerState.primary``), and not the server
    the same decision places on."""

    server: int


@dataclass(frozen=True)
class Wake:
    """v3: wake the ``"asleep"`` server of this index (a dispatch to it
    would wake it too, but only once the task reaches it)."""

    server: int


PowerOrder = Union[Sleep, Wake]


@dataclass(frozen=True)
class Migrate:
    """v3: move running ``task`` (a ``Placed`` not ``migrating``) to the
    server of index ``server`` with its progress; that server must have the
    task's slots free (counting the decision's own task and earlier moves).
    The task stops, takes ``scheduler.migration_time``, then resumes there."""

    task: int
    server: int


@dataclass(frozen=True)
class Place:
    """Start the task on the server of this index; ``power``: v3's orders
    to sleep or wake servers, sent before the task, in this order."""

    server: int
    power: tuple[PowerOrder, ...] = ()
    migrate: tuple[Migrate, ...] = ()
    """v3: running tasks to move, after the power orders."""
    path: Optional[int] = None
    """v3 with the network stage: the index, in the server's ``paths``, of
    the path the task's flow reserves (``None``: dcemu chooses)."""


@dataclass(frozen=True)
class Wait:
    """Leave the task queued until something changes; ``power`` and
    ``migrate`` as in ``Place``."""

    power: tuple[PowerOrder, ...] = ()
    migrate: tuple[Migrate, ...] = ()


@dataclass(frozen=True)
class Orders:
    """The answer to an ``IdleRequest``: power orders and migrations only,
    checked as a ``Wait``'s are (``Orders()``: none)."""

    power: tuple[PowerOrder, ...] = ()
    migrate: tuple[Migrate, ...] = ()


@dataclass(frozen=True)
class Evict:
    """Evict running ``task`` from ``server`` and start the task asking in
    its slot. ``reason`` goes into dcemu's error messages, not the results."""

    task: int
    server: int
    reason: Optional[str] = None
    power: tuple[PowerOrder, ...] = ()


Decision = Union[Place, Wait]
PreemptDecision = Union[Evict, Wait]


class Scheduler(Protocol):
    """Anything with ``on_request`` (unless it decides only preemption);
    ``on_hello(servers)``, ``on_preempt(request)`` (for the preemption
    stage) and ``on_idle(request)`` (v3: servers went idle; no orders if
    absent) are optional."""

    def on_request(self, request: Request) -> Decision: ...


Handler = Union[Scheduler, Callable[[Request], Decision]]
PreemptHandler = Callable[[PreemptRequest], PreemptDecision]
IdleHandler = Callable[[IdleRequest], Orders]


def no_orders(request: IdleRequest) -> Orders:
    """The default ``on_idle``: leave every server as it is."""
    return Orders()


def _report(v: Optional[dict]) -> Optional[Report]:
    return None if v is None else Report(**v)


def _state(cluster: list[Server], s: dict) -> ServerState:
    return ServerState(
        server=cluster[s["index"]],
        free_slots=s["free_slots"],
        free_memory_mb=s["free_memory_mb"],
        primary_room=s.get("primary_room"),
        report=_report(s.get("report")),
        running=[RunningTask(**r) for r in s.get("running") or []],
        power=s.get("power"),
        primary=s.get("primary"),
        paths=None if s.get("paths") is None else [Path(**p) for p in s["paths"]],
    )


def _power(orders: tuple[PowerOrder, ...]) -> list[dict]:
    out = []
    for o in orders:
        if isinstance(o, Sleep):
            out.append({"server": o.server, "to": "sleep"})
        elif isinstance(o, Wake):
            out.append({"server": o.server, "to": "wake"})
        else:
            raise TypeError(f"power order {o!r} is not Sleep or Wake")
    return out


def _orders(out: dict, power: tuple[PowerOrder, ...], moves: tuple[Migrate, ...]) -> None:
    if power:
        out["power"] = _power(power)
    if moves:
        out["migrate"] = [{"task": m.task, "server": m.server} for m in moves]


def _idle(handler: IdleHandler, msg: dict, cluster: list[Server], rng: ChaCha8) -> dict:
    orders = handler(
        IdleRequest(
            id=msg["id"],
            time_ns=msg["time_ns"],
            idle=list(msg["idle"]),
            servers=[_state(cluster, s) for s in msg["servers"]],
            queued=msg["queued"],
            rng=rng,
            cluster=cluster,
            running=[Placed(**r) for r in msg.get("running") or []],
        )
    )
    if not isinstance(orders, Orders):
        raise TypeError(f"on_idle returned {orders!r}, not Orders")
    out: dict = {"id": msg["id"]}
    _orders(out, orders.power, orders.migrate)
    if rng.word_pos != msg["rng_word_pos"]:
        out["rng_word_pos"] = rng.word_pos
    return out


def _profile(p: Optional[dict]) -> Optional[Profile]:
    return None if p is None else Profile(p["speed"], p["tolerated"], p["caused"])


def _placer(handler: Optional[Handler]) -> Optional[Callable[[Request], Decision]]:
    """The handler's answer to ``place`` requests: the function itself,
    its ``on_request`` method, or none (a program deciding only
    preemption)."""
    if handler is None:
        return None
    on_request = getattr(handler, "on_request", None)
    if on_request is not None:
        return on_request  # type: ignore[no-any-return]
    return handler if callable(handler) else None  # type: ignore[return-value]


def serve(
    handler: Optional[Handler],
    stdin: TextIO,
    stdout: TextIO,
    on_preempt: Optional[PreemptHandler] = None,
    on_idle: Optional[IdleHandler] = None,
    admissible_only: bool = False,
) -> int:
    """Answers dcemu on ``stdin``/``stdout`` until it closes ``stdin``;
    returns the number of requests answered. ``place`` requests go to the
    handler (a function, or its ``on_request``; ``None`` or an object
    without one for a program that decides only preemption, ``stages =
    ["preemption"]``); ``preempt`` requests to ``on_preempt``, else to the
    handler's ``on_preempt`` method; ``idle`` requests to ``on_idle``,
    else to the handler's ``on_idle`` method, else to ``no_orders``. With
    ``admissible_only`` (v2 and later, with the preemption stage) the
    ``preempt`` requests list only the tasks the stage admits as victims,
    on the servers holding one (``"preempt_lists": "admissible"`` in the
    hello): smaller requests for a rule that never looks at the others."""
    decide = _placer(handler)
    preempt: Optional[PreemptHandler] = on_preempt or getattr(handler, "on_preempt", None)
    idle: IdleHandler = on_idle or getattr(handler, "on_idle", None) or no_orders
    first = stdin.readline()
    if not first:
        return 0
    hello = json.loads(first)
    if hello.get("type") != "hello":
        raise ValueError(f"expected hello from dcemu, got {first!r}")
    version = hello.get("protocol")
    if version not in PROTOCOLS:
        raise ValueError(f"dcemu offers protocol {version}, this module speaks {PROTOCOLS}")
    if "preemption" in hello.get("stages", []) and preempt is None:
        raise ValueError("dcemu hands out the preemption stage, but the scheduler has no on_preempt")
    if "placement" in hello.get("stages", ["placement"]) and decide is None:
        raise ValueError("dcemu hands out the placement stage, but the scheduler has no on_request")
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
    reply: dict = {"type": "hello", "protocol": version}
    if admissible_only:
        reply["preempt_lists"] = "admissible"
    stdout.write(json.dumps(reply) + "\n")
    stdout.flush()
    answered = 0
    # one stream object for the run: its block cache serves the next requests
    rng = ChaCha8(key, stream)
    for line in stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if (
            kind not in ("place", "preempt", "idle")
            or (kind == "preempt" and preempt is None)
            or (kind == "place" and decide is None)
        ):
            raise ValueError(f"unexpected request type {kind!r} (stages {hello.get('stages')})")
        rng.word_pos = msg["rng_word_pos"]
        if kind == "idle":
            stdout.write(json.dumps(_idle(idle, msg, cluster, rng)) + "\n")
            stdout.flush()
            answered += 1
            continue
        out: dict = {"id": msg["id"], "task": msg["task"]["id"]}
        servers = [_state(cluster, s) for s in msg["servers"]]
        orders: tuple[PowerOrder, ...] = ()
        moves: tuple[Migrate, ...] = ()
        if kind == "place" and decide is not None:
            decision = decide(
                Request(
                    id=msg["id"],
                    time_ns=msg["time_ns"],
                    task=Task(**msg["task"]),
                    profile=_profile(msg.get("profile")),
                    servers=servers,
                    rng=rng,
                    cluster=cluster,
                    running=[Placed(**r) for r in msg.get("running") or []],
                )
            )
            if isinstance(decision, Place):
                out["decision"] = "place"
                out["server"] = decision.server
                if decision.path is not None:
                    out["path"] = decision.path
            elif isinstance(decision, Wait):
                out["decision"] = "wait"
            else:
                raise TypeError(f"on_request returned {decision!r}, not Place or Wait")
            orders = decision.power
            moves = decision.migrate
        elif preempt is not None:
            victim = preempt(
                PreemptRequest(
                    id=msg["id"],
                    time_ns=msg["time_ns"],
                    task=Task(**msg["task"]),
                    profile=_profile(msg.get("profile")),
                    servers=servers,
                    rng=rng,
                    cluster=cluster,
                )
            )
            if isinstance(victim, Evict):
                out["decision"] = "place"
                out["server"] = victim.server
                evict: dict = {"task": victim.task}
                if victim.reason is not None:
                    evict["reason"] = victim.reason
                out["evict"] = [evict]
            elif isinstance(victim, Wait):
                out["decision"] = "wait"
            else:
                raise TypeError(f"on_preempt returned {victim!r}, not Evict or Wait")
            orders = victim.power
        _orders(out, orders, moves)
        if rng.word_pos != msg["rng_word_pos"]:
            out["rng_word_pos"] = rng.word_pos
        stdout.write(json.dumps(out) + "\n")
        stdout.flush()
        answered += 1
    return answered


def run(
    handler: Optional[Handler] = None,
    on_preempt: Optional[PreemptHandler] = None,
    on_idle: Optional[IdleHandler] = None,
    admissible_only: bool = False,
) -> None:
    """Serves dcemu on this process's stdin and stdout; a program that
    decides only preemption passes no handler: ``run(on_preempt=evict)``;
    ``admissible_only`` as in ``serve``."""
    serve(handler, sys.stdin, sys.stdout, on_preempt, on_idle, admissible_only)
