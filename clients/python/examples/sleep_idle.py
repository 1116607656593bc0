"""Packing with sleep (protocol v3, ``stages = ["placement", "power"]``):
each task goes to the awake server with the fewest free slots that takes
it (best fit, so that load gathers on few servers), else to an asleep
one (its dispatch wakes it); then every idle awake server beyond ``spare``
(default 1, kept to take the next arrivals at once; a primary tenant's
servers never sleep) is put to sleep, at
each placement and as soon as a server goes idle (``on_idle``). The
trade is the thesis's SLP against IDL (§6.2.5): a sleeping server draws
its sleep power instead of its idle power, and a wake-up costs
``power.server_wake`` at peak power and the task's wait.

``sleep_idle.py [spare] [--no-sleep] [--no-idle] [--migrate]``: with
``--no-sleep`` the same placement, never sleeping (the baseline the tests
compare energy with); with ``--no-idle`` it orders nothing when servers go
idle, so idle servers sleep only at the next placement (what this example
did before ``idle`` requests); with ``--migrate`` (stages ``["placement", "power", "migration"]``)
it also consolidates: at most one move per decision, of the lone task of
the highest-indexed server running just one, to the busiest other awake
server with room for it, so that its server empties and can sleep
(Paragon §3.4's migration, its ``migration_time`` paid by the task)."""

import os
import sys
from typing import Optional, Union

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcemu_scheduler import (  # noqa: E402
    Decision,
    IdleRequest,
    Migrate,
    Orders,
    Place,
    Request,
    ServerState,
    Sleep,
    Wait,
    run,
)


class SleepIdle:
    def __init__(self, spare: int, sleeps: bool, migrates: bool, at_idle: bool = True) -> None:
        self.spare = spare
        self.sleeps = sleeps
        self.migrates = migrates
        self.at_idle = at_idle

    def on_idle(self, req: IdleRequest) -> Orders:
        """Servers went idle: the same orders as at a placement, now."""
        if not self.at_idle:
            return Orders()
        return Orders(power=self.sleep_orders(req, None), migrate=self.moves(req, None))

    def on_request(self, req: Request) -> Decision:
        fits = [s for s in req.servers if s.fits(req.task, memory=True)]
        awake = [s for s in fits if s.power != "asleep"]
        pool = awake or fits
        if not pool:
            return Wait(power=self.sleep_orders(req, None), migrate=self.moves(req, None))
        chosen = min(pool, key=lambda s: (s.free_slots, s.index))
        return Place(
            chosen.index,
            power=self.sleep_orders(req, chosen),
            migrate=self.moves(req, chosen),
        )

    def sleep_orders(
        self, req: Union[Request, IdleRequest], chosen: Optional[ServerState]
    ) -> tuple[Sleep, ...]:
        if not self.sleeps:
            return ()
        idle = [
            s
            for s in req.servers
            if s.power == "awake"
            and s.idle()
            and s.primary is None
            and (chosen is None or s.index != chosen.index)
        ]
        idle.sort(key=lambda s: s.index)
        return tuple(Sleep(s.index) for s in idle[self.spare :])

    def moves(
        self, req: Union[Request, IdleRequest], chosen: Optional[ServerState]
    ) -> tuple[Migrate, ...]:
        if not self.migrates:
            return ()
        tasks: dict[int, list] = {}
        for r in req.running:
            tasks.setdefault(r.server, []).append(r)
        lone = sorted(
            (i for i, rs in tasks.items() if len(rs) == 1 and not rs[0].migrating),
            reverse=True,
        )
        for src in lone:
            task = tasks[src][0]
            room = []
            for s in req.servers:
                placing = (
                    req.task.cores
                    if isinstance(req, Request) and chosen is not None and s.index == chosen.index
                    else 0
                )
                free = s.free_slots - placing
                busy = len(tasks.get(s.index, []))
                if s.index != src and s.power == "awake" and busy >= 1 and free >= task.cores:
                    room.append((-busy, s.index))
            if room:
                return (Migrate(task.id, min(room)[1]),)
        return ()


if __name__ == "__main__":
    flags = {"--no-sleep", "--no-idle", "--migrate"}
    args = [a for a in sys.argv[1:] if a not in flags]
    run(
        SleepIdle(
            int(args[0]) if args else 1,
            "--no-sleep" not in sys.argv[1:],
            "--migrate" in sys.argv[1:],
            "--no-idle" not in sys.argv[1:],
        )
    )
