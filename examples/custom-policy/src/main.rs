//! `custom-dcemu`: dcemu's `run`, `coordinator` and `node`, in a binary of
//! your own that registers this crate's policies first (`p2c-memory`,
//! `token-bucket`, `least-work-lost`). A multi-process run needs the
//! policies in every process that builds the model (the coordinator and
//! each node), so each runs this binary rather than `dcemu`.
//!
//!     custom-dcemu run [--scenario FILE] [--set K=V]... [--partitions N]
//!     custom-dcemu coordinator [--scenario FILE] [--set K=V]... --nodes N
//!         --listen ADDR --secret S --out DIR
//!     custom-dcemu node --coordinator ADDR --name NAME --listen ADDR --secret S
//!
//! Without `--scenario`, dcemu's quickstart. Flags are few on purpose: the
//! example shows the library calls, `dcemu` itself has the full CLI.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use dcemu::cluster::coordinator::{CoordinatorOptions, run_coordinator};
use dcemu::cluster::node::{NodeOptions, run_node};
use dcemu::cluster::wire;
use dcemu::results::Staging;
use dcemu::run::{RunOptions, execute};
use dcemu::scenario::{self, Override, QUICKSTART, Scenario};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = dcemu_custom_policy::register_all()
        .map_err(|e| e.to_string())
        .and_then(|()| match args.first().map(String::as_str) {
            Some("run") => run(&args[1..]),
            Some("coordinator") => coordinator(&args[1..]),
            Some("node") => node(&args[1..]),
            _ => Err("usage: custom-dcemu run | coordinator | node [flags]".to_string()),
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("custom-dcemu: {e}");
            ExitCode::from(2)
        }
    }
}

/// `--flag value` pairs; `--set` may repeat.
struct Flags {
    one: BTreeMap<String, String>,
    set: Vec<Override>,
}

impl Flags {
    fn parse(args: &[String]) -> Result<Flags, String> {
        let mut flags = Flags {
            one: BTreeMap::new(),
            set: Vec::new(),
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let name = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {flag:?}"))?;
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            if name == "set" {
                flags.set.push(value.parse()?);
            } else if flags.one.insert(name.to_string(), value.clone()).is_some() {
                return Err(format!("{flag} given twice"));
            }
        }
        Ok(flags)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.one.get(name).map(String::as_str)
    }

    fn need(&self, name: &str) -> Result<&str, String> {
        self.get(name)
            .ok_or_else(|| format!("--{name} is required"))
    }

    fn parsed<T: std::str::FromStr>(&self, name: &str) -> Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        self.need(name)?
            .parse()
            .map_err(|e| format!("--{name}: {e}"))
    }

    /// The scenario, validated (a registered policy's parameters too).
    fn scenario(&self) -> Result<Scenario, String> {
        let (label, text) = match self.get("scenario") {
            None => ("quickstart".to_string(), QUICKSTART.to_string()),
            Some(path) => (
                path.to_string(),
                std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?,
            ),
        };
        scenario::load(&label, &text, &self.set).map_err(|e| e.to_string())
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let flags = Flags::parse(args)?;
    let scenario = flags.scenario()?;
    let partitions = match flags.get("partitions") {
        Some(_) => flags.parsed("partitions")?,
        None => 1,
    };
    let outcome = execute(
        &scenario,
        &RunOptions {
            partitions,
            ..RunOptions::default()
        },
    )
    .map_err(|e| e.to_string())?;
    println!("digest {}", outcome.digest);
    Ok(())
}

fn coordinator(args: &[String]) -> Result<(), String> {
    let flags = Flags::parse(args)?;
    let scenario = flags.scenario()?;
    let out = PathBuf::from(flags.need("out")?);
    let staging = Staging::create(&out, true).map_err(|e| e.to_string())?;
    let failure_timeout = Duration::from_secs(10);
    let opts = CoordinatorOptions {
        nodes: flags.parsed("nodes")?,
        listen: flags.parsed::<SocketAddr>("listen")?,
        secret: flags.need("secret")?.to_string(),
        failure_timeout,
        join_timeout: Duration::from_secs(60),
        heartbeat: failure_timeout / 10,
        max_frame: wire::DEFAULT_MAX_FRAME,
        same_host_links: true,
        balance_from: None,
        balance_by: Default::default(),
    };
    let (outcome, _) = dcemu::cluster::runtime()
        .map_err(|e| e.to_string())?
        .block_on(run_coordinator(&scenario, &opts, staging))
        .map_err(|e| e.to_string())?;
    println!("digest {}", outcome.digest);
    Ok(())
}

fn node(args: &[String]) -> Result<(), String> {
    let flags = Flags::parse(args)?;
    let opts = NodeOptions {
        coordinator: flags.need("coordinator")?.to_string(),
        name: flags.need("name")?.to_string(),
        listen: flags.parsed::<SocketAddr>("listen")?,
        advertise: None,
        secret: flags.need("secret")?.to_string(),
        connect_timeout: Duration::from_secs(60),
    };
    dcemu::cluster::runtime()
        .map_err(|e| e.to_string())?
        .block_on(run_node(opts))
        .map_err(|e| e.to_string())
}
