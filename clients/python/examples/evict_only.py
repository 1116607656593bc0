"""The preemption stage alone (protocol v2, ``stages = ["preemption"]``):
a built-in placement places every task, and this program picks only the
victim of a task that found no free slot, by the slot stage's eviction
rule: ``mrs`` (the most recently started admissible task, the least work
lost; the default) or ``lrs`` (the least recently started):
``evict_only.py [mrs|lrs]``.

dcemu's preemption stage still decides whether the task may evict at all
and which tasks it may (``admissible``); the rule here ranks them over the
whole cluster, by start then task id, as the built-in rule does. Beside a
placement without a victim criterion of its own (``yarn-stock``) it gives
the built-in rule's results, file for file but ``scenario.toml``. It asks
dcemu to list only the admissible tasks (``admissible_only``): the rule
never looks at the others, and the requests shrink to them.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dcemu_scheduler import Evict, PreemptDecision, PreemptRequest, Wait, run  # noqa: E402


def evict_by(rule: str):
    if rule not in ("mrs", "lrs"):
        raise ValueError(f"eviction rule {rule!r}: mrs or lrs")

    def evict(req: PreemptRequest) -> PreemptDecision:
        victims = sorted(req.admissible(), key=lambda sr: (sr[1].started_ns, sr[1].id))
        if not victims:
            return Wait()
        server, victim = victims[-1] if rule == "mrs" else victims[0]
        return Evict(victim.id, server.index, reason=f"{rule}, priority {victim.priority}")

    return evict


if __name__ == "__main__":
    run(on_preempt=evict_by(sys.argv[1] if len(sys.argv) > 1 else "mrs"), admissible_only=True)
