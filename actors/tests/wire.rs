//! Envelopes of every kind survive the wire format the QUIC transport uses
//! between processes (MODEL.md §2: bincode, standard configuration), and
//! bytes that would break a type's invariants are refused when decoded.
//!
//! With `DCEMU_WIRE_SEEDS=<dir>` set, the encoded batches are also written
//! there: they seed the `wire` fuzz target (`fuzz/README.md`).

use dcemu_actors::distributed::DistRef;
use dcemu_actors::google::{DagRef, JobLength};
use dcemu_actors::kernel::{ActorId, Envelope};
use dcemu_actors::model::{JobRef, Msg, Task};
use dcemu_actors::net::{AppRate, Body, EvictionCause, Packet, ServerReport};
use dcemu_topology::Route;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ 1 << 20 }>()
}

fn task(id: u64) -> Task {
    Task {
        priority: 4,
        memory_mb: 2048,
        ..Task::new(id, ActorId(3), 1_500_000_000, 60_000_000_000)
    }
}

/// A task with every optional part set.
fn full_task(id: u64) -> Task {
    Task {
        app: Some(17),
        flow_bps: 1_000_000,
        first_start: Some(2_000_000_000),
        evictions: 2,
        priority_evictions: 1,
        cpu_ppm: 250_000,
        job: Some(JobRef {
            id,
            master: true,
            external_bytes: 1 << 30,
            internal_bytes: 1 << 20,
        }),
        dag: Some(DagRef {
            job: id,
            template: 3,
            stage: 1,
            req: 40,
            length: JobLength::Long,
        }),
        dist: Some(DistRef {
            app: 5,
            run: id,
            unit: 2,
            units: 8,
            qos_ppm: 900_000,
            coordinator: Some(ActorId(12)),
            attempt: 3,
            fixed_ns: 7_000_000_000,
        }),
        ..task(id)
    }
}

fn packet(path: &[u32], body: Body) -> Msg {
    Msg::Packet(Packet {
        route: Route::new(path).expect("a valid route"),
        hop: 0,
        bytes: body.size_bytes(),
        sent_at: 7_000,
        body,
    })
}

fn envelope(seq: u64, payload: Msg) -> Envelope<Msg> {
    Envelope {
        deliver_at: 1_000 * seq + 5,
        src: ActorId(1),
        dst: ActorId(2),
        src_seq: seq,
        payload,
        causal_hops: 0,
    }
}

/// One message of each kind a partition sends another, and all of them in
/// one batch.
fn batches() -> Vec<(&'static str, Vec<Envelope<Msg>>)> {
    let host = [1, 2];
    let far = [1, 40, 41, 42, 43, 44, 2];
    let timers = vec![
        Msg::Arrival,
        Msg::Progress { generation: 9 },
        Msg::WakeDone,
        Msg::IdleCheck,
        Msg::PrimaryTick,
        Msg::ReimageTick,
        Msg::Requeue(task(1)),
        Msg::ReportTick,
        Msg::MemoryCheck { task: 1 },
        Msg::Profiled(full_task(2)),
        Msg::Migrated {
            task: task(3),
            server: ActorId(9),
        },
        Msg::AdmissionTick,
        Msg::Reclassified { task: 3 },
        Msg::SlotTick,
        Msg::Rereplicate,
        Msg::ReadTick,
        Msg::DistFinish {
            run: 4,
            generation: 1,
        },
        Msg::DistPlace,
    ];
    let bodies = vec![
        packet(&host, Body::Submit(task(10))),
        packet(&far, Body::Dispatch(full_task(11))),
        packet(&host, Body::Finished { task: 10, slots: 2 }),
        packet(
            &host,
            Body::Done {
                task: 10,
                priority: 11,
                submitted_at: 1,
                started_at: 2,
                finished_at: u64::MAX,
            },
        ),
        packet(
            &host,
            Body::Report(ServerReport {
                free_slots: 3,
                running: 5,
                busy_cores: 4,
                cores: 8,
                primary_cores: 2,
                reserve_cores: 1,
                memory_used_mb: 10_000,
                memory_mb: 65_536,
            }),
        ),
        packet(
            &host,
            Body::PrimaryLoad {
                cores: 3,
                reserve: 1,
            },
        ),
        packet(&host, Body::Reimage),
        packet(&host, Body::Killed(task(12))),
        packet(
            &far,
            Body::Preempt {
                victim: 12,
                task: full_task(13),
                also: vec![15, 16],
            },
        ),
        packet(
            &host,
            Body::Evicted {
                task: task(14),
                cause: EvictionCause::Memory,
            },
        ),
        packet(
            &far,
            Body::Reservation {
                task: 14,
                peer: 40,
                bps: 10_000_000_000,
                reserve: true,
            },
        ),
        packet(
            &host,
            Body::Rates(vec![
                AppRate {
                    task: 15,
                    rate_ppm: 800_000,
                    left_ns: 5,
                };
                3
            ]),
        ),
        packet(&host, Body::Reclassify { task: 15 }),
        packet(
            &host,
            Body::Reclassified {
                task: 15,
                tolerated: [100; 10],
                caused: [7; 10],
            },
        ),
        packet(&host, Body::Migrate { task: 16 }),
        packet(&host, Body::Migrating(full_task(16))),
        packet(&host, Body::Reimaged),
        packet(&host, Body::DataNodeBusy { busy: true }),
        packet(
            &far,
            Body::DistPressure {
                dist: full_task(17).dist.expect("set"),
                task: 17,
                pressure_milli: 1_200,
            },
        ),
        packet(&host, Body::DistDone { task: 17 }),
        packet(
            &host,
            Body::DistStop {
                task: 17,
                attempt: 2,
            },
        ),
        packet(&host, Body::Power { sleep: true }),
        packet(&far, Body::Power { sleep: false }),
        packet(&host, Body::Awake { orders: 7 }),
    ];
    let all: Vec<Msg> = timers.into_iter().chain(bodies).collect();
    let mut out: Vec<(&'static str, Vec<Envelope<Msg>>)> = all
        .iter()
        .enumerate()
        .map(|(i, msg)| ("one", vec![envelope(i as u64, msg.clone())]))
        .collect();
    let everything = all
        .into_iter()
        .enumerate()
        .map(|(i, m)| envelope(i as u64, m))
        .collect();
    out.push(("all", everything));
    out.push(("empty", Vec::new()));
    out
}

fn decode(bytes: &[u8]) -> Result<Vec<Envelope<Msg>>, String> {
    let (batch, used) =
        bincode::serde::decode_from_slice(bytes, config()).map_err(|e| e.to_string())?;
    if used != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - used));
    }
    Ok(batch)
}

#[test]
fn every_message_round_trips_through_the_wire_format() {
    let seeds = std::env::var_os("DCEMU_WIRE_SEEDS").map(std::path::PathBuf::from);
    for (n, (what, batch)) in batches().into_iter().enumerate() {
        let bytes = bincode::serde::encode_to_vec(&batch, config()).expect("encodes");
        let back = decode(&bytes).unwrap_or_else(|e| panic!("{what} #{n}: {e}: {batch:?}"));
        assert_eq!(back, batch, "{what} #{n}");
        if let Some(dir) = &seeds {
            std::fs::create_dir_all(dir).expect("seed directory");
            std::fs::write(dir.join(format!("{n:02}-{what}.bin")), &bytes).expect("seed");
        }
    }
}

#[test]
fn a_route_that_breaks_its_bounds_is_refused() {
    let good = vec![envelope(0, packet(&[1, 2], Body::Reimage))];
    let bytes = bincode::serde::encode_to_vec(&good, config()).expect("encodes");
    assert_eq!(decode(&bytes).expect("decodes"), good);
    // Batch length, deliver_at, src, dst, src_seq, variant: one byte each
    // here; then the route's 12 node ids (two used) and its length.
    let len_at = 6 + 12;
    assert_eq!(bytes[len_at], 2, "the route length: {bytes:?}");
    for bad in [0u8, 1, 13, 200] {
        let mut broken = bytes.clone();
        broken[len_at] = bad;
        let err = decode(&broken).expect_err("a route of that length is refused");
        assert!(err.contains("route"), "{err}");
    }
}
