"""Best fit by memory: the server left with the least memory free once the
task's is taken, among those with its slots and memory free (packs memory,
so other servers stay empty and may sleep); ties to the lowest index. A
class with state: it counts its decisions and says so on stderr at the end."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcemu_scheduler import Decision, Place, Request, Server, Wait, run  # noqa: E402


class BestFitMemory:
    def __init__(self) -> None:
        self.placed = 0
        self.waited = 0

    def on_hello(self, cluster: list[Server]) -> None:
        print(f"best-fit-memory: {len(cluster)} servers", file=sys.stderr)

    def on_request(self, req: Request) -> Decision:
        fits = [s for s in req.servers if s.fits(req.task, memory=True)]
        if not fits:
            self.waited += 1
            return Wait()
        self.placed += 1
        best = min(fits, key=lambda s: (s.free_memory_mb - req.task.memory_mb, s.index))
        return Place(best.index)


if __name__ == "__main__":
    scheduler = BestFitMemory()
    run(scheduler)
    print(f"best-fit-memory: {scheduler.placed} placed, {scheduler.waited} waits", file=sys.stderr)
