"""A priority scheduler with evictions (protocol v2): dcemu's built-in
``least-loaded`` placement under a ``priority`` slot stage, the victim
chosen here by the stage's eviction rule, ``mrs`` (the most recently
started task, the least work lost; the default) or ``lrs`` (the least
recently started): ``priority_evict.py [mrs|lrs]``.

Run it with ``stages = ["placement", "preemption"]``. dcemu's preemption
stage still decides whether the task may evict at all and which tasks it
may (``admissible``: the lowest running priority below the task's); this
program picks among them, as the built-in does:

1. the rule's pick among all admissible victims (by start, then task id);
2. on every other server, the rule's pick among the admissible victims that
   started with it (a time slot starts its tasks together), so the work an
   eviction loses stays the rule's;
3. least-loaded's criterion among those servers: the lowest load, the
   rule's own pick first among equals.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcemu_scheduler import (  # noqa: E402
    Decision,
    Evict,
    Place,
    PreemptDecision,
    PreemptRequest,
    Request,
    Wait,
    run,
)


class PriorityEvict:
    def __init__(self, rule: str) -> None:
        if rule not in ("mrs", "lrs"):
            raise ValueError(f"eviction rule {rule!r}: mrs or lrs")
        self.rule = rule

    def on_request(self, req: Request) -> Decision:
        fits = [s for s in req.servers if s.fits(req.task, memory=True)]
        if not fits:
            return Wait()
        return Place(min(fits, key=lambda s: (s.load(), s.index)).index)

    def on_preempt(self, req: PreemptRequest) -> PreemptDecision:
        victims = sorted(req.admissible(), key=lambda sr: (sr[1].started_ns, sr[1].id))
        if not victims:
            return Wait()
        pick = (lambda vs: vs[-1]) if self.rule == "mrs" else (lambda vs: vs[0])
        home, victim = pick(victims)
        options = [(home, victim)]
        for server in sorted({s.index for s, _ in victims} - {home.index}):
            equal = [sr for sr in victims if sr[0].index == server and sr[1].started_ns == victim.started_ns]
            if equal:
                options.append(pick(equal))
        k = min(range(len(options)), key=lambda k: (options[k][0].load(), k))
        server, chosen = options[k]
        return Evict(chosen.id, server.index, reason=f"{self.rule}, priority {chosen.priority}")


if __name__ == "__main__":
    run(PriorityEvict(sys.argv[1] if len(sys.argv) > 1 else "mrs"))
