//! `external`: a program outside dcemu places the tasks
//! (`[scheduler.external]`, docs/external-scheduler.md).

use dcemu_topology::SimTime;

use crate::config::ExternalConfig;
use crate::external::{
    Decision, Hello, HelloServer, Oracle, PROTOCOL, PlaceRequest, ProfileView, RngKey, ServerState,
    TaskView, decode_hello, decode_response,
};
use crate::kernel::{ActorRng, Metrics, ModelError};
use crate::scheduler::cluster_view::ServerSpec;

use super::{Choice, ClusterView, Placement, Request};

/// `external`: asks the program at every placement decision, over protocol
/// v1, where the task should run. The request carries what the scheduler
/// itself sees then (the task, its profile, the servers it may use with
/// their free slots, memory and latest reports, the position of the
/// scheduler's random stream); virtual time stands still while the program
/// thinks. Its answer is checked against that view: a decision on another
/// task, on a server that does not exist or has not the task's slots free,
/// or an answer to another request stops the run with an error naming the
/// program and the request, as does a program that exits, hangs past
/// `timeout` or writes what is not a response.
pub struct External {
    oracle: Option<Box<dyn Oracle>>,
    cfg: ExternalConfig,
    servers: Vec<HelloServer>,
    primary_aware: bool,
    greeted: bool,
    next_id: u64,
    now: SimTime,
    /// Virtual time the latest decision took.
    latency_ns: u64,
    /// The first failure; the program is not asked again after it.
    failed: Option<String>,
    reported: bool,
    round_trip_us: Vec<f64>,
}

impl External {
    /// The policy over `servers`, asking `oracle` (the program's runner;
    /// `None` when the model was built without one, which every request
    /// then reports).
    pub fn new(
        cfg: &ExternalConfig,
        servers: &[ServerSpec],
        oracle: Option<Box<dyn Oracle>>,
    ) -> Self {
        External {
            oracle,
            cfg: cfg.clone(),
            servers: servers
                .iter()
                .enumerate()
                .map(|(i, s)| HelloServer {
                    index: i as u32,
                    slots: s.slots,
                    cores: s.cores,
                    memory_mb: s.memory_mb,
                    class: s.class,
                    core_speed: s.core_speed,
                    idle_w: s.idle_w,
                    peak_w: s.peak_w,
                })
                .collect(),
            primary_aware: false,
            greeted: false,
            next_id: 1,
            now: 0,
            latency_ns: 0,
            failed: None,
            reported: false,
            round_trip_us: Vec::new(),
        }
    }

    fn exchange(&mut self, line: &str) -> Result<String, String> {
        let oracle = self
            .oracle
            .as_mut()
            .ok_or("no program runner was given to the model")?;
        let started = std::time::Instant::now();
        let answer = oracle.exchange(line);
        self.round_trip_us
            .push(started.elapsed().as_secs_f64() * 1e6);
        answer
    }

    fn greet(&mut self, rng: &ActorRng) -> Result<(), String> {
        let hello = Hello {
            kind: "hello",
            protocol: PROTOCOL,
            stages: &["placement"],
            servers: std::mem::take(&mut self.servers),
            rng: RngKey {
                key: rng.get_seed().iter().map(|b| format!("{b:02x}")).collect(),
                stream: rng.get_stream(),
            },
            primary_aware: self.primary_aware,
        };
        let line = serde_json::to_string(&hello).map_err(|e| e.to_string())?;
        self.servers = hello.servers;
        let reply = decode_hello(&self.exchange(&line)?)?;
        if reply.protocol != PROTOCOL {
            return Err(format!(
                "it speaks protocol v{}, dcemu speaks v{PROTOCOL}",
                reply.protocol
            ));
        }
        self.greeted = true;
        Ok(())
    }

    /// One request and its checked answer.
    fn ask(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Result<Option<Choice>, String> {
        if !self.greeted {
            self.primary_aware = cluster.primary_aware();
            self.greet(rng).map_err(|e| format!("hello: {e}"))?;
        }
        let id = self.next_id;
        self.next_id += 1;
        let what = format!("request {id} (place task {})", req.task.id);
        let word_pos = u64::try_from(rng.get_word_pos())
            .map_err(|_| format!("{what}: the random stream is past 2^64 words"))?;
        let all = cluster.servers();
        let servers: Vec<ServerState> = cluster
            .with_free()
            .iter()
            .filter(|&&i| req.may_use(i))
            .map(|&i| {
                let s = &all[i as usize];
                ServerState {
                    index: i,
                    free_slots: s.free,
                    free_memory_mb: s.memory_free_mb,
                    primary_room: (s.primary_room != u32::MAX).then_some(s.primary_room),
                    report: cluster.report(i).copied(),
                }
            })
            .collect();
        self.latency_ns = self.cfg.latency_ns(servers.len());
        let t = req.task;
        let request = PlaceRequest {
            kind: "place",
            id,
            time_ns: self.now,
            task: TaskView {
                id: t.id,
                priority: t.priority,
                cores: t.cores,
                memory_mb: t.memory_mb,
                service_ns: t.service_ns,
                flow_bps: t.flow_bps,
                app: t.app,
                submitted_ns: t.submitted_at,
                evictions: t.evictions,
            },
            profile: req.profile.map(|p| ProfileView {
                speed: p.speed.clone(),
                tolerated: p.tolerated.to_vec(),
                caused: p.caused.to_vec(),
            }),
            servers,
            rng_word_pos: word_pos,
        };
        let line = serde_json::to_string(&request).map_err(|e| format!("{what}: {e}"))?;
        let answer = self.exchange(&line).map_err(|e| format!("{what}: {e}"))?;
        let response = decode_response(&answer).map_err(|e| format!("{what}: {e}"))?;
        if response.id != id {
            return Err(format!(
                "{what}: the response answers request {} (stale or out of order: \
                 each request gets exactly one response, with its id)",
                response.id
            ));
        }
        if response.task != t.id {
            return Err(format!(
                "{what}: the response decides for task {}, which is not the task asked about",
                response.task
            ));
        }
        if let Some(pos) = response.rng_word_pos {
            if pos < word_pos {
                return Err(format!(
                    "{what}: rng_word_pos {pos} is behind the stream's position {word_pos} \
                     (a stream only moves forward)"
                ));
            }
            rng.set_word_pos(u128::from(pos));
        }
        let server = match response.decision {
            Decision::Wait => return Ok(None),
            Decision::Place { server } => server,
        };
        let Some(s) = all.get(server as usize) else {
            return Err(format!(
                "{what}: server {server} does not exist (servers are 0 to {})",
                all.len().saturating_sub(1)
            ));
        };
        if !req.may_use(server) {
            return Err(format!(
                "{what}: server {server} is not one the task may use now (not in the request)"
            ));
        }
        if !s.fits(t, false) {
            return Err(format!(
                "{what}: server {server} is not free for the task: it needs {} slot(s), \
                 the server has {} free{}",
                t.cores,
                s.free,
                if s.primary_room == u32::MAX {
                    String::new()
                } else {
                    format!(" and its primary tenant leaves room for {}", s.primary_room)
                }
            ));
        }
        Ok(Some(Choice::clean(server)))
    }
}

impl Placement for External {
    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        if self.failed.is_some() {
            return None;
        }
        match self.ask(req, cluster, rng) {
            Ok(choice) => choice,
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }

    /// The program may read the servers' reports.
    fn reads_reports(&self) -> bool {
        true
    }

    fn at(&mut self, now: SimTime) {
        self.now = now;
    }

    fn decision_latency(&self) -> u64 {
        self.latency_ns
    }

    fn take_error(&mut self) -> Option<ModelError> {
        if self.reported {
            return None;
        }
        let problem = self.failed.as_ref()?;
        self.reported = true;
        let program = self
            .oracle
            .as_ref()
            .map_or_else(|| self.cfg.shown(), |o| o.program());
        Some(ModelError::External(format!(
            "external scheduler `{program}`: {problem}"
        )))
    }

    /// Wall time of each exchange with the program (`run.json` only).
    fn finish(&self, out: &mut Metrics) {
        if !self.round_trip_us.is_empty() {
            out.append_wall_samples("external_round_trip_us", self.round_trip_us.clone());
        }
    }
}
