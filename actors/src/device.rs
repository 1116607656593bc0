//! Power state of a server or switch: on / idle / sleep plus the waking
//! transition (thesis §4.2.4, §6.2.5, Figure 6.6), with its energy meter.

use dcemu_topology::{EnergyMeter, SimTime};
use serde::Serialize;

use crate::kernel::{Ctx, Metrics, ModelError, Step, Steps};
use crate::net::Msg;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevState {
    Sleep,
    /// Between sleep and on: takes the wake-up time at wake-up power.
    Waking,
    /// Powered and ready, doing nothing.
    Idle,
    /// Working.
    On,
}

impl DevState {
    /// Counted as "on" in `servers_on` / `switches_on`: powered, i.e. not asleep.
    pub fn powered(self) -> bool {
        self != DevState::Sleep
    }

    /// Counted in `switch_active_s`: in the thesis's *on* mode, working,
    /// as opposed to *idle* and *sleep* (§3.1.2, §4.4.1; Table 4.2's
    /// "average *on* switches").
    pub fn active(self) -> bool {
        self == DevState::On
    }
}

/// State, energy and the history `*_on` metrics are computed from.
#[derive(Clone, Debug)]
pub struct Device {
    state: DevState,
    meter: EnergyMeter,
    wake_ups: u64,
    /// Each time the device becomes powered (up) or goes to sleep (down).
    transitions: Steps,
    /// Time in on mode, where it is kept ([`Device::keeping_active`]:
    /// switches, the only devices a paper counts that way).
    active: Option<ActiveTime>,
}

/// Time spent in on mode: a sum, not a history, so that counting it costs
/// two additions per change rather than a second history per device.
#[derive(Clone, Copy, Debug, Default)]
struct ActiveTime {
    since: SimTime,
    total_ns: u128,
}

impl Device {
    pub fn new(state: DevState, watts: f64) -> Self {
        let mut transitions = Steps::default();
        if state.powered() {
            transitions.push(0, Step::Up);
        }
        Device {
            state,
            meter: EnergyMeter::new(0, watts),
            wake_ups: 0,
            transitions,
            active: None,
        }
    }

    /// Also keeps the time spent in on mode, reported by
    /// [`Device::report_active`].
    pub fn keeping_active(mut self) -> Self {
        self.active = Some(ActiveTime::default());
        self
    }

    pub fn state(&self) -> DevState {
        self.state
    }

    /// Moves to `state` drawing `watts` from `now` on.
    pub fn set(&mut self, now: SimTime, state: DevState, watts: f64) {
        match (self.state.powered(), state.powered()) {
            (false, true) => self.transitions.push(now, Step::Up),
            (true, false) => self.transitions.push(now, Step::Down),
            _ => {}
        }
        if let Some(active) = &mut self.active {
            match (self.state.active(), state.active()) {
                (false, true) => active.since = now,
                (true, false) => active.total_ns += u128::from(now.saturating_sub(active.since)),
                _ => {}
            }
        }
        if self.state == DevState::Sleep && state == DevState::Waking {
            self.wake_ups += 1;
        }
        self.state = state;
        self.meter.set(now, watts);
    }

    /// Power it draws now (since its last change), watts.
    pub fn watts(&self) -> f64 {
        self.meter.watts()
    }

    /// Energy drawn in `[0, end)`, joules.
    pub fn joules(&self, end: SimTime) -> f64 {
        self.meter.joules_at(end)
    }

    /// Time spent powered (not asleep) in `[0, end)`, in seconds.
    pub fn powered_s(&self, end: SimTime) -> f64 {
        let mut since: Option<SimTime> = None;
        let mut total: u128 = 0;
        for (t, d) in self.transitions.iter() {
            match (d > 0, since) {
                (true, None) => since = Some(t.min(end)),
                (false, Some(s)) => {
                    total += u128::from(t.min(end).saturating_sub(s));
                    since = None;
                }
                _ => {}
            }
        }
        if let Some(s) = since {
            total += u128::from(end.saturating_sub(s));
        }
        total as f64 / 1e9
    }

    /// Adds energy (J), wake-ups and on/off history under the given metric
    /// names. The history moves into `out` (it can be the largest thing a
    /// long run holds), so this is the device's last use.
    pub fn report(
        &mut self,
        end: SimTime,
        out: &mut Metrics,
        energy: &'static str,
        wake_ups: &'static str,
        on: &'static str,
    ) {
        out.add_f64(energy, self.meter.joules_at(end));
        out.add(wake_ups, self.wake_ups);
        out.declare_steps(on);
        out.append_steps(on, std::mem::take(&mut self.transitions));
    }

    /// Adds the seconds spent in on mode in `[0, end)`, if kept, to `out`
    /// under `name`.
    pub fn report_active(&self, end: SimTime, out: &mut Metrics, name: &'static str) {
        if let Some(active) = self.active {
            let open = if self.state.active() {
                u128::from(end.saturating_sub(active.since))
            } else {
                0
            };
            out.add_f64(name, (active.total_ns + open) as f64 / 1e9);
        }
    }
}

/// A device together with the work that reached it while it was asleep or
/// waking: servers hold tasks, switches hold packets. It logs the power
/// transitions (`wake_start`, `wake_done`, `sleep`).
#[derive(Clone, Debug)]
pub struct Powered<T> {
    pub device: Device,
    held: Vec<T>,
}

#[derive(Serialize)]
struct WakeLog {
    waiting: usize,
}

#[derive(Serialize)]
struct SleepLog {}

impl<T> Powered<T> {
    pub fn new(device: Device) -> Self {
        Powered {
            device,
            held: Vec::new(),
        }
    }

    /// Returns `item` if the device can take it now; otherwise holds it,
    /// and if the device was asleep, starts waking it: `wake_w` for `delay`,
    /// then a `WakeDone` timer.
    pub fn admit(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        item: T,
        wake_w: f64,
        delay: SimTime,
    ) -> Result<Option<T>, ModelError> {
        match self.device.state() {
            DevState::Idle | DevState::On => Ok(Some(item)),
            DevState::Waking => {
                self.held.push(item);
                Ok(None)
            }
            DevState::Sleep => {
                self.held.push(item);
                self.device.set(ctx.now(), DevState::Waking, wake_w);
                ctx.log("wake_start", &WakeLog { waiting: 1 });
                ctx.timer(delay, Msg::WakeDone)?;
                Ok(None)
            }
        }
    }

    /// An order to wake (an external program deciding the servers' power,
    /// protocol v3): if asleep, wakes as [`Powered::admit`] does for work,
    /// holding none. Returns whether it started waking.
    pub fn wake(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        wake_w: f64,
        delay: SimTime,
    ) -> Result<bool, ModelError> {
        if self.device.state() != DevState::Sleep {
            return Ok(false);
        }
        self.device.set(ctx.now(), DevState::Waking, wake_w);
        ctx.log("wake_start", &WakeLog { waiting: 0 });
        ctx.timer(delay, Msg::WakeDone)?;
        Ok(true)
    }

    /// The wake-up is over: the device is idle (`idle_w`) and gets back what
    /// it held, in arrival order.
    pub fn woke(&mut self, ctx: &mut Ctx<'_, Msg>, idle_w: f64) -> Vec<T> {
        ctx.log(
            "wake_done",
            &WakeLog {
                waiting: self.held.len(),
            },
        );
        self.device.set(ctx.now(), DevState::Idle, idle_w);
        std::mem::take(&mut self.held)
    }

    /// Nothing to do under the sleep policy: sleep at `sleep_w`.
    pub fn sleep(&mut self, ctx: &mut Ctx<'_, Msg>, sleep_w: f64) {
        self.device.set(ctx.now(), DevState::Sleep, sleep_w);
        ctx.log("sleep", &SleepLog {});
    }

    /// Work held for the wake-up.
    pub fn held(&self) -> &[T] {
        &self.held
    }

    /// Takes back the first held item `pick` chooses (a task preempted
    /// before its server woke up).
    pub fn take_held(&mut self, pick: impl Fn(&T) -> bool) -> Option<T> {
        let at = self.held.iter().position(pick)?;
        Some(self.held.remove(at))
    }
}
