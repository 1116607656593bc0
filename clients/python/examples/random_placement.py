"""random, as dcemu's built-in: uniformly among the servers with the task's
slots free, drawn from the scheduler's own random stream (so the run is
the built-in's, digest for digest)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcemu_scheduler import Decision, Place, Request, Wait, run  # noqa: E402


def random_placement(req: Request) -> Decision:
    fits = [s for s in req.servers if s.fits(req.task, memory=False)]
    if not fits:
        return Wait()
    return Place(fits[req.rng.index(len(fits))].index)


if __name__ == "__main__":
    run(random_placement)
