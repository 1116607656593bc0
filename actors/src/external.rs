//! Protocols v1, v2 and v3 of the external scheduler
//! (docs/external-scheduler.md): the messages dcemu writes to the program,
//! the decoder of what it answers,
//! and [`Oracle`], the one exchange the model asks of whatever runs the
//! program. Pure data: no process, no pipe, no clock here (the process
//! lives in `dcemu::external`), so the model stays sans-IO and a run's
//! results depend only on what the program answers.

use serde::{Deserialize, Serialize};

use crate::config::ExternalStage;
use crate::net::ServerReport;

/// The highest protocol version dcemu speaks. v1 hands out the placement
/// stage (`place` requests); v2 adds the preemption stage (`preempt`
/// requests, answered with an `evict`); v3 the servers' power (each
/// server's `power` state in requests, `power` orders in responses) and
/// migrations (the running tasks in requests, `migrate` orders), and the
/// paths of the tasks' flows (each candidate path in requests, a `path`
/// with a placement).
pub const PROTOCOL: u32 = 3;

/// The version dcemu offers in its `hello` for `stages`: the lowest that
/// carries them, so that a v1 program keeps running unchanged wherever v1
/// suffices. The program must answer with the version offered.
pub fn protocol_for(stages: &[ExternalStage]) -> u32 {
    if stages.contains(&ExternalStage::Power)
        || stages.contains(&ExternalStage::Migration)
        || stages.contains(&ExternalStage::Network)
    {
        3
    } else if stages.contains(&ExternalStage::Preemption) {
        2
    } else {
        1
    }
}

/// Longest line dcemu reads from the program, in bytes (a response is a few
/// dozen; this bounds what a runaway program makes dcemu buffer).
pub const MAX_LINE: usize = 1 << 20;

/// What runs the program: one line out, one line back. The model calls it
/// at a decision point, with virtual time standing still until it returns.
pub trait Oracle: Send {
    /// The program as the scenario names it, for error messages.
    fn program(&self) -> String;

    /// Writes `line` (one JSON object, no newline) to the program and
    /// returns the line it answers (without its newline). Errors say what
    /// went wrong with the program itself: it exited, it hung past the
    /// timeout, it closed its output, it wrote a line too long.
    fn exchange(&mut self, line: &str) -> Result<String, String>;
}

/// Builds an [`Oracle`] for a scenario's `[scheduler.external]`; the model
/// builder calls it once, for the scheduler actor. Nothing may start before
/// the first [`Oracle::exchange`]: every process of a multi-process run
/// builds the whole model, and only the one hosting the scheduler asks.
pub type OracleFactory<'a> = &'a (dyn Fn() -> Box<dyn Oracle> + Sync);

/// The first message: who dcemu is and what the program will be asked.
#[derive(Debug, Serialize)]
pub struct Hello<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub protocol: u32,
    pub stages: &'a [&'a str],
    /// Each server's configuration, by index (requests name servers by it).
    pub servers: Vec<HelloServer>,
    /// The scheduler's random stream: ChaCha8 (rand_chacha 0.9's
    /// `ChaCha8Rng`) with this 32-byte key (hex) and stream number.
    pub rng: RngKey,
    /// Whether a server's room is bounded by what its primary tenant
    /// uses and reserves (then `primary_room` appears once it reported).
    pub primary_aware: bool,
}

#[derive(Debug, Serialize)]
pub struct HelloServer {
    pub index: u32,
    pub slots: u32,
    pub cores: u32,
    pub memory_mb: u64,
    /// Index of its configuration (server type), as in a profile's `speed`.
    pub class: usize,
    pub core_speed: f64,
    pub idle_w: f64,
    pub peak_w: f64,
}

#[derive(Debug, Serialize)]
pub struct RngKey {
    pub key: String,
    pub stream: u64,
}

/// A placement request: where should `task` run now?
#[derive(Debug, Serialize)]
pub struct PlaceRequest {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: u64,
    pub time_ns: u64,
    pub task: TaskView,
    /// The task's classification (Paragon §2) when classification ran.
    pub profile: Option<ProfileView>,
    /// The servers the task may use now that have a free slot, in the
    /// scheduler's order (deterministic, not sorted).
    pub servers: Vec<ServerState>,
    /// v3 with the migration stage: every task the scheduler placed and
    /// has not heard the end of, by id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<Vec<PlacedView>>,
    /// Position (in 32-bit words) of the scheduler's random stream.
    pub rng_word_pos: u64,
}

/// A decision point when servers went idle (v3 with the power or the
/// migration stage): no task to place, only servers the scheduler has
/// just seen empty (their last task ended, was killed or moved away, by
/// its own messages), so that the program may put them to sleep or move
/// tasks at once rather than at the next arrival (the thesis's SLP
/// sleeps a server as soon as it is idle, §4.2.4). The answer carries
/// only `power` and `migrate` orders ([`IdleResponse`]).
#[derive(Debug, Serialize)]
pub struct IdleRequest {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: u64,
    pub time_ns: u64,
    /// The servers that just went idle, by index, ascending.
    pub idle: Vec<u32>,
    /// Every server with a free slot, in the scheduler's order, as in a
    /// `place` request (without its task's pools: there is no task).
    pub servers: Vec<ServerState>,
    /// With the migration stage: every placed task, as in `place`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<Vec<PlacedView>>,
    /// Tasks waiting in the scheduler's queue.
    pub queued: u64,
    pub rng_word_pos: u64,
}

/// A placed task as the scheduler knows it (v3's `running`).
#[derive(Debug, Serialize)]
pub struct PlacedView {
    pub id: u64,
    pub server: u32,
    /// When it was dispatched there (or its migration there began).
    pub since_ns: u64,
    pub cores: u32,
    pub memory_mb: u64,
    /// Whether a migration of it is under way (it may not move again yet).
    pub migrating: bool,
}

/// What the scheduler knows of a task.
#[derive(Debug, Serialize)]
pub struct TaskView {
    pub id: u64,
    pub priority: u8,
    pub cores: u32,
    pub memory_mb: u64,
    /// The work it declares: its time alone on one core of speed 1.
    pub service_ns: u64,
    pub flow_bps: u64,
    /// Its catalog application, if it is one.
    pub app: Option<u32>,
    pub submitted_ns: u64,
    pub evictions: u32,
}

#[derive(Debug, Serialize)]
pub struct ProfileView {
    pub speed: Vec<f64>,
    pub tolerated: Vec<f64>,
    pub caused: Vec<f64>,
}

/// A server as the scheduler sees it at the request.
#[derive(Debug, Serialize)]
pub struct ServerState {
    pub index: u32,
    pub free_slots: u32,
    pub free_memory_mb: u64,
    /// Slots its primary tenant leaves (its latest report), when the view
    /// is primary-aware and it reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_room: Option<u32>,
    /// Its latest report, if it sent one.
    pub report: Option<ServerReport>,
    /// In a `preempt` request (v2): the tasks running there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<Vec<RunningView>>,
    /// v3: its power state as the scheduler knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerView>,
    /// v3: the primary tenant that owns it, if one does (public
    /// configuration, harvesting §3: primary tenants own servers, and
    /// theirs never sleep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,
    /// v3 with the network stage, for a task with a flow: every path its
    /// flow could take from a core switch down to this server (thesis
    /// §4.2.2), in dcemu's order; a placement may name one by its index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<PathView>>,
}

/// A path a task's flow could take to a server, as a request shows it.
#[derive(Debug, Serialize)]
pub struct PathView {
    /// The switches it crosses, from the core switch down to the server's
    /// access switch.
    pub switches: Vec<String>,
    /// The bandwidth free on its busiest link, bits per second, after the
    /// reservations the scheduler holds.
    pub free_bps: u64,
}

/// A server's power state as the scheduler knows it (v3): from the orders
/// it sent and the wake-ups the servers told it of, never from the
/// server's own state (thesis §4.2.4's on / sleep / waking).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerView {
    /// Powered (idle or working): a dispatch runs at once.
    Awake,
    /// Put to sleep by an order of the program (it may still be on its
    /// way): a dispatch or a `wake` order wakes it.
    Asleep,
    /// Woken by a dispatch or a `wake` order; awake once it says so.
    Waking,
}

impl PowerView {
    pub fn name(self) -> &'static str {
        match self {
            PowerView::Awake => "awake",
            PowerView::Asleep => "asleep",
            PowerView::Waking => "waking",
        }
    }
}

/// A preemption request (v2): `task` found no free slot it may take, and
/// the preemption stage admits victims for it; which one goes, if any?
#[derive(Debug, Serialize)]
pub struct PreemptRequest {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: u64,
    pub time_ns: u64,
    pub task: TaskView,
    pub profile: Option<ProfileView>,
    /// Every server with a task running there, by index, each with
    /// `running`.
    pub servers: Vec<ServerState>,
    pub rng_word_pos: u64,
}

/// A running task as the scheduler sees it (v2's `preempt`).
#[derive(Debug, Serialize)]
pub struct RunningView {
    pub id: u64,
    pub priority: u8,
    /// When its current execution started (an evicted task restarts).
    pub started_ns: u64,
    pub cores: u32,
    pub memory_mb: u64,
    /// Whether the preemption stage admits it as a victim for the task of
    /// the request (its rules: a lower priority, evictable, on a server the
    /// task may use).
    pub admissible: bool,
}

/// What the program decided for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub id: u64,
    pub task: u64,
    pub decision: Decision,
    /// Running tasks to evict so that the task starts in their slot (v2,
    /// with `place`, answering a `preempt` request).
    pub evict: Vec<Evict>,
    /// Where the scheduler's random stream stands after the program's
    /// draws (absent: it drew nothing).
    pub rng_word_pos: Option<u64>,
    /// v3: servers to put to sleep or wake, in the order given.
    pub power: Vec<PowerOrder>,
    /// v3: running tasks to move to other servers, in the order given.
    pub migrate: Vec<MigrateOrder>,
    /// v3 with the network stage: with `place`, the index (in the chosen
    /// server's `paths`) of the path the task's flow reserves.
    pub path: Option<u32>,
}

/// What the program answers an [`IdleRequest`]: orders only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleResponse {
    pub id: u64,
    pub rng_word_pos: Option<u64>,
    pub power: Vec<PowerOrder>,
    pub migrate: Vec<MigrateOrder>,
}

/// One migration the program decided (v3): move running `task` to
/// `server` with its progress (Paragon §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrateOrder {
    pub task: u64,
    pub server: u32,
}

/// One power decision of the program (v3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PowerOrder {
    pub server: u32,
    /// `true`: put it to sleep; `false`: wake it.
    pub sleep: bool,
}

/// One eviction the program decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evict {
    pub task: u64,
    /// Why, in the program's words (error messages quote it; results do
    /// not hold it, so that equal decisions give equal results).
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Start the task on the server of this index.
    Place { server: u32 },
    /// Leave it queued until something changes.
    Wait,
}

/// The program's `hello`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloReply {
    pub protocol: u32,
    pub name: Option<String>,
    /// v2: which running tasks its `preempt` requests list.
    pub preempt_lists: PreemptLists,
}

/// Which running tasks a `preempt` request lists (v2), as the program asks
/// in its `hello`: a program that only ever evicts an admissible task need
/// not read the others, and a request over a large cluster shrinks to the
/// servers that hold one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PreemptLists {
    /// Every running task, the admissible ones marked (the default).
    #[default]
    All,
    /// Only the admissible ones, on the servers that hold one.
    Admissible,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponse {
    id: u64,
    task: u64,
    decision: String,
    #[serde(default)]
    server: Option<u32>,
    #[serde(default)]
    evict: Option<Vec<RawEvict>>,
    #[serde(default)]
    rng_word_pos: Option<u64>,
    #[serde(default)]
    power: Option<Vec<RawPower>>,
    #[serde(default)]
    migrate: Option<Vec<RawMigrate>>,
    #[serde(default)]
    path: Option<u32>,
}

/// An answer to an `idle` request as read: the fields of a placement
/// decision are read too, so that a program that sends one gets told
/// why it may not rather than "unknown field".
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdleResponse {
    id: u64,
    #[serde(default)]
    task: Option<u64>,
    #[serde(default)]
    decision: Option<String>,
    #[serde(default)]
    server: Option<u32>,
    #[serde(default)]
    evict: Option<Vec<RawEvict>>,
    #[serde(default)]
    rng_word_pos: Option<u64>,
    #[serde(default)]
    power: Option<Vec<RawPower>>,
    #[serde(default)]
    migrate: Option<Vec<RawMigrate>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMigrate {
    task: u64,
    server: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPower {
    server: u32,
    to: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvict {
    task: u64,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHello {
    #[serde(rename = "type")]
    kind: String,
    protocol: u32,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    preempt_lists: Option<String>,
}

/// Decodes one response line; the error says what is wrong with it.
pub fn decode_response(line: &str) -> Result<Response, String> {
    let raw: RawResponse = serde_json::from_str(line).map_err(|e| not_json(line, &e))?;
    let decision = match (raw.decision.as_str(), raw.server) {
        ("place", Some(server)) => Decision::Place { server },
        ("place", None) => return Err("decision \"place\" without a \"server\"".into()),
        ("wait", None) => Decision::Wait,
        ("wait", Some(_)) => return Err("decision \"wait\" with a \"server\"".into()),
        (other, _) => {
            return Err(format!(
                "unknown decision {:?} (protocol v{PROTOCOL} knows \"place\" and \"wait\")",
                shorten(other)
            ));
        }
    };
    let evict: Vec<Evict> = raw
        .evict
        .unwrap_or_default()
        .into_iter()
        .map(|e| Evict {
            task: e.task,
            reason: e.reason,
        })
        .collect();
    if decision == Decision::Wait && !evict.is_empty() {
        return Err("decision \"wait\" with an \"evict\" (evictions go with \"place\")".into());
    }
    if decision == Decision::Wait && raw.path.is_some() {
        return Err("decision \"wait\" with a \"path\" (a path goes with \"place\")".into());
    }
    Ok(Response {
        id: raw.id,
        task: raw.task,
        decision,
        evict,
        rng_word_pos: raw.rng_word_pos,
        power: power_orders(raw.power)?,
        migrate: migrate_orders(raw.migrate),
        path: raw.path,
    })
}

/// Decodes the answer to an `idle` request: `power` and `migrate` orders
/// (and `rng_word_pos`) only. A placement decision in it (`decision`,
/// `task`, `server`, `evict`) is refused with its own message: at an idle
/// point there is no task to place or to make room for.
pub fn decode_idle_response(line: &str) -> Result<IdleResponse, String> {
    let raw: RawIdleResponse = serde_json::from_str(line).map_err(|e| not_json(line, &e))?;
    let decided = match (&raw.decision, raw.server, &raw.evict, raw.task) {
        (_, _, Some(_), _) => Some("evicts".to_string()),
        (Some(d), _, _, _) => Some(format!("has a decision ({:?})", shorten(d))),
        (None, Some(server), _, _) => Some(format!("places on server {server}")),
        (None, None, None, Some(task)) => Some(format!("decides for task {task}")),
        (None, None, None, None) => None,
    };
    if let Some(decided) = decided {
        return Err(format!(
            "the response {decided}, but an \"idle\" request has no task to place or evict: \
             its answer carries only \"power\" and \"migrate\" orders (and \"rng_word_pos\")"
        ));
    }
    Ok(IdleResponse {
        id: raw.id,
        rng_word_pos: raw.rng_word_pos,
        power: power_orders(raw.power)?,
        migrate: migrate_orders(raw.migrate),
    })
}

/// The answer to an `idle` request as a program writes it: what
/// [`decode_idle_response`] reads back to the same [`IdleResponse`].
pub fn encode_idle_response(r: &IdleResponse) -> String {
    let mut v = serde_json::json!({ "id": r.id });
    if let Some(pos) = r.rng_word_pos {
        v["rng_word_pos"] = pos.into();
    }
    encode_orders(&mut v, &r.power, &r.migrate);
    v.to_string()
}

fn power_orders(raw: Option<Vec<RawPower>>) -> Result<Vec<PowerOrder>, String> {
    raw.unwrap_or_default()
        .into_iter()
        .map(|p| match p.to.as_str() {
            "sleep" => Ok(PowerOrder {
                server: p.server,
                sleep: true,
            }),
            "wake" => Ok(PowerOrder {
                server: p.server,
                sleep: false,
            }),
            other => Err(format!(
                "power order for server {}: \"to\" must be \"sleep\" or \"wake\", got {:?}",
                p.server,
                shorten(other)
            )),
        })
        .collect()
}

fn migrate_orders(raw: Option<Vec<RawMigrate>>) -> Vec<MigrateOrder> {
    raw.unwrap_or_default()
        .into_iter()
        .map(|m| MigrateOrder {
            task: m.task,
            server: m.server,
        })
        .collect()
}

/// Adds `power` and `migrate` to a response being encoded, when any.
fn encode_orders(v: &mut serde_json::Value, power: &[PowerOrder], migrate: &[MigrateOrder]) {
    if !power.is_empty() {
        let power: Vec<serde_json::Value> = power
            .iter()
            .map(|p| {
                let to = if p.sleep { "sleep" } else { "wake" };
                serde_json::json!({ "server": p.server, "to": to })
            })
            .collect();
        v["power"] = power.into();
    }
    if !migrate.is_empty() {
        let migrate: Vec<serde_json::Value> = migrate
            .iter()
            .map(|m| serde_json::json!({ "task": m.task, "server": m.server }))
            .collect();
        v["migrate"] = migrate.into();
    }
}

/// A response as a program writes it: what [`decode_response`] reads back
/// to the same [`Response`].
pub fn encode_response(r: &Response) -> String {
    let mut v = serde_json::json!({ "id": r.id, "task": r.task });
    match r.decision {
        Decision::Place { server } => {
            v["decision"] = "place".into();
            v["server"] = server.into();
            if let Some(path) = r.path {
                v["path"] = path.into();
            }
        }
        Decision::Wait => v["decision"] = "wait".into(),
    }
    if !r.evict.is_empty() {
        let evict: Vec<serde_json::Value> = r
            .evict
            .iter()
            .map(|e| match &e.reason {
                Some(reason) => serde_json::json!({ "task": e.task, "reason": reason }),
                None => serde_json::json!({ "task": e.task }),
            })
            .collect();
        v["evict"] = evict.into();
    }
    if let Some(pos) = r.rng_word_pos {
        v["rng_word_pos"] = pos.into();
    }
    encode_orders(&mut v, &r.power, &r.migrate);
    v.to_string()
}

/// Decodes the program's `hello` line.
pub fn decode_hello(line: &str) -> Result<HelloReply, String> {
    let raw: RawHello = serde_json::from_str(line).map_err(|e| not_json(line, &e))?;
    if raw.kind != "hello" {
        return Err(format!(
            "expected {{\"type\": \"hello\", ...}} first, got type {:?}",
            shorten(&raw.kind)
        ));
    }
    let preempt_lists = match raw.preempt_lists.as_deref() {
        None | Some("all") => PreemptLists::All,
        Some("admissible") => PreemptLists::Admissible,
        Some(other) => {
            return Err(format!(
                "\"preempt_lists\" must be \"all\" or \"admissible\", got {:?}",
                shorten(other)
            ));
        }
    };
    Ok(HelloReply {
        protocol: raw.protocol,
        name: raw.name,
        preempt_lists,
    })
}

fn not_json(line: &str, e: &serde_json::Error) -> String {
    format!("malformed response {:?}: {e}", shorten(line))
}

/// `s` cut to 120 characters for an error message.
fn shorten(s: &str) -> String {
    match s.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v1 or v2 request is what it was before v3: no `power`, no
    /// `running`; a v3 one carries them.
    #[test]
    fn v3_fields_appear_only_when_set() {
        let request = |power, running| PlaceRequest {
            kind: "place",
            id: 1,
            time_ns: 5,
            task: TaskView {
                id: 0,
                priority: 0,
                cores: 1,
                memory_mb: 0,
                service_ns: 9,
                flow_bps: 0,
                app: None,
                submitted_ns: 4,
                evictions: 0,
            },
            profile: None,
            servers: vec![ServerState {
                index: 0,
                free_slots: 2,
                free_memory_mb: 64,
                primary_room: None,
                report: None,
                running: None,
                power,
                primary: None,
                paths: None,
            }],
            running,
            rng_word_pos: 0,
        };
        let v1 = serde_json::to_string(&request(None, None)).unwrap_or_default();
        assert_eq!(
            v1,
            r#"{"type":"place","id":1,"time_ns":5,"task":{"id":0,"priority":0,"cores":1,"memory_mb":0,"service_ns":9,"flow_bps":0,"app":null,"submitted_ns":4,"evictions":0},"profile":null,"servers":[{"index":0,"free_slots":2,"free_memory_mb":64,"report":null}],"rng_word_pos":0}"#
        );
        let placed = PlacedView {
            id: 3,
            server: 0,
            since_ns: 1,
            cores: 1,
            memory_mb: 0,
            migrating: false,
        };
        let v3 = serde_json::to_string(&request(Some(PowerView::Asleep), Some(vec![placed])))
            .unwrap_or_default();
        assert!(v3.contains(r#""report":null,"power":"asleep"}"#), "{v3}");
        assert!(
            v3.contains(r#""running":[{"id":3,"server":0,"since_ns":1,"cores":1,"memory_mb":0,"migrating":false}],"rng_word_pos":0"#),
            "{v3}"
        );
    }

    #[test]
    fn decodes_place_and_wait_and_names_what_is_wrong() {
        let r = decode_response(r#"{"id": 3, "task": 9, "decision": "place", "server": 2}"#);
        assert_eq!(
            r,
            Ok(Response {
                id: 3,
                task: 9,
                decision: Decision::Place { server: 2 },
                evict: Vec::new(),
                rng_word_pos: None,
                power: Vec::new(),
                migrate: Vec::new(),
                path: None,
            })
        );
        let r = decode_response(r#"{"id":5,"task":9,"decision":"place","server":1,"path":3}"#);
        assert_eq!(r.as_ref().map(|r| r.path), Ok(Some(3)));
        if let Ok(r) = r {
            assert_eq!(decode_response(&encode_response(&r)), Ok(r));
        }
        let r = decode_response(
            r#"{"id":4,"task":9,"decision":"place","server":1,"evict":[{"task":7,"reason":"mrs"}]}"#,
        );
        assert_eq!(
            r.as_ref().map(|r| r.evict.clone()),
            Ok(vec![Evict {
                task: 7,
                reason: Some("mrs".into())
            }])
        );
        if let Ok(r) = r {
            assert_eq!(decode_response(&encode_response(&r)), Ok(r));
        }
        let r = decode_response(r#"{"id":3,"task":9,"decision":"wait","rng_word_pos":17}"#);
        assert_eq!(
            r.map(|r| (r.decision, r.rng_word_pos)),
            Ok((Decision::Wait, Some(17)))
        );
        let e = |l: &str| decode_response(l).unwrap_err();
        assert!(e("{not json").starts_with("malformed response"));
        assert!(
            e(r#"{"id":1,"task":1,"decision":"evict"}"#).contains("unknown decision \"evict\"")
        );
        assert!(e(r#"{"id":1,"task":1,"decision":"place"}"#).contains("without a \"server\""));
        assert!(e(r#"{"id":1,"task":1,"decision":"wait","server":1}"#).contains("with a"));
        assert!(e(r#"{"id":1,"task":1,"decision":"wait","sever":1}"#).contains("unknown field"));
        assert!(e(r#"{"id":-1,"task":1,"decision":"wait"}"#).starts_with("malformed"));
        assert!(e(r#"{"id":1,"task":1,"decision":"wait","evict":[{"task":2}]}"#).contains("evict"));
        assert!(
            e(r#"{"id":1,"task":1,"decision":"place","server":0,"evict":[{"tsk":2}]}"#)
                .contains("unknown field")
        );
        let r = decode_response(
            r#"{"id":5,"task":9,"decision":"wait","power":[{"server":2,"to":"sleep"},{"server":0,"to":"wake"}]}"#,
        );
        assert_eq!(
            r.as_ref().map(|r| r.power.clone()),
            Ok(vec![
                PowerOrder {
                    server: 2,
                    sleep: true
                },
                PowerOrder {
                    server: 0,
                    sleep: false
                }
            ])
        );
        if let Ok(r) = r {
            assert_eq!(decode_response(&encode_response(&r)), Ok(r));
        }
        assert!(
            e(r#"{"id":1,"task":1,"decision":"wait","power":[{"server":1,"to":"off"}]}"#).contains(
                "power order for server 1: \"to\" must be \"sleep\" or \"wake\", got \"off\""
            )
        );
        assert!(
            e(r#"{"id":1,"task":1,"decision":"wait","power":[{"server":1}]}"#)
                .contains("missing field `to`")
        );
        assert!(
            e(r#"{"id":1,"task":1,"decision":"wait","power":[{"server":1,"to":"wake","at":3}]}"#)
                .contains("unknown field")
        );
        let r = decode_response(
            r#"{"id":6,"task":9,"decision":"place","server":1,"migrate":[{"task":3,"server":2}]}"#,
        );
        assert_eq!(
            r.as_ref().map(|r| r.migrate.clone()),
            Ok(vec![MigrateOrder { task: 3, server: 2 }])
        );
        if let Ok(r) = r {
            assert_eq!(decode_response(&encode_response(&r)), Ok(r));
        }
        assert!(
            e(r#"{"id":1,"task":1,"decision":"wait","migrate":[{"task":3}]}"#)
                .contains("missing field `server`")
        );
        assert!(decode_hello(r#"{"type":"place","protocol":1}"#).is_err());
        assert_eq!(
            decode_hello(r#"{"type":"hello","protocol":1,"name":"ll"}"#),
            Ok(HelloReply {
                protocol: 1,
                name: Some("ll".into()),
                preempt_lists: PreemptLists::All,
            })
        );
        assert_eq!(
            decode_hello(r#"{"type":"hello","protocol":2,"preempt_lists":"admissible"}"#)
                .map(|h| h.preempt_lists),
            Ok(PreemptLists::Admissible)
        );
        let bad = decode_hello(r#"{"type":"hello","protocol":2,"preempt_lists":"some"}"#);
        assert!(
            bad.as_ref()
                .is_err_and(|e| e.contains("\"preempt_lists\" must be \"all\" or \"admissible\"")),
            "{bad:?}"
        );
    }

    #[test]
    fn an_idle_answer_takes_orders_only_and_names_a_placement_in_it() {
        let r = decode_idle_response(
            r#"{"id":7,"power":[{"server":2,"to":"sleep"}],"migrate":[{"task":3,"server":1}],"rng_word_pos":9}"#,
        );
        assert_eq!(
            r,
            Ok(IdleResponse {
                id: 7,
                rng_word_pos: Some(9),
                power: vec![PowerOrder {
                    server: 2,
                    sleep: true
                }],
                migrate: vec![MigrateOrder { task: 3, server: 1 }],
            })
        );
        if let Ok(r) = r {
            assert_eq!(decode_idle_response(&encode_idle_response(&r)), Ok(r));
        }
        assert_eq!(
            decode_idle_response(r#"{"id":8}"#).map(|r| r.power.len() + r.migrate.len()),
            Ok(0),
            "no orders"
        );
        let e = |l: &str| decode_idle_response(l).unwrap_err();
        let only = "but an \"idle\" request has no task to place or evict";
        for (line, says) in [
            (
                r#"{"id":1,"task":4,"decision":"place","server":0}"#,
                "has a decision (\"place\")",
            ),
            (r#"{"id":1,"server":0}"#, "places on server 0"),
            (r#"{"id":1,"evict":[{"task":2}]}"#, "evicts"),
            (r#"{"id":1,"task":4}"#, "decides for task 4"),
            (r#"{"id":1,"decision":"wait"}"#, "has a decision (\"wait\")"),
        ] {
            let err = e(line);
            assert!(err.contains(says) && err.contains(only), "{line}: {err}");
        }
        assert!(e(r#"{"id":1,"sleep":[0]}"#).contains("unknown field"));
        assert!(e(r#"{"id":1,"power":[{"server":0,"to":"nap"}]}"#).contains("got \"nap\""));
    }
}
