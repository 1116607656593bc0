"""least-loaded with the widest path (protocol v3, ``stages = ["placement",
"network"]``, a three-tier topology): a task with a flow goes to the least
loaded server that has a path with the flow's bandwidth free, and its flow
to the path with the most bandwidth free there (ties: the first listed),
so that flows spread over the core and aggregation links (thesis §4.2.2);
a task without a flow is placed as by ``least_loaded.py``. dcemu's own
choice, without the stage, is the first path that fits from a place
hashed on the task's id."""

import os
import sys
from typing import Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcemu_scheduler import Decision, Place, Request, ServerState, Wait, run  # noqa: E402


def widest(s: ServerState, flow_bps: int) -> Optional[int]:
    """Index of the path to ``s`` with the most bandwidth free, if it has
    ``flow_bps`` free."""
    paths = s.paths or []
    if not paths:
        return None
    k = max(range(len(paths)), key=lambda i: (paths[i].free_bps, -i))
    return k if paths[k].free_bps >= flow_bps else None


def place(req: Request) -> Decision:
    flow = req.task.flow_bps
    fits = [s for s in req.servers if s.fits(req.task, memory=True)]
    if flow > 0:
        fits = [s for s in fits if widest(s, flow) is not None]
    if not fits:
        return Wait()
    chosen = min(fits, key=lambda s: (s.load(), s.index))
    return Place(chosen.index, path=widest(chosen, flow) if flow > 0 else None)


if __name__ == "__main__":
    run(place)
