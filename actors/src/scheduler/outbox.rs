//! The scheduler's outbox for the power orders and migrations a placement
//! decides (an external program under protocol v3): when they leave.
//!
//! An order leaves when its decision is done (the decision's latency,
//! after every earlier decision's), before the decision's own dispatch,
//! and in decision order with every other message the scheduler sends:
//! nothing overtakes what was decided before it. Outside a slot stage a
//! decision's orders leave as it is taken. A slot pass takes all its
//! decisions before it sends anything (`Scheduler::slot_pass`), so the
//! orders decided in it are booked in the scheduler's view at once (the
//! pass's later decisions see a server ordered to sleep as asleep) and
//! held, in decision order, until the pass sends the start of their own
//! decision or of a later one ([`Core::release_held`]). A migration
//! decided in the pass is begun by the slot stage right after its
//! decision (the target's slot held, the task no victim), then booked in
//! the view and held the same way ([`Core::hold_move`]); outside a pass
//! the slot stage, if any, begins it as it is booked
//! ([`Core::send_orders`]).

use std::sync::Arc;

use dcemu_topology::SimTime;

use super::Choice;
use super::logs::PowerOrderLog;
use super::preemption::SlotStage;
use super::state::{Core, HeldOrders};
use crate::external::{MigrateOrder, PowerOrder};
use crate::kernel::{ActorId, Ctx, ModelError};
use crate::net::{Body, Msg};
use crate::task::TaskId;

impl Core {
    /// Carries out the power orders and migrations of a decision that took
    /// `latency`: they leave when it is done, in decision order, power
    /// orders first, before the decision's own dispatch (which then takes
    /// no more time). Each migration is booked first, begun by the slot
    /// stage `slots` if there is one (a move it declines is counted and
    /// not sent). Returns whether there were any orders.
    pub(super) fn send_orders(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        orders: Vec<PowerOrder>,
        moves: Vec<MigrateOrder>,
        latency: u64,
        mut slots: Option<&mut SlotStage>,
    ) -> Result<bool, ModelError> {
        if orders.is_empty() && moves.is_empty() {
            return Ok(false);
        }
        self.book_power(&orders);
        let mut booked = Vec::with_capacity(moves.len());
        for m in moves {
            let Some(src) = self.source_of(m.task) else {
                continue;
            };
            if self.book_migration(m.task, Choice::clean(m.server), slots.as_deref_mut()) {
                booked.push((m.task, src));
            }
        }
        self.send_decided(ctx, orders, booked, latency)?;
        Ok(true)
    }

    /// Inside a slot pass: takes from the placement the orders of its
    /// decision about `task`, which took `latency`, books the power orders
    /// in the view and holds them until the pass sends them. Returns the
    /// decision's migrations, for the slot stage to begin ([`Core::hold_move`]
    /// then books and holds each it began), if there were any orders at
    /// all (the decision's latency then goes with them, and its start
    /// takes no more).
    pub(super) fn hold_orders(&mut self, task: TaskId, latency: u64) -> Option<Vec<MigrateOrder>> {
        let power = self.placement.take_power();
        let moves = self.placement.take_migrations();
        if power.is_empty() && moves.is_empty() {
            return None;
        }
        self.book_power(&power);
        self.held.push_back(HeldOrders {
            task,
            latency,
            power,
            moves: Vec::new(),
        });
        Some(moves)
    }

    /// Inside a slot pass: the slot stage began the move of `task` to
    /// server `to` that the decision about `decision` ordered. Books it in
    /// the view at once (the pass's later requests show the task
    /// migrating and the target's slots taken) and holds its order with
    /// the decision's other orders. Returns whether it was booked.
    pub(super) fn hold_move(&mut self, decision: TaskId, task: TaskId, to: u32) -> bool {
        let Some(k) = self.held.iter().rposition(|h| h.task == decision) else {
            return false;
        };
        let Some(src) = self.source_of(task) else {
            return false;
        };
        let booked = self.book_migration(task, Choice::clean(to), None);
        if booked {
            self.held[k].moves.push((task, src));
        }
        booked
    }

    /// The server placed `task` runs on, as the view has it.
    fn source_of(&self, task: TaskId) -> Option<ActorId> {
        self.placed
            .get(&task)
            .and_then(|p| self.cluster.servers().get(p.server as usize))
            .map(|s| s.id)
    }

    /// Before the slot pass sends its start of `task`: sends the orders
    /// held from decisions up to and including the latest one about
    /// `task` (the one that started it; a task told to wait may be asked
    /// again in the same pass), if it had any. Otherwise they wait for
    /// the next start whose decision had orders, or the end of the pass:
    /// decisions that started nothing come before it in decision order.
    pub(super) fn release_held(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        task: TaskId,
    ) -> Result<(), ModelError> {
        let Some(k) = self.held.iter().rposition(|h| h.task == task) else {
            return Ok(());
        };
        for h in self.held.drain(..=k).collect::<Vec<_>>() {
            self.send_decided(ctx, h.power, h.moves, h.latency)?;
        }
        Ok(())
    }

    /// At the end of a slot pass: sends the orders of the decisions after
    /// its last start.
    pub(super) fn release_all_held(&mut self, ctx: &mut Ctx<'_, Msg>) -> Result<(), ModelError> {
        while let Some(h) = self.held.pop_front() {
            self.send_decided(ctx, h.power, h.moves, h.latency)?;
        }
        Ok(())
    }

    /// Sends orders already booked, when their decision, which took
    /// `latency`, is done.
    fn send_decided(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        orders: Vec<PowerOrder>,
        moves: Vec<(TaskId, ActorId)>,
        latency: u64,
    ) -> Result<(), ModelError> {
        let leaves = self.leaves(ctx.now(), latency);
        self.send_power(ctx, orders, leaves)?;
        for (task, src) in moves {
            self.send_migration(task, "external", src, None, ctx, Some(leaves))?;
        }
        Ok(())
    }

    /// Notes power orders in the scheduler's view: a server ordered to
    /// sleep counts as asleep, one ordered to wake as waking, from the
    /// decision on.
    fn book_power(&mut self, orders: &[PowerOrder]) {
        for order in orders {
            self.cluster.order_power(order.server, order.sleep);
            self.version += 1;
        }
    }

    /// Sends power orders to their servers at `leaves`, in order with the
    /// dispatches.
    fn send_power(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        orders: Vec<PowerOrder>,
        leaves: SimTime,
    ) -> Result<(), ModelError> {
        let now = ctx.now();
        let world = Arc::clone(&self.world);
        for order in orders {
            let Some(server) = self
                .cluster
                .servers()
                .get(order.server as usize)
                .map(|s| s.id)
            else {
                continue;
            };
            let body = Body::Power { sleep: order.sleep };
            ctx.log(
                "power_order",
                &PowerOrderLog {
                    server: world.name(server),
                    to: if order.sleep { "sleep" } else { "wake" },
                },
            );
            if leaves > now {
                ctx.timer(leaves - now, Msg::Deferred { server, body })?;
            } else {
                self.send(ctx, server, body)?;
            }
        }
        Ok(())
    }
}
