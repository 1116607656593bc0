//! The history of a count that changes by one at a time (devices powering
//! on and going to sleep), packed into a few bytes a change.
//!
//! A GEMS day has tens of millions of switch wake-ups and sleeps, and the
//! mission datacenter at 100,000 servers 150 million in an hour; the exact
//! maximum of the powered count needs every change until the end of the
//! run, so the size of one change is what bounds such a run's memory.
//!
//! A change is `time << 1 | up` (packed values sort by time, decreases
//! first at equal times). One device records its changes in time order, so
//! they are held as runs of non-decreasing packed values, each stored as
//! LEB128 varints of the differences (two or three bytes for a switch that
//! sleeps between packets, against eight). A history gathered from many
//! devices is a list of runs, read back in sorted order a window of time
//! at a time: nothing is concatenated, and no more than a window's changes
//! are ever held unpacked.

use dcemu_topology::SimTime;
use serde::{Deserialize, Serialize};

/// One change of a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The count goes down by one.
    Down,
    /// The count goes up by one.
    Up,
}

/// Latest time a change can carry: one bit of the 64 holds the direction.
pub const LAST_STEP_TIME: SimTime = u64::MAX >> 1;

/// Changes `(time, ±1)`, read back ([`Steps::iter`]) ordered by time,
/// decreases first at equal times: the order in which a sweep never counts
/// a device twice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steps {
    runs: Vec<Run>,
}

/// Non-decreasing packed changes, as varint differences from the previous
/// one (the first from 0). Equal when they hold the same changes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Run {
    bytes: Vec<u8>,
    len: u64,
    /// Where the run can still grow: its last value, and the value and
    /// encoded length before it (to take a zero-length on-period back).
    /// Not sent: a received run is closed.
    #[serde(skip)]
    tail: Option<Tail>,
}

impl PartialEq for Run {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.bytes == other.bytes
    }
}
impl Eq for Run {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tail {
    last: u64,
    last_len: u8,
    before: Option<u64>,
}

fn packed(t: SimTime, step: Step) -> u64 {
    t.min(LAST_STEP_TIME) << 1 | u64::from(step == Step::Up)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) -> u8 {
    let mut n = 0;
    loop {
        n += 1;
        if v < 0x80 {
            out.push(v as u8);
            return n;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
}

/// The varint at `bytes[*at..]`, advancing `at`; `None` at the end or on a
/// truncated or overlong one (a peer's bytes end the run there).
fn get_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl Run {
    fn push(&mut self, value: u64) -> bool {
        let tail = match self.tail {
            Some(t) if value >= t.last => t,
            None if self.len == 0 => Tail {
                last: 0,
                last_len: 0,
                before: None,
            },
            _ => return false,
        };
        let last_len = put_varint(&mut self.bytes, value - tail.last);
        self.len += 1;
        self.tail = Some(Tail {
            last: value,
            last_len,
            before: (self.len > 1).then_some(tail.last),
        });
        true
    }

    /// Takes back the last change if it is `value`.
    fn pop_if(&mut self, value: u64) -> bool {
        match self.tail {
            Some(Tail {
                last,
                last_len,
                before: Some(before),
            }) if last == value => {
                self.bytes
                    .truncate(self.bytes.len() - usize::from(last_len));
                self.len -= 1;
                self.tail = Some(Tail {
                    last: before,
                    last_len: 0,
                    before: None,
                });
                true
            }
            Some(Tail {
                last, before: None, ..
            }) if last == value && self.len == 1 => {
                self.bytes.clear();
                self.len = 0;
                self.tail = None;
                true
            }
            _ => false,
        }
    }

    fn iter(&self) -> RunIter<'_> {
        RunIter {
            bytes: &self.bytes,
            at: 0,
            value: 0,
        }
    }
}

struct RunIter<'a> {
    bytes: &'a [u8],
    at: usize,
    value: u64,
}

impl Iterator for RunIter<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let delta = get_varint(self.bytes, &mut self.at)?;
        self.value = self.value.saturating_add(delta);
        Some(self.value)
    }
}

fn unpack(p: u64) -> (SimTime, i64) {
    (p >> 1, if p & 1 == 1 { 1 } else { -1 })
}

impl Steps {
    /// Heap bytes these changes hold (what `work.csv`'s `held_bytes`
    /// counts for a device's power history).
    pub fn heap_bytes(&self) -> usize {
        self.runs.capacity() * std::mem::size_of::<Run>()
            + self.runs.iter().map(|r| r.bytes.capacity()).sum::<usize>()
    }

    /// Records `step` at `t` (clamped to [`LAST_STEP_TIME`], 292 years).
    /// A decrease at the very time of the increase just recorded takes that
    /// increase back instead: an on-period of no length changes neither the
    /// count's time-weighted mean, nor its maximum (decreases come first at
    /// equal times), nor its value at any instant after the changes there.
    pub fn push(&mut self, t: SimTime, step: Step) {
        let value = packed(t, step);
        if step == Step::Down
            && self
                .runs
                .last_mut()
                .is_some_and(|run| run.pop_if(value | 1))
        {
            if self.runs.last().is_some_and(|r| r.len == 0) {
                self.runs.pop();
            }
            return;
        }
        if !self.runs.last_mut().is_some_and(|run| run.push(value)) {
            let mut run = Run::default();
            run.push(value);
            self.runs.push(run);
        }
    }

    /// The changes as `(time, delta)`, by time, decreases first at equal
    /// times.
    pub fn iter(&self) -> impl Iterator<Item = (SimTime, i64)> + '_ {
        Merged::new(&self.runs).map(unpack)
    }

    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.len as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.iter().all(|r| r.len == 0)
    }

    /// Adds `other`'s changes (its runs move over; nothing is copied).
    pub fn append(&mut self, mut other: Steps) {
        for run in &mut other.runs {
            run.tail = None;
            run.bytes.shrink_to_fit();
        }
        if self.runs.is_empty() {
            self.runs = other.runs;
        } else {
            self.runs.append(&mut other.runs);
        }
    }

    /// Bytes held for the changes.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.runs.iter().map(|r| r.bytes.len()).sum()
    }
}

/// How many changes [`Merged`] aims to sort at a time.
const WINDOW_CHANGES: usize = 1 << 20;

/// The runs' values in one sorted sequence. A single run is read straight;
/// several are read a window of time at a time: every run's values below
/// the window's end go into a buffer, which is sorted and emitted, and the
/// window widens or narrows to keep about [`WINDOW_CHANGES`] in it. Memory
/// stays at one window's changes, and sorting small buffers is several
/// times faster than a heap over 100,000 runs.
enum Merged<'a> {
    One(RunIter<'a>),
    Many(Windows<'a>),
}

struct Windows<'a> {
    /// Each run with its next value, if any.
    runs: Vec<(RunIter<'a>, Option<u64>)>,
    buffer: Vec<u64>,
    at: usize,
    /// Packed width of the next window.
    step: u64,
}

impl<'a> Merged<'a> {
    fn new(runs: &'a [Run]) -> Self {
        if let [run] = runs {
            return Merged::One(run.iter());
        }
        Merged::Many(Windows {
            runs: runs
                .iter()
                .map(|r| {
                    let mut it = r.iter();
                    let first = it.next();
                    (it, first)
                })
                .collect(),
            buffer: Vec::new(),
            at: 0,
            step: 1 << 20,
        })
    }
}

impl Windows<'_> {
    /// Fills the buffer with the next window's values, sorted; false when
    /// every run is read.
    fn refill(&mut self) -> bool {
        self.buffer.clear();
        self.at = 0;
        let Some(start) = self.runs.iter().filter_map(|r| r.1).min() else {
            return false;
        };
        let end = start.saturating_add(self.step);
        for (it, next) in &mut self.runs {
            while let Some(v) = *next {
                if v >= end && end != u64::MAX {
                    break;
                }
                self.buffer.push(v);
                *next = it.next();
            }
        }
        self.buffer.sort_unstable();
        let n = self.buffer.len();
        if n < WINDOW_CHANGES / 2 {
            self.step = self.step.saturating_mul(2);
        } else if n > WINDOW_CHANGES * 2 {
            self.step = (self.step / 2).max(1);
        }
        true
    }
}

impl Iterator for Merged<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        match self {
            Merged::One(it) => it.next(),
            Merged::Many(w) => {
                while w.at >= w.buffer.len() {
                    if !w.refill() {
                        return None;
                    }
                }
                w.at += 1;
                Some(w.buffer[w.at - 1])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_read_back_sorted_decreases_first() {
        let mut s = Steps::default();
        s.push(7, Step::Up);
        s.push(3, Step::Up);
        s.push(7, Step::Down);
        s.push(0, Step::Down);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [(0, -1), (3, 1), (7, -1), (7, 1)]
        );
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn the_latest_time_survives_and_later_ones_clamp() {
        let mut s = Steps::default();
        s.push(LAST_STEP_TIME, Step::Down);
        s.push(u64::MAX, Step::Up);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [(LAST_STEP_TIME, -1), (LAST_STEP_TIME, 1)]
        );
    }

    /// A device's history in time order is one run of a few bytes a change,
    /// and an on-period of no length is taken back, however often.
    #[test]
    fn a_device_history_packs_and_drops_empty_on_periods() {
        let mut s = Steps::default();
        s.push(0, Step::Up);
        let mut t = 0;
        for i in 0..1000u64 {
            t += 1_000 + i;
            s.push(t, Step::Down);
            t += 20_000;
            s.push(t, Step::Up);
            s.push(t, Step::Down);
            s.push(t, Step::Up);
        }
        assert_eq!(s.runs.len(), 1);
        assert_eq!(s.len(), 2001);
        assert!(s.bytes() <= 3 * 2001, "{} bytes", s.bytes());
        let v: Vec<_> = s.iter().collect();
        assert_eq!(v[0], (0, 1));
        assert!(v.windows(2).all(|w| w[0].1 != w[1].1), "alternates");
        let mut single = Steps::default();
        single.push(5, Step::Up);
        single.push(5, Step::Down);
        assert!(single.is_empty() && single.iter().next().is_none());
    }

    /// Gathered from many devices, the changes come back as one sorted
    /// sequence, as sorting their concatenation would give.
    #[test]
    fn appended_histories_merge_into_the_sorted_sequence() {
        let mut all = Steps::default();
        let mut expected = Vec::new();
        for device in 0..50u64 {
            let mut s = Steps::default();
            let mut t = device * 7;
            for k in 0..40u64 {
                let step = if k % 2 == 0 { Step::Up } else { Step::Down };
                s.push(t, step);
                expected.push(packed(t, step));
                t += 1 + (device * 31 + k * 17) % 97;
            }
            all.append(s);
        }
        expected.sort_unstable();
        let got: Vec<_> = all.iter().collect();
        assert_eq!(got, expected.into_iter().map(unpack).collect::<Vec<_>>());
    }

    #[test]
    fn a_run_survives_the_wire_and_bad_bytes_end_it_without_a_panic() {
        let mut s = Steps::default();
        for t in [1u64, 5, 1 << 40, 1 << 62] {
            s.push(t, Step::Up);
        }
        let text = serde_json::to_string(&s).unwrap();
        let back: Steps = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back.iter().collect::<Vec<_>>(),
            s.iter().collect::<Vec<_>>()
        );
        let bad = Steps {
            runs: vec![Run {
                bytes: vec![0x01, 0x81],
                len: 9,
                tail: None,
            }],
        };
        assert_eq!(bad.iter().collect::<Vec<_>>(), [(0, 1)]);
        let overlong = Steps {
            runs: vec![Run {
                bytes: vec![0xff; 12],
                len: 1,
                tail: None,
            }],
        };
        assert!(overlong.iter().next().is_none());
    }
}
