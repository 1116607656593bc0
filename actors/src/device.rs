//! Power state of a server or switch: on / idle / sleep plus the waking
//! transition (thesis §4.2.4, §6.2.5, Figure 6.6), with its energy meter.

use dcemu_topology::{EnergyMeter, SimTime};

use crate::kernel::Metrics;

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
}

/// State, energy and the history `*_on` metrics are computed from.
#[derive(Clone, Debug)]
pub struct Device {
    state: DevState,
    meter: EnergyMeter,
    wake_ups: u64,
    /// `(time, +1 | -1)` each time the device becomes powered or goes to sleep.
    transitions: Vec<(SimTime, i64)>,
}

impl Device {
    pub fn new(state: DevState, watts: f64) -> Self {
        let transitions = if state.powered() {
            vec![(0, 1)]
        } else {
            Vec::new()
        };
        Device {
            state,
            meter: EnergyMeter::new(0, watts),
            wake_ups: 0,
            transitions,
        }
    }

    pub fn state(&self) -> DevState {
        self.state
    }

    /// Moves to `state` drawing `watts` from `now` on.
    pub fn set(&mut self, now: SimTime, state: DevState, watts: f64) {
        match (self.state.powered(), state.powered()) {
            (false, true) => self.transitions.push((now, 1)),
            (true, false) => self.transitions.push((now, -1)),
            _ => {}
        }
        if self.state == DevState::Sleep && state == DevState::Waking {
            self.wake_ups += 1;
        }
        self.state = state;
        self.meter.set(now, watts);
    }

    /// Adds energy (J), wake-ups and on/off history under the given metric names.
    pub fn report(
        &self,
        end: SimTime,
        out: &mut Metrics,
        energy: &'static str,
        wake_ups: &'static str,
        on: &'static str,
    ) {
        out.add_f64(energy, self.meter.joules_at(end));
        out.add(wake_ups, self.wake_ups);
        out.declare_steps(on);
        for &(t, d) in &self.transitions {
            out.step(on, t, d);
        }
    }
}
