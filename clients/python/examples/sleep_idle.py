"""Packing with sleep (protocol v3, ``stages = ["placement", "power"]``):
each task goes to the awake server with the fewest free slots that takes
it (best fit, so that load gathers on few servers), else to an asleep
one (its dispatch wakes it); then every idle awake server beyond ``spare``
(default 1, kept to take the next arrivals at once) is put to sleep. The
trade is the thesis's SLP against IDL (§6.2.5): a sleeping server draws
its sleep power instead of its idle power, and a wake-up costs
``power.server_wake`` at peak power and the task's wait.

``sleep_idle.py [spare] [--no-sleep]``: with ``--no-sleep`` the same
placement, never sleeping (the baseline the tests compare energy with)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcemu_scheduler import (  # noqa: E402
    Decision,
    Place,
    Request,
    ServerState,
    Sleep,
    Wait,
    run,
)


class SleepIdle:
    def __init__(self, spare: int, sleeps: bool) -> None:
        self.spare = spare
        self.sleeps = sleeps

    def on_request(self, req: Request) -> Decision:
        fits = [s for s in req.servers if s.fits(req.task, memory=True)]
        awake = [s for s in fits if s.power != "asleep"]
        pool = awake or fits
        if not pool:
            return Wait(power=self.sleep_orders(req, None))
        chosen = min(pool, key=lambda s: (s.free_slots, s.index))
        return Place(chosen.index, power=self.sleep_orders(req, chosen))

    def sleep_orders(self, req: Request, chosen: "ServerState | None") -> tuple[Sleep, ...]:
        if not self.sleeps:
            return ()
        idle = [
            s
            for s in req.servers
            if s.power == "awake" and s.idle() and (chosen is None or s.index != chosen.index)
        ]
        idle.sort(key=lambda s: s.index)
        return tuple(Sleep(s.index) for s in idle[self.spare :])


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--no-sleep"]
    run(SleepIdle(int(args[0]) if args else 1, "--no-sleep" not in sys.argv[1:]))
