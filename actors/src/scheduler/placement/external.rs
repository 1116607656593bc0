//! `external`: a program outside dcemu places the tasks, with protocol v2
//! picks the victims of the preemption stage (also beside a built-in
//! placement, which then places), and with v3 puts servers to sleep and
//! wakes them (`[scheduler.external]`, docs/external-scheduler.md).

use std::collections::BTreeMap;

use dcemu_topology::{Route, SimTime};

use crate::config::{ExternalConfig, ExternalStage, PrimaryTenantConfig};
use crate::external::{
    Decision, Hello, HelloServer, IdleRequest, MigrateOrder, Oracle, PathView, PlaceRequest,
    PlacedView, PowerOrder, PowerView, PreemptLists, PreemptRequest, ProfileView, Response, RngKey,
    RunningView, ServerState, TaskView, decode_hello, decode_idle_response, decode_response,
    protocol_for,
};
use crate::kernel::{ActorRng, Metrics, ModelError};
use crate::scheduler::cluster_view::ServerSpec;

use super::{Choice, ClusterView, PathOption, PlacedTask, Placement, Request, RunningTask};
use crate::scheduler::annealing::AnnealingStage;
use crate::scheduler::energy::EnergyStage;

/// `external`: asks the program at every placement decision where the task
/// should run (protocol v1's `place`), and, when it decides the preemption
/// stage too (v2), which admissible victim a task that found no free slot
/// evicts (`preempt`); under v3 its answers may also order servers to
/// sleep or wake and running tasks to move (power and migration stages),
/// each order checked against the view as the placement is. The request
/// carries what the scheduler
/// itself sees then (the task, its profile, the servers it may use with
/// their free slots, memory and latest reports, the position of the
/// scheduler's random stream); virtual time stands still while the program
/// thinks. Its answer is checked against that view: a decision on another
/// task, on a server that does not exist or has not the task's slots free,
/// or an answer to another request stops the run with an error naming the
/// program and the request, as does a program that exits, hangs past
/// `timeout` or writes what is not a response.
///
/// With `stages = ["preemption"]` alone the program decides no placement:
/// a built-in placement (`inner`, the scenario's `placement`) places every
/// task and keeps its own reading of reports and its own victim criterion,
/// and the program is asked only `preempt` requests. One [`Placement`]
/// either way, so the preemption stage composes with every other stage as
/// a placement that picks victims does.
pub struct External {
    oracle: Option<Box<dyn Oracle>>,
    /// The built-in placement beside a program that does not decide
    /// placement (`None`: the program places).
    inner: Option<Box<dyn Placement>>,
    cfg: ExternalConfig,
    /// The version offered in `hello` ([`protocol_for`] its stages).
    protocol: u32,
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
    /// The latest response's power orders (v3), checked, until the
    /// scheduler takes them ([`Placement::take_power`]).
    orders: Vec<PowerOrder>,
    /// The tasks placed at the latest request (v3's migration stage).
    running: Vec<PlacedTask>,
    /// The latest response's migrations (v3), checked, until the
    /// scheduler takes them ([`Placement::take_migrations`]).
    migrations: Vec<MigrateOrder>,
    /// v3: the primary tenant owning each server, by index (public
    /// configuration); empty under v1 and v2, whose requests do not show it.
    owners: Vec<Option<String>>,
    /// Which running tasks `preempt` requests list, as the program's
    /// `hello` asked.
    preempt_lists: PreemptLists,
    /// v3's network stage: the paths offered for the task of the next
    /// request, by server ([`Placement::set_paths`]).
    paths: BTreeMap<u32, Vec<PathOption>>,
    /// The path the latest response named, checked, until the scheduler
    /// takes it ([`Placement::take_path`]).
    path: Option<Route>,
}

impl External {
    /// The policy over `servers`, whose first ones the `primaries` own
    /// in order, asking `oracle` (the program's runner; `None` when the
    /// model was built without one, which every request then reports);
    /// `inner` places when the program does not decide placement.
    pub fn new(
        cfg: &ExternalConfig,
        servers: &[ServerSpec],
        primaries: &[PrimaryTenantConfig],
        oracle: Option<Box<dyn Oracle>>,
        inner: Option<Box<dyn Placement>>,
    ) -> Self {
        let protocol = protocol_for(&cfg.stages);
        let owners = if protocol >= 3 {
            let owned = primaries
                .iter()
                .flat_map(|p| std::iter::repeat_n(Some(p.name.clone()), p.servers as usize));
            owned
                .chain(std::iter::repeat(None))
                .take(servers.len())
                .collect()
        } else {
            Vec::new()
        };
        External {
            owners,
            preempt_lists: PreemptLists::All,
            oracle,
            inner,
            protocol,
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
            orders: Vec::new(),
            running: Vec::new(),
            migrations: Vec::new(),
            paths: BTreeMap::new(),
            path: None,
        }
    }

    fn decides_migration(&self) -> bool {
        self.cfg.stages.contains(&ExternalStage::Migration)
    }

    /// Checks the response's migrations against the tasks placed and the
    /// view (the task the response places on `placed` counted), and keeps
    /// them for the scheduler. Each must move a task placed and not
    /// migrating, once, to another server that exists and has the task's
    /// slots free.
    fn check_migrations(
        &mut self,
        what: &str,
        migrate: &[MigrateOrder],
        placed: Option<(u32, u32)>,
        cluster: &ClusterView,
    ) -> Result<(), String> {
        if migrate.is_empty() {
            return Ok(());
        }
        if !self.decides_migration() {
            return Err(format!(
                "{what}: the response has \"migrate\" orders, but this session does not hand \
                 out migrations (protocol v{}; they are v3's, with scheduler.external.stages = \
                 [\"placement\", \"migration\"])",
                self.protocol
            ));
        }
        let all = cluster.servers();
        let mut taken: Vec<(u32, u32)> = placed.into_iter().collect();
        for (k, order) in migrate.iter().enumerate() {
            let (t, to) = (order.task, order.server);
            if migrate[..k].iter().any(|o| o.task == t) {
                return Err(format!(
                    "{what}: migrate orders name task {t} twice (one move per task and response)"
                ));
            }
            let Ok(at) = self.running.binary_search_by_key(&t, |r| r.task) else {
                return Err(format!(
                    "{what}: it migrates task {t}, which is not running (not in the request's \
                     \"running\")"
                ));
            };
            let r = self.running[at];
            if r.migrating {
                return Err(format!(
                    "{what}: it migrates task {t}, which is already migrating"
                ));
            }
            let Some(s) = all.get(to as usize) else {
                return Err(format!(
                    "{what}: migrate order: server {to} does not exist (servers are 0 to {})",
                    all.len().saturating_sub(1)
                ));
            };
            if to == r.server {
                return Err(format!(
                    "{what}: it migrates task {t} to server {to}, where it already runs"
                ));
            }
            let more: u32 = taken.iter().filter(|x| x.0 == to).map(|x| x.1).sum();
            let need = s.slots_for(r.cores);
            if s.free < more.saturating_add(need) {
                return Err(format!(
                    "{what}: it migrates task {t} to server {to}, which has not its {need} slot(s) \
                     free: {} free, {more} of them taken by this response",
                    s.free
                ));
            }
            taken.push((to, need));
        }
        self.migrations = migrate.to_vec();
        Ok(())
    }

    /// Whether requests carry power states and responses may order
    /// servers to sleep or wake (v3).
    fn decides_power(&self) -> bool {
        self.cfg.stages.contains(&ExternalStage::Power)
    }

    /// Checks the response's power orders against the scheduler's view
    /// (and the task the response itself places on `placed`), and keeps
    /// them for the scheduler. Each order must name a server that exists,
    /// once; a server to sleep must be awake with nothing the scheduler
    /// handed out there; a server to wake must be asleep.
    fn check_power(
        &mut self,
        what: &str,
        power: &[PowerOrder],
        placed: Option<u32>,
        cluster: &ClusterView,
    ) -> Result<(), String> {
        if power.is_empty() {
            return Ok(());
        }
        if !self.decides_power() {
            return Err(format!(
                "{what}: the response has \"power\" orders, but this session speaks protocol \
                 v{}: power orders are v3's (scheduler.external.stages = [\"placement\", \
                 \"power\"])",
                self.protocol
            ));
        }
        let all = cluster.servers();
        for (k, order) in power.iter().enumerate() {
            let i = order.server;
            let Some(s) = all.get(i as usize) else {
                return Err(format!(
                    "{what}: power order: server {i} does not exist (servers are 0 to {})",
                    all.len().saturating_sub(1)
                ));
            };
            if power[..k].iter().any(|o| o.server == i) {
                return Err(format!(
                    "{what}: power orders name server {i} twice (one order per server and \
                     response)"
                ));
            }
            let state = cluster.power(i).unwrap_or(PowerView::Awake);
            let owner = self.owner(i);
            let problem = match (order.sleep, state) {
                (true, _) if owner.is_some() => Some(format!(
                    "primary tenant {:?} owns it (its servers never sleep: they serve it \
                     first, harvesting §3; requests show it as \"primary\")",
                    owner.unwrap_or_default()
                )),
                (true, PowerView::Asleep) => Some("it is already asleep".to_string()),
                (true, PowerView::Waking) => Some(
                    "it is waking (it may sleep once a request shows it \"awake\")".to_string(),
                ),
                (true, PowerView::Awake) if placed == Some(i) => {
                    Some("the response places the task on it".to_string())
                }
                (true, PowerView::Awake) if s.free < s.slots => Some(format!(
                    "it has tasks running or on their way ({} of its {} slots taken)",
                    s.slots - s.free,
                    s.slots
                )),
                (false, PowerView::Awake) => {
                    Some("it is awake (only an asleep server wakes)".to_string())
                }
                (false, PowerView::Waking) => Some("it is already waking".to_string()),
                _ => None,
            };
            if let Some(problem) = problem {
                let verb = if order.sleep { "sleep" } else { "wake" };
                return Err(format!(
                    "{what}: power order: server {i} cannot {verb}: {problem}"
                ));
            }
        }
        self.orders = power.to_vec();
        Ok(())
    }

    fn decides_network(&self) -> bool {
        self.cfg.stages.contains(&ExternalStage::Network)
    }

    /// The paths a `place` request shows for server `i`: with the network
    /// stage, for a task with a flow.
    fn path_views(&self, i: u32, task: &crate::task::Task) -> Option<Vec<PathView>> {
        (self.decides_network() && task.flow_bps > 0).then(|| {
            self.paths.get(&i).map_or_else(Vec::new, |options| {
                options
                    .iter()
                    .map(|o| PathView {
                        switches: o.switches.clone(),
                        free_bps: o.free_bps,
                    })
                    .collect()
            })
        })
    }

    /// Checks the path `k` a response names for `task` on `server` and
    /// keeps it for the scheduler: the network stage is handed out, the
    /// task has a flow, the request listed the path, and the path has the
    /// flow's bandwidth free.
    fn check_path(
        &mut self,
        what: &str,
        task: &crate::task::Task,
        server: u32,
        k: u32,
    ) -> Result<(), String> {
        if !self.decides_network() {
            return Err(format!(
                "{what}: the response names a \"path\", but paths are the network stage's, \
                 which this session does not hand out (scheduler.external.stages = \
                 [\"placement\", \"network\"], protocol v3)"
            ));
        }
        if task.flow_bps == 0 {
            return Err(format!(
                "{what}: the response names path {k}, but task {} has no flow (flow_bps 0): \
                 only a task with a flow reserves a path",
                task.id
            ));
        }
        let options = self.paths.get(&server).map_or(&[][..], Vec::as_slice);
        let Some(option) = options.get(k as usize) else {
            return Err(format!(
                "{what}: path {k} to server {server} does not exist (the request lists {} \
                 path(s) to it{})",
                options.len(),
                match options.len() {
                    0 => String::new(),
                    n => format!(", 0 to {}", n - 1),
                }
            ));
        };
        if option.free_bps < task.flow_bps {
            return Err(format!(
                "{what}: path {k} to server {server} ({}) has {} bps free, but the task's flow \
                 needs {} bps",
                option.switches.join(" > "),
                option.free_bps,
                task.flow_bps
            ));
        }
        self.path = Some(option.route);
        Ok(())
    }

    fn decides_preemption(&self) -> bool {
        self.cfg.stages.contains(&ExternalStage::Preemption)
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
        let stages: Vec<&str> = self.cfg.stages.iter().map(|s| s.name()).collect();
        let hello = Hello {
            kind: "hello",
            protocol: self.protocol,
            stages: &stages,
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
        if reply.protocol != self.protocol {
            return Err(format!(
                "it speaks protocol v{}, dcemu speaks v{} for the stages {:?} (answer with \
                 the version the hello offers)",
                reply.protocol,
                self.protocol,
                stages.join(", ")
            ));
        }
        if reply.preempt_lists != PreemptLists::All && !self.decides_preemption() {
            return Err(format!(
                "its hello asks for \"preempt_lists\", but this session sends no \"preempt\" \
                 request (stages {:?}; they come with \"preemption\", protocol v2)",
                stages.join(", ")
            ));
        }
        self.preempt_lists = reply.preempt_lists;
        self.greeted = true;
        Ok(())
    }

    /// Greets the program if it was not yet, and numbers the next request:
    /// its id, how errors name it, and the random stream's position.
    fn open(
        &mut self,
        about: &str,
        cluster: &ClusterView,
        rng: &ActorRng,
    ) -> Result<(u64, String, u64), String> {
        if !self.greeted {
            self.primary_aware = cluster.primary_aware();
            self.greet(rng).map_err(|e| format!("hello: {e}"))?;
        }
        let id = self.next_id;
        self.next_id += 1;
        let what = format!("request {id} ({about})");
        let word_pos = u64::try_from(rng.get_word_pos())
            .map_err(|_| format!("{what}: the random stream is past 2^64 words"))?;
        Ok((id, what, word_pos))
    }

    /// Sends `line`, decodes the answer and checks that it answers request
    /// `id` about `task`; moves the random stream where it says.
    fn answer(
        &mut self,
        line: &str,
        (id, what, word_pos): (u64, &str, u64),
        task: u64,
        rng: &mut ActorRng,
    ) -> Result<Response, String> {
        let answer = self.exchange(line).map_err(|e| format!("{what}: {e}"))?;
        let response = decode_response(&answer).map_err(|e| format!("{what}: {e}"))?;
        answers_request(what, id, response.id)?;
        if response.task != task {
            return Err(format!(
                "{what}: the response decides for task {}, which is not the task asked about",
                response.task
            ));
        }
        follow_stream(what, word_pos, response.rng_word_pos, rng)?;
        Ok(response)
    }

    /// One placement request and its checked answer.
    fn ask(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Result<Option<Choice>, String> {
        let t = req.task;
        self.path = None;
        let (id, what, word_pos) = self.open(&format!("place task {}", t.id), cluster, rng)?;
        let all = cluster.servers();
        let servers: Vec<ServerState> = cluster
            .with_free()
            .iter()
            .filter(|&&i| req.may_use(i))
            .map(|&i| ServerState {
                paths: self.path_views(i, t),
                ..self.server_state(cluster, i, None)
            })
            .collect();
        self.latency_ns = self.cfg.latency_ns(servers.len());
        let request = PlaceRequest {
            kind: "place",
            id,
            time_ns: self.now,
            task: task_view(t),
            profile: profile_view(req),
            servers,
            running: self.running_view(),
            rng_word_pos: word_pos,
        };
        let line = serde_json::to_string(&request).map_err(|e| format!("{what}: {e}"))?;
        let response = self.answer(&line, (id, &what, word_pos), t.id, rng)?;
        if !response.evict.is_empty() {
            return Err(format!(
                "{what}: the response evicts, but evictions answer only a \"preempt\" request \
                 (a task that found no free slot; stages [\"placement\", \"preemption\"], \
                 protocol v2)"
            ));
        }
        let server = match response.decision {
            Decision::Wait => {
                self.check_power(&what, &response.power, None, cluster)?;
                self.check_migrations(&what, &response.migrate, None, cluster)?;
                return Ok(None);
            }
            Decision::Place { server } => server,
        };
        let Some(s) = all.get(server as usize) else {
            return Err(no_server(&what, server, all.len()));
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
                s.slots_for(t.cores),
                s.free,
                if s.primary_room == u32::MAX {
                    String::new()
                } else {
                    format!(" and its primary tenant leaves room for {}", s.primary_room)
                }
            ));
        }
        if let Some(k) = response.path {
            self.check_path(&what, t, server, k)?;
        }
        self.check_power(&what, &response.power, Some(server), cluster)?;
        let starts = Some((server, s.slots_for(t.cores)));
        self.check_migrations(&what, &response.migrate, starts, cluster)?;
        Ok(Some(Choice::clean(server)))
    }

    /// The primary tenant owning server `i` (v3; `None` under v1 and v2).
    fn owner(&self, i: u32) -> Option<&str> {
        self.owners.get(i as usize).and_then(Option::as_deref)
    }

    /// A server of `cluster` as a request shows it (its power state only
    /// when the view follows power states, its primary tenant only under
    /// v3).
    fn server_state(
        &self,
        cluster: &ClusterView,
        i: u32,
        running: Option<Vec<RunningView>>,
    ) -> ServerState {
        let s = &cluster.servers()[i as usize];
        ServerState {
            index: i,
            free_slots: s.free,
            free_memory_mb: s.memory_free_mb,
            primary_room: (s.primary_room != u32::MAX).then_some(s.primary_room),
            report: cluster.report(i).copied(),
            running,
            power: cluster.power(i),
            primary: self.owner(i).map(str::to_string),
            paths: None,
        }
    }

    /// The placed tasks as a request shows them, with the migration stage.
    fn running_view(&self) -> Option<Vec<PlacedView>> {
        self.decides_migration().then(|| {
            self.running
                .iter()
                .map(|r| PlacedView {
                    id: r.task,
                    server: r.server,
                    since_ns: r.since,
                    cores: r.cores,
                    memory_mb: r.memory_mb,
                    migrating: r.migrating,
                })
                .collect()
        })
    }

    /// One `idle` request (v3) and its checked answer: orders only,
    /// checked as a `wait`'s are.
    fn ask_idle(
        &mut self,
        idle: &[u32],
        queued: usize,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Result<(), String> {
        let (id, what, word_pos) = self.open(&idle_label(idle), cluster, rng)?;
        let servers: Vec<ServerState> = cluster
            .with_free()
            .iter()
            .map(|&i| self.server_state(cluster, i, None))
            .collect();
        self.latency_ns = self.cfg.latency_ns(servers.len());
        let request = IdleRequest {
            kind: "idle",
            id,
            time_ns: self.now,
            idle: idle.to_vec(),
            servers,
            running: self.running_view(),
            queued: queued as u64,
            rng_word_pos: word_pos,
        };
        let line = serde_json::to_string(&request).map_err(|e| format!("{what}: {e}"))?;
        let answer = self.exchange(&line).map_err(|e| format!("{what}: {e}"))?;
        let response = decode_idle_response(&answer).map_err(|e| format!("{what}: {e}"))?;
        answers_request(&what, id, response.id)?;
        follow_stream(&what, word_pos, response.rng_word_pos, rng)?;
        self.check_power(&what, &response.power, None, cluster)?;
        self.check_migrations(&what, &response.migrate, None, cluster)
    }

    /// One preemption request (v2) and its checked answer: an index into
    /// `running` of an admissible victim on the server named, or `None`.
    fn ask_victim(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        running: &[RunningTask],
        rng: &mut ActorRng,
    ) -> Result<Option<usize>, String> {
        let t = req.task;
        let (id, what, word_pos) = self.open(&format!("preempt task {}", t.id), cluster, rng)?;
        let mut servers: Vec<ServerState> = Vec::new();
        let listed = running
            .iter()
            .filter(|r| self.preempt_lists == PreemptLists::All || r.admissible);
        for r in listed {
            let view = RunningView {
                id: r.task,
                priority: r.priority,
                started_ns: r.started,
                cores: r.cores,
                memory_mb: r.memory_mb,
                admissible: r.admissible,
            };
            match servers.last_mut() {
                Some(s) if s.index == r.server => {
                    if let Some(list) = s.running.as_mut() {
                        list.push(view);
                    }
                }
                _ => servers.push(self.server_state(cluster, r.server, Some(vec![view]))),
            }
        }
        self.latency_ns = self.cfg.latency_ns(servers.len());
        let request = PreemptRequest {
            kind: "preempt",
            id,
            time_ns: self.now,
            task: task_view(t),
            profile: profile_view(req),
            servers,
            rng_word_pos: word_pos,
        };
        let line = serde_json::to_string(&request).map_err(|e| format!("{what}: {e}"))?;
        let response = self.answer(&line, (id, &what, word_pos), t.id, rng)?;
        if response.path.is_some() {
            return Err(format!(
                "{what}: the response names a \"path\", but a \"preempt\" answer does not \
                 choose one: the task takes its victim's slot and its flow dcemu's path (paths \
                 go with the answers to \"place\" requests)"
            ));
        }
        let server = match response.decision {
            Decision::Wait => {
                self.check_power(&what, &response.power, None, cluster)?;
                self.check_migrations(&what, &response.migrate, None, cluster)?;
                return Ok(None);
            }
            Decision::Place { server } => server,
        };
        let count = cluster.servers().len();
        if server as usize >= count {
            return Err(no_server(&what, server, count));
        }
        let victim = match response.evict.as_slice() {
            [one] => one,
            [] => {
                return Err(format!(
                    "{what}: decision \"place\" on server {server} evicts nothing: a task that \
                     found no free slot starts only in the slot of the task it evicts \
                     (\"evict\": [{{\"task\": ...}}])"
                ));
            }
            more => {
                return Err(format!(
                    "{what}: the response evicts {} tasks: a task takes one slot, so it \
                     evicts one",
                    more.len()
                ));
            }
        };
        let said = victim
            .reason
            .as_deref()
            .map_or_else(String::new, |r| format!(" (its reason: {:?})", shorten(r)));
        let Some(k) = running.iter().position(|r| r.task == victim.task) else {
            return Err(format!(
                "{what}: it evicts task {}, which is not running{said}",
                victim.task
            ));
        };
        let r = &running[k];
        if r.server != server {
            return Err(format!(
                "{what}: it evicts task {} on server {server}, but the task runs on server {}{said}",
                r.task, r.server
            ));
        }
        if !r.admissible {
            return Err(format!(
                "{what}: task {} (priority {}) may not be evicted for task {} (priority {}): \
                 the preemption stage admits only the tasks the request marks \"admissible\" \
                 (a lower priority than the task's, evictable, on a server it may use){said}",
                r.task, r.priority, t.id, t.priority
            ));
        }
        if response.migrate.iter().any(|m| m.task == r.task) {
            return Err(format!(
                "{what}: it evicts task {} and migrates it: an evicted task stops, it cannot \
                 also move",
                r.task
            ));
        }
        self.check_power(&what, &response.power, Some(server), cluster)?;
        self.check_migrations(&what, &response.migrate, None, cluster)?;
        Ok(Some(k))
    }
}

/// How errors name an `idle` request: `idle: server 3`, `idle: servers
/// 2, 5` (the first eight, then how many more).
fn idle_label(idle: &[u32]) -> String {
    let shown: Vec<String> = idle.iter().take(8).map(u32::to_string).collect();
    let more = match idle.len().saturating_sub(8) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let noun = if idle.len() == 1 { "server" } else { "servers" };
    format!("idle: {noun} {}{more}", shown.join(", "))
}

fn task_view(t: &crate::task::Task) -> TaskView {
    TaskView {
        id: t.id,
        priority: t.priority,
        cores: t.cores,
        memory_mb: t.memory_mb,
        service_ns: t.service_ns,
        flow_bps: t.flow_bps,
        app: t.app,
        submitted_ns: t.submitted_at,
        evictions: t.evictions,
    }
}

fn profile_view(req: &Request<'_>) -> Option<ProfileView> {
    req.profile.map(|p| ProfileView {
        speed: p.speed.clone(),
        tolerated: p.tolerated.to_vec(),
        caused: p.caused.to_vec(),
    })
}

fn no_server(what: &str, server: u32, count: usize) -> String {
    format!(
        "{what}: server {server} does not exist (servers are 0 to {})",
        count.saturating_sub(1)
    )
}

/// `s` cut to 80 characters for an error message.
fn shorten(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl Placement for External {
    fn name(&self) -> &str {
        "external"
    }

    /// The inner placement's stage, when the program decides preemption
    /// only beside one that has a stage of its own.
    fn energy(&mut self) -> Option<&mut EnergyStage> {
        self.inner.as_mut().and_then(|p| p.energy())
    }

    fn energy_ref(&self) -> Option<&EnergyStage> {
        self.inner.as_ref().and_then(|p| p.energy_ref())
    }

    fn annealing(&mut self) -> Option<&mut AnnealingStage> {
        self.inner.as_mut().and_then(|p| p.annealing())
    }

    fn annealing_ref(&self) -> Option<&AnnealingStage> {
        self.inner.as_ref().and_then(|p| p.annealing_ref())
    }

    /// The program's placement, or the built-in's beside a program that
    /// decides only preemption (its latency then, not the latest
    /// `preempt`'s).
    fn place(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        rng: &mut ActorRng,
    ) -> Option<Choice> {
        if let Some(inner) = self.inner.as_mut() {
            let choice = inner.place(req, cluster, rng);
            self.latency_ns = inner.decision_latency();
            return choice;
        }
        if self.failed.is_some() {
            return None;
        }
        let asked = self.ask(req, cluster, rng);
        self.paths.clear();
        match asked {
            Ok(choice) => choice,
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }

    /// Under v2 the program scores victims: it picks them
    /// ([`Placement::pick_victim`]); else a built-in placement beside it
    /// may.
    fn scores_victims(&self) -> bool {
        self.decides_preemption() || self.inner.as_ref().is_some_and(|p| p.scores_victims())
    }

    fn choose_victim(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        options: &[super::VictimOption],
    ) -> Option<usize> {
        self.inner
            .as_mut()
            .and_then(|p| p.choose_victim(req, cluster, options))
    }

    fn observe(&mut self, server: u32, cluster: &ClusterView, now: SimTime, rng: &mut ActorRng) {
        if let Some(inner) = self.inner.as_mut() {
            inner.observe(server, cluster, now, rng);
        }
    }

    fn take_logs(&mut self) -> Vec<(&'static str, serde_json::Value)> {
        self.inner.as_mut().map_or_else(Vec::new, |p| p.take_logs())
    }

    fn picks_victims(&self) -> bool {
        self.decides_preemption()
    }

    fn pick_victim(
        &mut self,
        req: &Request<'_>,
        cluster: &ClusterView,
        running: &[RunningTask],
        rng: &mut ActorRng,
    ) -> Option<usize> {
        if self.failed.is_some() {
            return None;
        }
        match self.ask_victim(req, cluster, running, rng) {
            Ok(k) => k,
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }

    /// With the power or the migration stage (v3), servers going idle are
    /// a decision point of their own (an `idle` request).
    fn decides_at_idle(&self) -> bool {
        self.decides_power() || self.decides_migration()
    }

    fn idle(&mut self, idle: &[u32], queued: usize, cluster: &ClusterView, rng: &mut ActorRng) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.ask_idle(idle, queued, cluster, rng) {
            self.failed = Some(e);
        }
    }

    fn take_power(&mut self) -> Vec<PowerOrder> {
        std::mem::take(&mut self.orders)
    }

    fn tracks_power(&self) -> bool {
        self.decides_power()
    }

    fn wants_running(&self) -> bool {
        self.decides_migration()
    }

    fn set_running(&mut self, running: Vec<PlacedTask>) {
        self.running = running;
    }

    fn take_migrations(&mut self) -> Vec<MigrateOrder> {
        std::mem::take(&mut self.migrations)
    }

    fn chooses_paths(&self) -> bool {
        self.decides_network()
    }

    fn set_paths(&mut self, paths: BTreeMap<u32, Vec<PathOption>>) {
        self.paths = paths;
    }

    fn take_path(&mut self) -> Option<Route> {
        self.path.take()
    }

    /// The program may read the servers' reports when it places; beside
    /// a built-in placement, a report is a change only if that one reads
    /// them (so the built-in's retries, and its results, stay its own).
    fn reads_reports(&self) -> bool {
        self.inner.as_ref().is_none_or(|p| p.reads_reports())
    }

    fn at(&mut self, now: SimTime) {
        self.now = now;
        if let Some(inner) = self.inner.as_mut() {
            inner.at(now);
        }
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

    /// Wall time of each exchange with the program (`run.json` only), and
    /// what a built-in placement beside it counted.
    fn finish(&self, out: &mut Metrics) {
        if let Some(inner) = self.inner.as_ref() {
            inner.finish(out);
        }
        if !self.round_trip_us.is_empty() {
            out.append_wall_samples("external_round_trip_us", self.round_trip_us.clone());
        }
    }
}

/// A response must answer the request just sent (`id`), not a stale one.
fn answers_request(what: &str, id: u64, answered: u64) -> Result<(), String> {
    if answered == id {
        return Ok(());
    }
    Err(format!(
        "{what}: the response answers request {answered} (stale or out of order: \
         each request gets exactly one response, with its id)"
    ))
}

/// Moves the scheduler's random stream to where the program says it drew
/// to (`to`), which may not be behind the stream's position `word_pos`.
fn follow_stream(
    what: &str,
    word_pos: u64,
    to: Option<u64>,
    rng: &mut ActorRng,
) -> Result<(), String> {
    let Some(pos) = to else {
        return Ok(());
    };
    if pos < word_pos {
        return Err(format!(
            "{what}: rng_word_pos {pos} is behind the stream's position {word_pos} \
             (a stream only moves forward)"
        ));
    }
    rng.set_word_pos(u128::from(pos));
    Ok(())
}
