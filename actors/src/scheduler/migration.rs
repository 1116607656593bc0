//! Reactive phase detection and migration (Paragon §3.4): rates the servers
//! report, in-vivo reclassification of a lagging application, migrations
//! and the isolation of a degraded one.

use std::sync::Arc;

use dcemu_topology::SimTime;

use crate::ground_truth::SOURCES;
use crate::kernel::{ActorId, Ctx, ModelError};
use crate::net::Msg;
use crate::net::{AppRate, Body};
use crate::task::TaskId;

use super::placement::expected_rate;
use super::preemption::SlotStage;

use super::logs::{MigrateLog, ReclassifyLog};
use super::state::{Core, MAX_ISOLATION_MOVES, MAX_RECLASSIFICATIONS};
use super::{Choice, Request};

impl Core {
    /// Reactive phase detection (§3.4): an application progressing clearly
    /// below what its classification predicts on this configuration is
    /// reclassified in vivo.
    pub(super) fn rates(
        &mut self,
        src: ActorId,
        rates: &[AppRate],
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let world = Arc::clone(&self.world);
        for r in rates {
            let Some(p) = self.placed.get_mut(&r.task) else {
                continue;
            };
            p.rate = f64::from(r.rate_ppm) / 1e6;
            p.left_ns = r.left_ns;
            p.measured = true;
            if self.reclassify_below <= 0.0
                || p.reclassifying
                || p.migrating_to.is_some()
                || p.reclassified >= MAX_RECLASSIFICATIONS
            {
                continue;
            }
            let Some(profile) = self.profiles.get(&r.task) else {
                continue;
            };
            let class = self.cluster.servers()[p.server as usize].class;
            let speed = profile.speed.get(class).copied().unwrap_or(1.0);
            let expected = expected_rate(speed, p.violation);
            if p.rate >= expected * (1.0 - self.reclassify_below) {
                continue;
            }
            p.reclassifying = true;
            p.reclassified += 1;
            self.reclassifications += 1;
            ctx.log(
                "reclassify",
                &ReclassifyLog {
                    task: r.task,
                    server: world.name(src),
                    rate: p.rate,
                    expected,
                },
            );
            self.nic
                .send(&world, ctx, src, Body::Reclassify { task: r.task })?;
        }
        Ok(())
    }

    /// The in-vivo profile is back: update the application's and the
    /// server's interference state, and migrate the application if another
    /// server is expected to finish it sooner, migration included (§3.4).
    pub(super) fn reclassified(
        &mut self,
        task: TaskId,
        src: ActorId,
        tolerated: &[u16; SOURCES],
        caused: &[u16; SOURCES],
        slots: Option<&mut SlotStage>,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let Some(i) = self.cluster.index_of(src) else {
            return Ok(());
        };
        let Some(p) = self.placed.get_mut(&task) else {
            return Ok(());
        };
        p.reclassifying = false;
        if p.server != i {
            return Ok(());
        }
        let (rate_now, left_ns) = (p.rate, p.left_ns);
        let class = self.cluster.servers()[i as usize].class;
        let Some(profile) = self.profiles.get_mut(&task) else {
            return Ok(());
        };
        profile.tolerated = std::array::from_fn(|s| f64::from(tolerated[s]) / 100.0);
        profile.caused = std::array::from_fn(|s| f64::from(caused[s]) / 100.0);
        let state = self.cluster.interference_mut(i);
        state.remove(task);
        let violation = state.violation(&profile.tolerated, &profile.caused);
        state.add(task, &profile.tolerated, &profile.caused);
        // §3.4: a degraded application "entered a new phase or was classified
        // incorrectly". When its new interference profile fits its co-runners,
        // interference does not explain the loss: the heterogeneity
        // classification was wrong for this configuration, and the measured
        // rate is the application's performance on it, a known entry of the
        // §2.2 utility matrix, which replaces the prediction.
        if violation <= 0.0 {
            if let Some(v) = profile.speed.get_mut(class) {
                *v = v.min(rate_now);
            }
        }
        if let Some(p) = self.placed.get_mut(&task) {
            p.violation = violation;
        }
        self.refresh_pool(i);
        let Some(task_view) = self.placed_task(task) else {
            return Ok(());
        };
        let slot_free = |s: u32| slots.as_deref().is_none_or(|st| st.has_room(s, &task_view));
        let req = Request {
            task: &task_view,
            profile: self.profiles.get(&task),
            allowed: Some(&slot_free),
            exclude: Some(i),
        };
        let choice = self.placement.place(&req, &self.cluster, ctx.rng());
        let rate_new = choice.map_or(0.0, |c| {
            let class = self.cluster.servers()[c.server as usize].class;
            let speed = self
                .profiles
                .get(&task)
                .and_then(|p| p.speed.get(class).copied())
                .unwrap_or(1.0);
            expected_rate(speed, c.violation)
        });
        let left = left_ns as f64;
        let stay = left / rate_now.max(1e-6);
        let go = left / rate_new.max(1e-6) + self.migration_time as f64;
        match choice {
            Some(choice) if go < stay => {
                let rates = Some((rate_now, rate_new));
                self.start_migration(task, "faster", src, choice, rates, slots, ctx, None)
            }
            // Moving the co-runners away helps only a loss that interference
            // explains; otherwise it would cost them a migration for nothing.
            _ if violation > 0.0 => self.isolate(task, i, slots, ctx),
            _ => {
                self.migrations_declined += 1;
                Ok(())
            }
        }
    }

    /// Reserves `choice` for `task` (and, under a slot stage, a slot there)
    /// and asks `src` to hand the task over. `rates`: its rate now and the
    /// one expected there, when the mover estimated them (`None`: an
    /// external program's move, logged without them).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_migration(
        &mut self,
        task: TaskId,
        why: &'static str,
        src: ActorId,
        choice: Choice,
        rates: Option<(f64, f64)>,
        slots: Option<&mut SlotStage>,
        ctx: &mut Ctx<'_, Msg>,
        leaves: Option<SimTime>,
    ) -> Result<(), ModelError> {
        if !self.book_migration(task, choice, slots) {
            return Ok(());
        }
        self.send_migration(task, why, src, rates, ctx, leaves)
    }

    /// The scheduler's side of a migration of `task` (Paragon §3.4): the
    /// slot stage, if given, begins it (it may decline: counted, nothing
    /// booked), then the target's slots, memory and interference are the
    /// task's from now on. Returns whether it was booked.
    pub(super) fn book_migration(
        &mut self,
        task: TaskId,
        choice: Choice,
        slots: Option<&mut SlotStage>,
    ) -> bool {
        if !self.placed.contains_key(&task) {
            return false;
        }
        if let Some(stage) = slots
            && !stage.begin_move(task, choice.server)
        {
            self.migrations_declined += 1;
            return false;
        }
        let Some(p) = self.placed.get_mut(&task) else {
            return false;
        };
        p.migrating_to = Some((choice.server, choice.violation));
        let (cores, memory_mb) = (p.cores, p.memory_mb);
        self.cluster.take(choice.server, cores, memory_mb);
        if let Some(pr) = self.profiles.get(&task) {
            self.cluster
                .interference_mut(choice.server)
                .add(task, &pr.tolerated, &pr.caused);
        }
        self.refresh_pool(choice.server);
        true
    }

    /// Logs a booked migration of `task` and sends its order to hand the
    /// task over to `src` (at `leaves`, in order with the dispatches, or
    /// at once).
    pub(super) fn send_migration(
        &mut self,
        task: TaskId,
        why: &'static str,
        src: ActorId,
        rates: Option<(f64, f64)>,
        ctx: &mut Ctx<'_, Msg>,
        leaves: Option<SimTime>,
    ) -> Result<(), ModelError> {
        let Some(p) = self.placed.get(&task) else {
            return Ok(());
        };
        let Some((target, _)) = p.migrating_to else {
            return Ok(());
        };
        let left_s = (rates.is_some() || p.measured).then(|| p.left_ns as f64 / 1e9);
        let world = Arc::clone(&self.world);
        let to = self.cluster.servers()[target as usize].id;
        ctx.log(
            "migrate_start",
            &MigrateLog {
                task,
                why,
                from: world.name(src),
                to: world.name(to),
                left_s,
                rate_now: rates.map(|r| r.0),
                rate_expected: rates.map(|r| r.1),
            },
        );
        let body = Body::Migrate { task };
        match leaves {
            None => self.nic.send(&world, ctx, src, body),
            Some(at) if at > ctx.now() => {
                ctx.timer(at - ctx.now(), Msg::Deferred { server: src, body })
            }
            Some(_) => self.send(ctx, src, body),
        }
    }

    /// No server suits the degraded `task` better: run it in isolation by
    /// moving its co-runners on server `i` away (§3.4), if every one of
    /// them has a server that takes it without violating any interference
    /// constraint; otherwise leave things as they are.
    pub(super) fn isolate(
        &mut self,
        task: TaskId,
        i: u32,
        mut slots: Option<&mut SlotStage>,
        ctx: &mut Ctx<'_, Msg>,
    ) -> Result<(), ModelError> {
        let others: Vec<TaskId> = self
            .placed
            .on_server(i)
            .filter(|&id| {
                id != task
                    && self
                        .placed
                        .get(&id)
                        .is_some_and(|p| p.migrating_to.is_none())
                    && !self.gangs.owns(id)
            })
            .collect();
        if others.is_empty() || others.len() > MAX_ISOLATION_MOVES {
            self.migrations_declined += 1;
            return Ok(());
        }
        let mut moves = Vec::with_capacity(others.len());
        for &other in &others {
            let Some(view) = self.placed_task(other) else {
                continue;
            };
            let slot_free = |s: u32| slots.as_deref().is_none_or(|st| st.has_room(s, &view));
            let req = Request {
                task: &view,
                profile: self.profiles.get(&other),
                allowed: Some(&slot_free),
                exclude: Some(i),
            };
            match self.placement.place(&req, &self.cluster, ctx.rng()) {
                Some(c)
                    if c.violation <= 0.0
                        && !moves
                            .iter()
                            .any(|(_, m): &(TaskId, Choice)| m.server == c.server) =>
                {
                    moves.push((other, c));
                }
                _ => {
                    self.migrations_declined += 1;
                    return Ok(());
                }
            }
        }
        self.isolations += 1;
        let src = self.cluster.servers()[i as usize].id;
        ctx.log(
            "isolate",
            &serde_json::json!({ "task": task, "moved": moves.len() }),
        );
        for (other, choice) in moves {
            let rate = self.placed.get(&other).map_or(1.0, |p| p.rate);
            let class = self.cluster.servers()[choice.server as usize].class;
            let speed = self
                .profiles
                .get(&other)
                .and_then(|p| p.speed.get(class).copied())
                .unwrap_or(1.0);
            let stage = slots.as_deref_mut();
            self.start_migration(
                other,
                "isolate",
                src,
                choice,
                Some((rate, speed)),
                stage,
                ctx,
                None,
            )?;
        }
        Ok(())
    }
}
