//! The server list from a trace's machine table (`arrivals.machines`).
//!
//! Every machine the table adds becomes a server, with the capacity of its
//! first ADD (Google) or first row (Alibaba); later removals and capacity
//! updates are not replayed (the server list of a run is fixed). Machines
//! with the same capacity form one server type. Capacities are normalised
//! as the trace documents them and scaled like the tasks' requests:
//!
//! - `google-2011` `machine_events` (6 fields: timestamp, machine ID, event
//!   type 0 ADD / 1 REMOVE / 2 UPDATE, platform ID, CPUs, memory; both
//!   capacities normalised to the largest machine): cores = round(CPUs ×
//!   `cores_per_unit`), memory = memory × `gb_per_unit`. Machines whose ADD
//!   has no capacity are left out (counted).
//! - `google-2019` `machine_events` JSON lines (`time`, `machine_id`,
//!   `type` 1 ADD / 2 REMOVE / 3 UPDATE, `capacity.cpus`,
//!   `capacity.memory`): as 2011.
//! - `alibaba-2018*` `machine_meta` (7 fields: machine_id, time_stamp,
//!   failure_domain_1, failure_domain_2, cpu_num, mem_size, status):
//!   cores = cpu_num × `cores_per_unit`, memory = mem_size / 100 ×
//!   `gb_per_unit`.
//! - `swf`: the trace's own header, `MaxNodes` servers of `MaxProcs /
//!   MaxNodes` processors × `cores_per_unit` cores each; memory is the
//!   scenario server type's.
//!
//! Memory is bounded by the number of machines (a set of the machine IDs
//! seen), never by the file's length.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::common::{ImportError, TraceFormat};
use super::google2019::Resources;
use super::json::{Int, json_error, locate};
use super::lines::{Lines, Sep, split};
use super::swf;

/// Servers of one capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineClass {
    pub cores: u32,
    /// `None`: the scenario server type's memory (SWF).
    pub memory_gb: Option<f64>,
    pub count: u32,
}

/// The machines of a trace and what was left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Machines {
    /// By ascending cores, then memory.
    pub classes: Vec<MachineClass>,
    /// Machines added without a capacity.
    pub without_capacity: u64,
    /// Every machine id of an Alibaba `machine_meta` (the instance table's
    /// `machine_id`s should be among them); empty for other formats.
    pub ids: BTreeSet<String>,
}

const GOOGLE_2011_FIELDS: [&str; 6] = [
    "timestamp",
    "machine ID",
    "event type",
    "platform ID",
    "CPUs",
    "memory",
];

const ALIBABA_FIELDS: [&str; 7] = [
    "machine_id",
    "time_stamp",
    "failure_domain_1",
    "failure_domain_2",
    "cpu_num",
    "mem_size",
    "status",
];

#[derive(serde::Deserialize)]
struct MachineEvent {
    machine_id: Int,
    #[serde(rename = "type")]
    kind: Int,
    #[serde(default)]
    capacity: Option<Resources>,
}

/// Reads the machine table of `format` at `path` (`label` in errors).
pub fn read_machines(
    path: &Path,
    label: &str,
    format: TraceFormat,
    cores_per_unit: f64,
    gb_per_unit: f64,
) -> Result<Machines, ImportError> {
    let mut lines = Lines::open(path, label)?;
    read_from(&mut lines, format, cores_per_unit, gb_per_unit)
}

/// [`read_machines`] on lines already opened.
pub fn read_from(
    lines: &mut Lines,
    format: TraceFormat,
    cores_per_unit: f64,
    gb_per_unit: f64,
) -> Result<Machines, ImportError> {
    // (cores, memory bits) -> count; memory as bits keeps a total order.
    let mut classes: BTreeMap<(u32, u64), u32> = BTreeMap::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut without_capacity = 0;
    let mut ids: BTreeSet<String> = BTreeSet::new();
    let cores_of = |units: f64| -> u32 { (units * cores_per_unit).round().max(1.0) as u32 };
    let mut add = |id: String, cores: u32, memory: f64| {
        if seen.insert(id) {
            *classes.entry((cores, memory.to_bits())).or_default() += 1;
        }
    };
    match format {
        TraceFormat::Swf => {
            let (nodes, procs) = swf::header(lines)?;
            let Some(nodes) = nodes else {
                return Err(ImportError::File {
                    path: lines.path().to_string(),
                    problem: "the SWF header has no `; MaxNodes:` line to build servers from"
                        .into(),
                });
            };
            let per_node = procs.map_or(1.0, |p| p as f64 / nodes as f64);
            let count = u32::try_from(nodes).map_err(|_| ImportError::File {
                path: lines.path().to_string(),
                problem: format!("MaxNodes {nodes} is too many servers"),
            })?;
            return Ok(Machines {
                classes: vec![MachineClass {
                    cores: cores_of(per_node),
                    memory_gb: None,
                    count,
                }],
                without_capacity: 0,
                ids: BTreeSet::new(),
            });
        }
        TraceFormat::Google2011 => {
            let mut spans = Vec::new();
            while lines.next_line()? {
                if lines.buf.trim_ascii().is_empty() {
                    continue;
                }
                split(&lines.buf, Sep::Comma, &mut spans);
                let row = lines.row(&spans, &GOOGLE_2011_FIELDS);
                row.expect_fields()?;
                row.u64(0)?;
                let id = row.u64(1)?;
                let kind = row.u64(2)?;
                if kind > 2 {
                    return Err(row.err(2, format!("must be 0 (ADD), 1 or 2, got {kind}")));
                }
                let (cpu, mem) = (row.opt_f64(4)?, row.opt_f64(5)?);
                if kind != 0 {
                    continue;
                }
                match (cpu, mem) {
                    (Some(c), Some(m)) => add(id.to_string(), cores_of(c), m * gb_per_unit),
                    _ => without_capacity += 1,
                }
            }
        }
        TraceFormat::Google2019 => {
            while lines.next_line()? {
                if lines.buf.trim_ascii().is_empty() {
                    continue;
                }
                let (path, line) = (lines.path(), lines.line);
                let e: MachineEvent =
                    serde_json::from_slice(&lines.buf).map_err(|e| json_error(path, line, &e))?;
                let field_err = |field: &str, problem: &str| ImportError::Row {
                    path: path.to_string(),
                    line,
                    column: locate(&lines.buf, field),
                    problem: format!("field `{field}`: {problem}"),
                };
                let kind = e
                    .kind
                    .value()
                    .or(match &e.kind {
                        Int::Text(s) => ["", "ADD", "REMOVE", "UPDATE"]
                            .iter()
                            .position(|n| *n == s.trim())
                            .map(|p| p as i64),
                        Int::Num(_) => None,
                    })
                    .filter(|k| (0..=3).contains(k))
                    .ok_or_else(|| {
                        field_err("type", "must be 1 (ADD), 2 (REMOVE) or 3 (UPDATE)")
                    })?;
                let id = e
                    .machine_id
                    .value()
                    .ok_or_else(|| field_err("machine_id", "must be an integer"))?;
                if kind != 1 {
                    continue;
                }
                let cap = e.capacity.as_ref();
                match (cap.and_then(|c| c.cpus), cap.and_then(|c| c.memory)) {
                    (Some(c), Some(m))
                        if c.is_finite() && m.is_finite() && c >= 0.0 && m >= 0.0 =>
                    {
                        add(id.to_string(), cores_of(c), m * gb_per_unit)
                    }
                    (None, _) | (_, None) => without_capacity += 1,
                    _ => return Err(field_err("capacity", "must be non-negative numbers")),
                }
            }
        }
        TraceFormat::Alibaba2018 | TraceFormat::Alibaba2018Instance => {
            let mut spans = Vec::new();
            while lines.next_line()? {
                if lines.buf.trim_ascii().is_empty() {
                    continue;
                }
                split(&lines.buf, Sep::Comma, &mut spans);
                let row = lines.row(&spans, &ALIBABA_FIELDS);
                row.expect_fields()?;
                let id = row.text(0)?.to_string();
                ids.insert(id.clone());
                match (row.opt_u64(4)?, row.opt_f64(5)?) {
                    (Some(c), Some(m)) => {
                        if m > 100.0 {
                            return Err(row.err(5, "normalised memory must be from 0 to 100"));
                        }
                        add(id, cores_of(c as f64), m / 100.0 * gb_per_unit)
                    }
                    _ => without_capacity += 1,
                }
            }
        }
        TraceFormat::Csv | TraceFormat::AzureVm => {
            return Err(ImportError::File {
                path: lines.path().to_string(),
                problem: format!("format {:?} has no machine table", format.name()),
            });
        }
    }
    if classes.is_empty() {
        return Err(ImportError::File {
            path: lines.path().to_string(),
            problem: "the machine table adds no machine with a capacity".into(),
        });
    }
    Ok(Machines {
        classes: classes
            .into_iter()
            .map(|((cores, bits), count)| MachineClass {
                cores,
                memory_gb: Some(f64::from_bits(bits)),
                count,
            })
            .collect(),
        without_capacity,
        ids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machines(format: TraceFormat, text: &'static str) -> Result<Machines, ImportError> {
        let mut lines = Lines::new("m", Box::new(text.as_bytes()));
        read_from(&mut lines, format, 16.0, 64.0)
    }

    #[test]
    fn google_2011_machines_group_by_capacity() {
        let m = machines(
            TraceFormat::Google2011,
            "0,1,0,p,0.5,0.5\n0,2,0,p,0.5,0.5\n0,3,0,p,1,1\n5,2,1,,,\n6,2,0,p,0.5,0.5\n7,4,0,p,,\n",
        )
        .expect("good");
        assert_eq!(
            m.classes,
            vec![
                MachineClass {
                    cores: 8,
                    memory_gb: Some(32.0),
                    count: 2
                },
                MachineClass {
                    cores: 16,
                    memory_gb: Some(64.0),
                    count: 1
                }
            ]
        );
        assert_eq!(m.without_capacity, 1);
        let e = machines(TraceFormat::Google2011, "0,1,7,p,1,1\n").expect_err("bad type");
        assert!(
            e.to_string().starts_with("m:1:5: field 3 (event type)"),
            "{e}"
        );
    }

    #[test]
    fn google_2019_alibaba_and_swf_machines() {
        let m = machines(
            TraceFormat::Google2019,
            "{\"time\":\"0\",\"machine_id\":\"1\",\"type\":1,\"capacity\":{\"cpus\":0.5,\"memory\":0.25}}\n{\"time\":\"0\",\"machine_id\":\"2\",\"type\":\"ADD\",\"capacity\":{\"cpus\":0.5,\"memory\":0.25}}\n",
        )
        .expect("good");
        assert_eq!(m.classes.len(), 1);
        assert_eq!((m.classes[0].cores, m.classes[0].count), (8, 2));

        let m = machines(
            TraceFormat::Alibaba2018,
            "m_1,0,1,a,96,100,USING\nm_1,10,1,a,96,100,USING\nm_2,0,2,b,64,50,USING\n",
        )
        .expect("good");
        assert_eq!(
            m.classes
                .iter()
                .map(|c| (c.cores, c.memory_gb, c.count))
                .collect::<Vec<_>>(),
            vec![(1024, Some(32.0), 1), (1536, Some(64.0), 1)]
        );

        let m = machines(TraceFormat::Swf, "; MaxNodes: 4\n; MaxProcs: 8\n").expect("good");
        assert_eq!(
            m.classes,
            vec![MachineClass {
                cores: 32,
                memory_gb: None,
                count: 4
            }]
        );
    }
}
