//! `dcemu`: run and check datacenter emulation scenarios.
//!
//! Exit codes: 0 success; 1 the run failed (model error, I/O); 2 bad input
//! (scenario, flags, an existing results directory).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use dcemu::commands;
use dcemu::engine::{MAX_PARTITIONS, Progress};
use dcemu::progress::{Mode, Reporter, human_count};
use dcemu::results::{Staging, WriteError};
use dcemu::run::{Outcome, RunOptions, execute};
use dcemu::scenario::{self, MAX_SEED, Override, QUICKSTART, QUICKSTART_LABEL, Scenario};
use dcemu_topology::format_sim_time;
use serde_json::Value;

mod cluster_cli;

/// `--balance-from` and `--balance-by`, shared by `run` (threads) and
/// `coordinator` (nodes).
#[derive(Args)]
struct BalanceArgs {
    /// Cut the partitions (or nodes) by what each actor measured in an
    /// earlier run of the same scenario (that results directory's
    /// work.csv) instead of by the count of actors; results do not depend
    /// on it.
    #[arg(long, value_name = "DIR")]
    balance_from: Option<PathBuf>,
    /// What `--balance-from` evens out: `time` (the wall time each actor's
    /// events took) or `memory` (the memory each actor held at the end of
    /// virtual time).
    #[arg(
        long,
        value_name = "time|memory",
        default_value = "time",
        requires = "balance_from"
    )]
    balance_by: dcemu::engine::balance::Weigh,
}

#[derive(Parser)]
#[command(
    name = "dcemu",
    version,
    about = "Deterministic datacenter emulator for putting cluster schedulers through realistic datacenters",
    after_help = "Run `dcemu run` to try the embedded quickstart scenario."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario and write its results directory.
    Run(RunArgs),
    /// Check a scenario (and overrides) without running it.
    Validate(ScenarioArgs),
    /// Show a results directory's actor logs, merged in virtual-time order.
    Logs(commands::LogsArgs),
    /// Re-run a results directory's scenario and compare with what it holds.
    Replay(commands::ReplayArgs),
    /// Compare results directories in an HTML report with plots.
    Report(commands::ReportArgs),
    /// Run the papers' experiments and write paper vs ours (reproduction.md, .csv, report.html).
    Reproduce(dcemu::reproduce::ReproduceArgs),
    /// Fit a paper's free parameters ([[calibration]]) to their targets and write the values back.
    Calibrate(dcemu::calibrate::CalibrateArgs),
    /// Run your own comparison: a sweep file's axes × seeds, into sweep.csv and summary.csv (95 % CIs).
    Sweep(dcemu::sweep::SweepArgs),
    /// Measure the papers' scenarios, partitions and scale into docs/performance.md.
    Bench(dcemu::bench::BenchArgs),
    /// Drive a run whose actors live in `dcemu node` processes (same results as `run`).
    Coordinator(cluster_cli::CoordinatorArgs),
    /// Host a share of a coordinator's run.
    Node(cluster_cli::NodeArgs),
}

#[derive(Args)]
struct ScenarioArgs {
    /// Scenario file (TOML). Without it, the embedded scenarios/quickstart.toml.
    scenario: Option<PathBuf>,
    /// Override a scalar field by its dotted path, e.g. --set run.end=2h
    /// --set tenants.0.arrivals.rate_per_s=2 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_override)]
    set: Vec<Override>,
    /// Seed for every actor's random stream (overrides run.seed).
    #[arg(long, allow_negative_numbers = true, value_parser = dcemu::whole::Whole::new(0, MAX_SEED))]
    seed: Option<u64>,
    /// Skip bad rows of streamed (public-format) traces and count them
    /// (`trace_rows_skipped`) instead of stopping at the first.
    #[arg(long)]
    lenient: bool,
    /// Your own scheduler program decides placement (and whatever stages
    /// the scenario's [scheduler.external] names): a shell-quoted command,
    /// its files relative to the current directory, e.g.
    /// --scheduler 'python3 my_scheduler.py' (docs/external-scheduler.md).
    #[arg(long, value_name = "COMMAND")]
    scheduler: Option<String>,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Results directory (default: <output.dir>/<run.name>-s<seed>, then the
    /// --set overrides, e.g. results/quickstart-s1-scheduler.slots=none).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Replace the results directory if it exists.
    #[arg(long)]
    force: bool,
    /// Partitions (threads) to split the actors into; results do not depend on it.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1, value_parser = dcemu::whole::Whole::new(1, MAX_PARTITIONS as u64))]
    partitions: u64,
    #[command(flatten)]
    balance: BalanceArgs,
    /// No progress and no summary; errors only.
    #[arg(long, short)]
    quiet: bool,
}

fn parse_override(s: &str) -> Result<Override, String> {
    s.parse()
}

/// A failure and the exit code it deserves.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn input(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }
    fn run(message: impl Into<String>) -> Self {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
}

impl From<commands::CommandError> for Failure {
    fn from(e: commands::CommandError) -> Self {
        Failure {
            code: e.code,
            message: e.message,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Validate(args) => validate(args),
        Command::Logs(args) => commands::logs(args).map_err(Failure::from),
        Command::Replay(args) => commands::replay_cmd(args).map_err(Failure::from),
        Command::Report(args) => commands::report_cmd(args).map_err(Failure::from),
        Command::Bench(args) => dcemu::bench::bench(&args).map_err(|e| match e {
            dcemu::bench::BenchError::Input(m) => Failure::input(m),
            dcemu::bench::BenchError::Failed(m) => Failure::run(m),
        }),
        Command::Reproduce(args) => reproduce(&args),
        Command::Calibrate(args) => calibrate(&args),
        Command::Sweep(args) => sweep(&args),
        Command::Coordinator(args) => cluster_cli::coordinator(args),
        Command::Node(args) => cluster_cli::node(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            for line in f.message.lines() {
                eprintln!("error: {line}");
            }
            ExitCode::from(f.code)
        }
    }
}

fn load(args: &ScenarioArgs) -> Result<(String, Scenario), Failure> {
    let (label, text) = match &args.scenario {
        None => (QUICKSTART_LABEL.to_string(), QUICKSTART.to_string()),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Failure::input(format!("cannot read scenario file {}: {e}", path.display()))
            })?;
            (path.display().to_string(), text)
        }
    };
    let text = match &args.scheduler {
        None => text,
        Some(command) => {
            let cwd = std::env::current_dir()
                .map_err(|e| Failure::run(format!("cannot read the current directory: {e}")))?;
            dcemu::external::attach_program(&text, command, &cwd)
                .map_err(|e| Failure::input(format!("{label}: {e}")))?
        }
    };
    let mut overrides = args.set.clone();
    if let Some(seed) = args.seed {
        overrides.push(format!("run.seed={seed}").parse().map_err(Failure::input)?);
    }
    // the recorded scenario of a results directory runs from where the
    // original found its streamed traces and program (run.json)
    let base = args
        .scenario
        .as_deref()
        .and_then(scenario::streams::recorded_base);
    let mut scenario = scenario::load_with(&label, &text, &overrides, base.as_deref())
        .map_err(|e| Failure::input(e.to_string()))?;
    if args.lenient {
        scenario::streams::set_lenient(&mut scenario);
    }
    scenario::streams::check_before_run(&scenario).map_err(|e| Failure::input(e.to_string()))?;
    Ok((label, scenario))
}

/// `reproduce`'s and `calibrate`'s errors at the binary's edge.
fn paper_failure(e: dcemu::reproduce::ReproduceError) -> Failure {
    use dcemu::reproduce::ReproduceError;
    match e {
        ReproduceError::Input(m) => Failure::input(m),
        ReproduceError::Failed(m) => Failure::run(m),
    }
}

fn reproduce(args: &dcemu::reproduce::ReproduceArgs) -> Result<(), Failure> {
    let summary = dcemu::reproduce::reproduce(args).map_err(paper_failure)?;
    let t = summary.tally;
    println!(
        "dcemu reproduce: {} runs; {} verdicts: {} pass, {} fail, {} open (known gaps), {} marked open but passing",
        summary.runs,
        t.total(),
        t.pass,
        t.fail,
        t.open,
        t.closed
    );
    for path in &summary.written {
        println!("  wrote {}", path.display());
    }
    if args.check && !summary.failing.is_empty() {
        return Err(Failure::run(format!(
            "--check: {} verdict(s) failed:\n{}",
            summary.failing.len(),
            summary.failing.join("\n")
        )));
    }
    Ok(())
}

fn sweep(args: &dcemu::sweep::SweepArgs) -> Result<(), Failure> {
    let s = dcemu::sweep::sweep(args).map_err(paper_failure)?;
    let share = match args.shard {
        Some(k) => format!("; shard {k}: {} of them", s.ran_here),
        None => String::new(),
    };
    let verb = match &args.command {
        Some(_) => "merged",
        None => "reused",
    };
    println!(
        "dcemu sweep: {} cells × {} seeds: {} runs ({} {verb}){share}",
        s.cells, s.seeds, s.runs, s.reused
    );
    for path in &s.written {
        println!("  wrote {}", path.display());
    }
    Ok(())
}

fn calibrate(args: &dcemu::calibrate::CalibrateArgs) -> Result<(), Failure> {
    let summary = dcemu::calibrate::calibrate(args).map_err(paper_failure)?;
    for w in &summary.warnings {
        eprintln!("warning: {w}");
    }
    print!("{}", summary.table);
    println!();
    for path in &summary.written {
        println!("  wrote {}", path.display());
    }
    if args.dry_run {
        println!("  --dry-run: the scenario and paper files are unchanged");
    }
    Ok(())
}

fn validate(args: ScenarioArgs) -> Result<(), Failure> {
    let (label, s) = load(&args)?;
    // Streamed traces are read through here (a run reads them as it goes).
    let scanned = scenario::streams::scan(&s).map_err(|e| Failure::input(e.to_string()))?;
    for (tenant, st) in &scanned {
        println!(
            "{label}: tenant {tenant:?}: trace read through: {} lines, {} tasks, {} dropped, {} unfinished, {} events ignored, {} bad rows skipped",
            st.lines,
            st.tasks,
            st.tasks_dropped,
            st.tasks_unfinished,
            st.events_ignored,
            st.rows_skipped
        );
        let path = s
            .tenants
            .iter()
            .zip(&s.streams)
            .find(|(t, _)| t.name == *tenant)
            .and_then(|(_, spec)| spec.as_ref())
            .map_or("?", |spec| spec.label.as_str());
        match st.defects.report(path).as_slice() {
            [only] if st.defects.is_empty() => println!("{label}: tenant {tenant:?}: {only}"),
            lines => {
                println!("{label}: tenant {tenant:?}: known defects of the trace:");
                for line in lines {
                    println!("  {line}");
                }
            }
        }
    }
    let servers: u64 = s.server_types.iter().map(|t| u64::from(t.count)).sum();
    let tenants: u64 = s.tenants.iter().map(|t| u64::from(t.count)).sum();
    println!(
        "{label}: valid — run {:?}, seed {}, end {}, {servers} servers, {tenants} tenants, placement {}",
        s.run.name,
        s.run.seed,
        s.run.end,
        serde_json::to_value(s.scheduler.placement)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    );
    Ok(())
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let (label, scenario) = load(&args.scenario)?;
    let out = args.out.clone().unwrap_or_else(|| {
        let mut sets: Vec<String> = args.scenario.set.iter().map(|o| o.to_string()).collect();
        if let Some(command) = &args.scenario.scheduler {
            sets.push(format!("scheduler={command}"));
        }
        dcemu::results::default_dir(
            Path::new(&scenario.output.dir),
            &scenario.run.name,
            scenario.run.seed,
            &sets,
        )
    });
    let staging = Staging::create(&out, args.force).map_err(|e| match e {
        WriteError::Exists(_) | WriteError::ExistsIncomplete(..) => Failure::input(e.to_string()),
        other => Failure::run(other.to_string()),
    })?;
    let partitions = args.partitions as usize;
    let progress = Progress::new(partitions);
    let mode = Mode::detect(args.quiet);
    let reporter = Reporter::start(progress.clone(), scenario.run.end.as_nanos(), mode);
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let options = RunOptions {
        partitions,
        progress: Some(Arc::clone(&progress)),
        log_dir: Some(staging.logs_dir()),
    };
    let outcome = match &args.balance.balance_from {
        Some(dir) => {
            dcemu::run::execute_balanced(&scenario, &options, dir, args.balance.balance_by)
        }
        None => execute(&scenario, &options),
    };
    progress
        .done
        .store(true, std::sync::atomic::Ordering::Relaxed);
    reporter.finish();
    let outcome = match outcome {
        Ok(o) => o,
        Err(e @ dcemu::run::RunError::Balance(_)) => {
            drop(staging);
            return Err(Failure::input(e.to_string()));
        }
        Err(e) => {
            // As for a node that dies: what the run wrote stays, marked.
            let kept = match staging.mark_incomplete(&e.to_string()) {
                Ok(dir) => format!("; results marked incomplete in {}", dir.display()),
                Err(w) => format!("; cannot keep its results: {w}"),
            };
            return Err(Failure::run(format!("run of {label} failed: {e}{kept}")));
        }
    };
    let mut run_json = run_facts(&outcome, partitions, started_unix);
    if let Some(base) = scenario::streams::stream_base(&label, &scenario) {
        run_json = with_stream_base(&run_json, &base);
    }
    staging
        .commit(
            &outcome.results,
            &outcome.digest,
            &[
                ("run.json", run_json),
                (dcemu::engine::balance::WORK_FILE, outcome.work_csv.clone()),
            ],
        )
        .map_err(|e| Failure::run(e.to_string()))?;
    if !args.quiet {
        print_summary(&label, &scenario, &outcome, partitions, &out);
        if let Some(n) = outcome
            .metrics
            .get("trace_rows_skipped")
            .and_then(Value::as_u64)
            .filter(|&n| n > 0 || args.scenario.lenient)
        {
            println!("  trace rows     {n} bad row(s) skipped (--lenient)");
        }
    }
    Ok(())
}

/// `run.json` with `stream_base`: where `dcemu replay` finds the streamed
/// traces, which stay where they are (not copied into the results).
fn with_stream_base(run_json: &[u8], base: &Path) -> Vec<u8> {
    let Ok(mut facts) = serde_json::from_slice::<Value>(run_json) else {
        return run_json.to_vec();
    };
    facts["stream_base"] = Value::String(base.display().to_string());
    let mut bytes = serde_json::to_vec_pretty(&facts).unwrap_or_else(|_| run_json.to_vec());
    bytes.push(b'\n');
    bytes
}

/// The process's peak resident set so far (Linux's `VmHWM`), if known.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// `run.json`: facts about this execution that must not reach the digest.
/// The external program's files the results keep (`program/…`), with
/// their SHA-256, for `run.json` (they are digested as well).
fn program_hashes(o: &Outcome) -> Vec<Value> {
    o.results
        .paths()
        .filter(|p| p.starts_with("program/"))
        .filter_map(|p| {
            let bytes = o.results.read(p).ok()??;
            Some(serde_json::json!({
                "file": p,
                "sha256": dcemu::results::sha256_hex(&bytes),
            }))
        })
        .collect()
}

fn run_facts(o: &Outcome, partitions: usize, started_unix: u64) -> Vec<u8> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".into());
    let facts = serde_json::json!({
        "dcemu_version": env!("CARGO_PKG_VERSION"),
        "host": host,
        "started_unix_s": started_unix,
        "wall_time_s": o.wall.as_secs_f64(),
        "events_per_s": o.events as f64 / o.wall.as_secs_f64().max(1e-9),
        "partitions": partitions,
        "windows": o.windows,
        "causal_steps": o.causal_steps,
        "partition_loads": o.loads.iter().map(|l| serde_json::json!({
            "events": l.events,
            "windows": l.windows,
            "exchange_s": l.exchange_wall.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "actors": o.actors,
        "events_by_kind": o.events_by_kind,
        "command": std::env::args().collect::<Vec<_>>(),
        "digest": o.digest,
        "program": program_hashes(o),
        "wall_metrics": o.wall_metrics,
        "peak_rss_kb": peak_rss_kb(),
        "trace_defects": o.trace_defects,
    });
    let mut bytes = serde_json::to_vec_pretty(&facts).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn print_summary(label: &str, s: &Scenario, o: &Outcome, partitions: usize, out: &Path) {
    let m = |k: &str| o.metrics.get(k).cloned().unwrap_or(Value::Null);
    let n = |k: &str| m(k).as_u64().unwrap_or(0);
    let secs = |k: &str| m(k).as_f64().map_or("-".into(), |v| format!("{v:.1} s"));
    let wall = o.wall.as_secs_f64();
    let reached = if o.virtual_end >= s.run.end.as_nanos() {
        "end of run"
    } else {
        "no events left"
    };
    println!(
        "dcemu run: {} (seed {}) from {label}",
        s.run.name, s.run.seed
    );
    println!(
        "  virtual time   {} ({reached})",
        format_sim_time(o.virtual_end)
    );
    println!(
        "  engine         {} events in {wall:.2} s wall, {} events/s, {} actors, {partitions} partition(s), {} windows",
        human_count(o.events as f64),
        human_count(o.events as f64 / wall.max(1e-9)),
        o.actors,
        o.windows
    );
    println!(
        "  tasks          {} submitted, {} completed; at the end {} running, {} queued, {} waiting for a wake-up, {} in transit",
        n("tasks_submitted"),
        n("tasks_completed"),
        n("tasks_running_end"),
        n("tasks_queued_end"),
        n("tasks_waiting_wake_end"),
        n("tasks_in_transit_end")
    );
    let kwh = |k: &str| m(k).as_f64().unwrap_or(0.0);
    println!(
        "  energy         {:.2} kWh ({:.2} servers, {:.2} network); on: {:.1} servers, {:.1} switches on average; {} server and {} switch wake-ups",
        kwh("energy_kwh_total"),
        kwh("energy_kwh_server"),
        kwh("energy_kwh_network"),
        kwh("servers_on_mean"),
        kwh("switches_on_mean"),
        n("wake_ups_server"),
        n("wake_ups_switch")
    );
    if o.virtual_end < s.run.end.as_nanos() {
        let pct = |k: &str| {
            m(k).as_f64()
                .map_or("-".into(), |v| format!("{:.1} %", v * 100.0))
        };
        let makespan = m("makespan_s")
            .as_f64()
            .map_or("-".into(), |v| format_sim_time((v * 1e9) as u64));
        println!(
            "  active span    totals and means cover run.end ({}), idle tail included; up to the last event ({}): {:.2} kWh, CPU {} busy, slots {} busy; last task done at {makespan}",
            format_sim_time(s.run.end.as_nanos()),
            format_sim_time(o.virtual_end),
            kwh("energy_kwh_total_active"),
            pct("utilization_cpu_mean_active"),
            pct("slot_utilization_mean_active"),
        );
    }
    if n("primary_servers") > 0 {
        println!(
            "  primaries      {} tenants on {} servers: {} load spikes, {} containers killed for them, {} disk reimages",
            n("primary_tenants"),
            n("primary_servers"),
            n("primary_spikes"),
            n("killed_containers"),
            n("reimages")
        );
    }
    if n("blocks_total") > 0 {
        println!(
            "  storage        {} blocks: {} replicas lost to reimages, {} re-replicated, {} blocks lost; {} of {} reads failed",
            n("blocks_total"),
            n("replicas_lost_reimage"),
            n("replicas_rereplicated"),
            n("blocks_lost"),
            n("failed_accesses"),
            n("block_reads")
        );
    }
    if o.metrics.contains_key("dist_apps_completed") {
        println!(
            "  distributed    {} runs finished; {} restarted whole after a unit was lost, {} units stopped with them",
            n("dist_apps_completed"),
            n("dist_runs_restarted"),
            n("dist_units_stopped")
        );
    }
    if o.metrics.contains_key("parallel_jobs_completed") {
        println!(
            "  parallel jobs  {} finished on all their processors at once; {} restarted whole after a part was lost",
            n("parallel_jobs_completed"),
            n("dist_runs_restarted")
        );
    }
    if o.metrics.contains_key("hpc_jobs_completed") {
        println!(
            "  hpc jobs       {} finished; wait mean {}, bounded slowdown mean {} (jobs.csv)",
            n("hpc_jobs_completed"),
            secs("hpc_job_wait_s_mean"),
            m("hpc_job_bounded_slowdown_mean")
                .as_f64()
                .map_or("-".into(), |v| format!("{v:.2}"))
        );
        println!(
            "  utilisation    {} of the machine from first submission to last end (utilisation.csv)",
            m("hpc_utilisation")
                .as_f64()
                .map_or("-".into(), |v| format!("{:.1} %", 100.0 * v))
        );
    }
    if o.metrics.contains_key("easy_backfilled") {
        println!(
            "  admission      EASY started {} tasks ahead of {} blocked heads without delaying their reservations (reservations.csv)",
            n("easy_backfilled"),
            n("easy_reservations")
        );
    }
    if o.metrics.contains_key("arq_diverted_up") {
        println!(
            "  admission      ARQ diverted {} tasks to better pools, {} to lesser ones",
            n("arq_diverted_up"),
            n("arq_diverted_down")
        );
    }
    println!(
        "  response time  mean {}, p99 {}; queue wait mean {}",
        secs("response_s_mean"),
        secs("response_s_p99"),
        secs("queue_wait_s_mean")
    );
    if let Some(u) = m("slot_utilization_mean").as_f64() {
        match m("sticky_starts").as_u64() {
            Some(sticky) => println!(
                "  slots          {:.1} % busy on average; {sticky} sticky starts, {} priority evictions",
                u * 100.0,
                n("preemptions")
            ),
            None => println!("  slots          {:.1} % busy on average", u * 100.0),
        }
    }
    if let Some(q) = m("qos_met_fraction").as_f64() {
        println!(
            "  applications   {} finished; {:.1} % met QoS, {:.1} % degraded by over 10 %, performance {:.2} of ideal on average",
            n("apps_completed"),
            q * 100.0,
            m("degraded_over_10pct_fraction").as_f64().unwrap_or(0.0) * 100.0,
            m("perf_norm_mean").as_f64().unwrap_or(0.0)
        );
    }
    if n("apps_classified") > 0 {
        let decision = o
            .wall_metrics
            .get("sched_decision_us_mean")
            .and_then(Value::as_f64)
            .map_or_else(String::new, |us| {
                format!("; {us:.1} µs of wall time per placement decision on average")
            });
        println!(
            "  scheduler      {} classified ({:.1} % best configuration), {} reclassified, {} migrations{decision}",
            n("apps_classified"),
            m("class_best_config_fraction").as_f64().unwrap_or(0.0) * 100.0,
            n("reclassifications"),
            n("migrations")
        );
    }
    if o.metrics.contains_key("kinds_profiled") {
        println!(
            "  unknown tasks  {} kinds profiled and classified ({} of {} on their best configuration); {} tasks took a known kind's profile, {} waited for their kind's, {} short ones went unprofiled",
            n("kinds_profiled"),
            n("kind_class_best_config_hits"),
            n("kinds_classified"),
            n("kind_tasks_known"),
            n("kind_tasks_waited"),
            n("kind_tasks_short")
        );
    }
    if n("evictions_total") > 0 || n("preemptions") > 0 {
        println!(
            "  evictions      {} ({} priority, {} memory) of {} tasks, at most {} per task; {:.0} CPU·s wasted; {} dropped; V {}",
            n("evictions_total"),
            n("evictions_priority"),
            n("evictions_memory"),
            n("evicted_tasks"),
            n("evictions_per_task_max"),
            kwh("wasted_cpu_s"),
            n("dropped_tasks"),
            m("v_metric")
                .as_f64()
                .map_or_else(|| "-".to_string(), |v| format!("{v:.0} s")),
        );
    }
    if let Some(table) = &o.slot_table {
        println!("  slot configuration (slot_config.md):");
        for line in table.lines() {
            println!("    {line}");
        }
    }
    println!("  results        {}", out.display());
    println!("  digest         {}", o.digest);
}
