"""least-loaded, as dcemu's built-in (Paragon §5's LL baseline): among the
servers with the task's slots and memory free, the one whose latest report
shows the lowest share of busy cores (its own count of slots without
reports); ties to the lowest index."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcemu_scheduler import Decision, Place, Request, Wait, run  # noqa: E402


def least_loaded(req: Request) -> Decision:
    fits = [s for s in req.servers if s.fits(req.task, memory=True)]
    if not fits:
        return Wait()
    return Place(min(fits, key=lambda s: (s.load(), s.index)).index)


if __name__ == "__main__":
    run(least_loaded)
