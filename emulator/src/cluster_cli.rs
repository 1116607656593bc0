//! `dcemu coordinator` and `dcemu node`: flags and exit codes around
//! [`dcemu::cluster`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use dcemu::cluster::coordinator::{CoordinatorOptions, run_coordinator};
use dcemu::cluster::node::{NodeOptions, run_node};
use dcemu::cluster::{ClusterError, tls, wire};
use dcemu::results::{Staging, WriteError};
use dcemu::scenario::{MAX_SEED, Override};

use super::{Failure, ScenarioArgs, load, parse_override, print_summary};

/// Environment variable holding the cluster secret (for compose files).
pub const SECRET_ENV: &str = "DCEMU_SECRET";

#[derive(Args)]
pub struct CoordinatorArgs {
    /// Scenario file (TOML). Without it, the embedded scenarios/quickstart.toml.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Override a scalar field by its dotted path (repeatable), as for `dcemu run`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_override)]
    set: Vec<Override>,
    /// Seed for every actor's random stream (overrides run.seed).
    #[arg(long, allow_negative_numbers = true, value_parser = dcemu::whole::Whole::new(0, MAX_SEED))]
    seed: Option<u64>,
    /// Node processes to wait for; the actors are split among them.
    #[arg(long, allow_negative_numbers = true, value_parser = dcemu::whole::Whole::new(1, dcemu::engine::MAX_PARTITIONS as u64))]
    nodes: u64,
    /// Address to listen on for nodes.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:7300")]
    listen: SocketAddr,
    /// Results directory (default: <output.dir>/<run.name>-s<seed>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Replace the results directory if it exists.
    #[arg(long)]
    force: bool,
    /// Cluster secret nodes must prove they know (else $DCEMU_SECRET; else
    /// a random one is generated and printed).
    #[arg(long, value_name = "SECRET")]
    secret: Option<String>,
    /// A node silent this long (or gone) aborts the run.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    failure_timeout: dcemu_topology::Duration,
    /// How long to wait for every node to join.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    join_timeout: dcemu_topology::Duration,
    /// Largest frame accepted on any link, bytes.
    #[arg(long, value_name = "BYTES", default_value_t = wire::DEFAULT_MAX_FRAME as u64,
          value_parser = dcemu::whole::Whole::new(1024, wire::HARD_MAX_FRAME as u64))]
    max_frame: u64,
    /// Nodes that share a network namespace (one host, one container) pass
    /// batches over Unix sockets instead of QUIC: `auto` (the default)
    /// wherever they can, `off` to keep QUIC everywhere (to compare).
    #[arg(long, value_name = "auto|off", default_value = "auto")]
    same_host_links: SameHostLinks,
    #[command(flatten)]
    balance: super::BalanceArgs,
    /// No summary; errors only.
    #[arg(long, short)]
    quiet: bool,
}

/// `--same-host-links`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SameHostLinks {
    Auto,
    Off,
}

#[derive(Args)]
pub struct NodeArgs {
    /// The coordinator, HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    coordinator: String,
    /// This node's name (default: the host name).
    #[arg(long)]
    name: Option<String>,
    /// Address to listen on for the other nodes.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:0")]
    listen: SocketAddr,
    /// Address the other nodes should dial (default: the listening port at
    /// the address the coordinator sees).
    #[arg(long, value_name = "ADDR")]
    advertise: Option<SocketAddr>,
    /// Cluster secret (else $DCEMU_SECRET).
    #[arg(long, value_name = "SECRET")]
    secret: Option<String>,
    /// How long to keep trying to reach the coordinator and the peers.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    connect_timeout: dcemu_topology::Duration,
}

fn wall(d: dcemu_topology::Duration) -> Duration {
    Duration::from_nanos(d.as_nanos())
}

fn secret_from(flag: Option<String>) -> Result<Option<String>, Failure> {
    let secret = flag.or_else(|| std::env::var(SECRET_ENV).ok().filter(|s| !s.is_empty()));
    match secret {
        Some(s) if s.len() < tls::MIN_SECRET_LEN => Err(Failure::input(format!(
            "the cluster secret must be at least {} characters",
            tls::MIN_SECRET_LEN
        ))),
        other => Ok(other),
    }
}

/// The process's actix system (its process-level actors run on the main
/// thread), over a tokio runtime whose one worker drives quinn's endpoint.
fn system() -> Result<actix_rt::SystemRunner, Failure> {
    dcemu::cluster::runtime()
        .map_err(|e| Failure::run(format!("cannot start the async runtime: {e}")))
}

fn cluster_failure(e: ClusterError) -> Failure {
    match e {
        ClusterError::Input(m) => Failure::input(m),
        other => Failure::run(other.to_string()),
    }
}

pub fn coordinator(args: CoordinatorArgs) -> Result<(), Failure> {
    let scenario_args = ScenarioArgs {
        scenario: args.scenario.clone(),
        set: args.set.clone(),
        seed: args.seed,
        lenient: false,
        scheduler: None,
    };
    let (label, scenario) = load(&scenario_args)?;
    let secret = match secret_from(args.secret)? {
        Some(s) => s,
        None => {
            let s = tls::random_secret().map_err(|e| Failure::run(e.to_string()))?;
            eprintln!("coordinator: generated cluster secret (give it to the nodes): {s}");
            s
        }
    };
    let out = args.out.clone().unwrap_or_else(|| {
        Path::new(&scenario.output.dir)
            .join(format!("{}-s{}", scenario.run.name, scenario.run.seed))
    });
    let staging = Staging::create(&out, args.force).map_err(|e| match e {
        WriteError::Exists(_) | WriteError::ExistsIncomplete(..) => Failure::input(e.to_string()),
        other => Failure::run(other.to_string()),
    })?;
    let opts = CoordinatorOptions {
        nodes: args.nodes as usize,
        listen: args.listen,
        secret,
        failure_timeout: wall(args.failure_timeout).max(Duration::from_millis(200)),
        join_timeout: wall(args.join_timeout),
        heartbeat: (wall(args.failure_timeout) / 10)
            .clamp(Duration::from_millis(20), Duration::from_secs(1)),
        max_frame: args.max_frame as usize,
        same_host_links: args.same_host_links == SameHostLinks::Auto,
        balance_from: args.balance.balance_from.clone(),
        balance_by: args.balance.balance_by,
    };
    let (outcome, report) = system()?
        .block_on(run_coordinator(&scenario, &opts, staging))
        .map_err(cluster_failure)?;
    if !args.quiet {
        print_summary(&label, &scenario, &outcome, args.nodes as usize, &out);
        for (name, b) in &report.nodes {
            println!(
                "  rounds         node {name}: in {} windows, mean {:.1} µs, min {:.1} µs per exchange (wall)",
                b.exchanges.saturating_sub(1),
                b.mean_us(),
                b.min_ns as f64 / 1e3
            );
        }
    }
    Ok(())
}

pub fn node(args: NodeArgs) -> Result<(), Failure> {
    let secret = secret_from(args.secret)?.ok_or_else(|| {
        Failure::input(format!(
            "a node needs the cluster secret: --secret or ${SECRET_ENV}"
        ))
    })?;
    let name = match args.name {
        Some(n) => n,
        None => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("node-{}", std::process::id())),
    };
    if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
        return Err(Failure::input("--name must be 1-64 printable characters"));
    }
    let result = system()?.block_on(run_node(NodeOptions {
        coordinator: args.coordinator,
        name,
        listen: args.listen,
        advertise: args.advertise,
        secret,
        connect_timeout: wall(args.connect_timeout),
    }));
    result.map_err(cluster_failure)
}
