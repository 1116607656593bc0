//! The coordinator's door: [`Admission`] checks every connection's proof of
//! membership, and [`Membership`] keeps the nodes that passed until the run
//! has all it needs, refusing a second node of the same name, nodes that
//! come after the run is full, and ending the wait at the join timeout.
//!
//! Both are actix actors on the coordinator's system; they decide who takes
//! part, never an order that reaches a result (MODEL.md §2).

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::oneshot;
use tokio::time::timeout;

use super::tls::{self, Role};
use super::wire::{self, Join, ToCoordinator, ToNode};

/// A node that proved its membership, with its control stream.
pub struct Joined {
    pub conn: quinn::Connection,
    pub send: quinn::SendStream,
    pub recv: quinn::RecvStream,
    pub join: Join,
}

impl Message for Joined {
    type Result = ();
}

/// Accepts connections on the coordinator's endpoint, each checked on its
/// own, and hands those that pass to [`Membership`].
pub struct Admission {
    endpoint: quinn::Endpoint,
    secret: Arc<[u8]>,
    run_id: String,
    membership: Addr<Membership>,
}

impl Admission {
    pub fn new(
        endpoint: quinn::Endpoint,
        secret: &str,
        run_id: &str,
        membership: Addr<Membership>,
    ) -> Self {
        Admission {
            endpoint,
            secret: Arc::from(secret.as_bytes()),
            run_id: run_id.to_string(),
            membership,
        }
    }
}

impl Actor for Admission {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let endpoint = self.endpoint.clone();
        ctx.add_stream(futures_util::stream::unfold(endpoint, |e| async move {
            let incoming = e.accept().await?;
            Some((incoming, e))
        }));
    }
}

impl StreamHandler<quinn::Incoming> for Admission {
    fn handle(&mut self, incoming: quinn::Incoming, ctx: &mut Context<Self>) {
        let addr = incoming.remote_address();
        let (secret, run_id) = (self.secret.clone(), self.run_id.clone());
        ctx.spawn(
            async move { admit(incoming, &secret, &run_id).await }
                .into_actor(self)
                .map(move |admitted, act, _| match admitted {
                    Ok(joined) => act.membership.do_send(joined),
                    Err(why) => eprintln!("coordinator: refused {addr}: {why}"),
                }),
        );
    }
}

/// Stop accepting: the run is over.
pub struct StopAdmission;

impl Message for StopAdmission {
    type Result = ();
}

impl Handler<StopAdmission> for Admission {
    type Result = ();

    fn handle(&mut self, _: StopAdmission, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Checks a connecting process's membership proof; sends it the
/// coordinator's proof when it passes. Anything else gets nothing.
async fn admit(incoming: quinn::Incoming, secret: &[u8], run_id: &str) -> Result<Joined, String> {
    let conn = incoming
        .await
        .map_err(|e| format!("handshake failed: {e}"))?;
    let refuse = |conn: &quinn::Connection, why: String| {
        conn.close(2u32.into(), b"not a member of this run");
        why
    };
    let (mut send, mut recv) = timeout(Duration::from_secs(10), conn.accept_bi())
        .await
        .map_err(|_| refuse(&conn, "said nothing".into()))?
        .map_err(|e| format!("connection lost: {e}"))?;
    let join = match wire::read::<ToCoordinator, _>(&mut recv, 64 << 10).await {
        Ok(Some(ToCoordinator::Join(join))) => *join,
        Ok(_) => return Err(refuse(&conn, "did not ask to join".into())),
        Err(e) => return Err(refuse(&conn, format!("bad join request: {e}"))),
    };
    if join.protocol != wire::PROTOCOL {
        return Err(refuse(
            &conn,
            format!(
                "protocol {} (this coordinator speaks {})",
                join.protocol,
                wire::PROTOCOL
            ),
        ));
    }
    if !tls::verify_proof(secret, &conn, Role::Node, &join.proof) {
        return Err(refuse(
            &conn,
            format!(
                "node {:?} could not prove it knows the cluster secret",
                join.name.chars().take(64).collect::<String>()
            ),
        ));
    }
    if join.name.is_empty() || join.name.len() > 64 || join.name.chars().any(char::is_control) {
        return Err(refuse(
            &conn,
            "a node name must be 1-64 printable characters".into(),
        ));
    }
    let proof = tls::proof(secret, &conn, Role::Coordinator).map_err(|e| e.to_string())?;
    let welcome = ToNode::Welcome {
        proof,
        run: run_id.to_string(),
    };
    wire::write(&mut send, &welcome, 1 << 10)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Joined {
        conn,
        send,
        recv,
        join,
    })
}

/// What the wait for the nodes gave: all of them, or why not.
pub type JoinOutcome = Result<Vec<Joined>, String>;

/// Keeps the admitted nodes until `wanted` have joined, then hands them
/// over once; refuses whoever comes later.
pub struct Membership {
    wanted: usize,
    join_timeout: Duration,
    nodes: Vec<Joined>,
    /// Taken when the nodes (or the reason they did not all come) are handed over.
    full: Option<oneshot::Sender<JoinOutcome>>,
}

impl Membership {
    /// Waits for `wanted` nodes for at most `join_timeout`; the receiver
    /// gets them, or the reason the run cannot start (the nodes that did
    /// join have then been told).
    pub fn start(
        wanted: usize,
        join_timeout: Duration,
    ) -> (Addr<Membership>, oneshot::Receiver<JoinOutcome>) {
        let (full, nodes) = oneshot::channel();
        let addr = Actor::start(Membership {
            wanted,
            join_timeout,
            nodes: Vec::new(),
            full: Some(full),
        });
        (addr, nodes)
    }

    /// Tells every node joined so far that the run will not happen, then
    /// hands over `reason`.
    fn give_up(&mut self, reason: String, ctx: &mut Context<Self>) {
        let Some(full) = self.full.take() else {
            return;
        };
        let mut nodes = std::mem::take(&mut self.nodes);
        let told = reason.clone();
        ctx.wait(
            async move {
                for n in &mut nodes {
                    tell_and_close(n, &told, b"run aborted", 3).await;
                }
            }
            .into_actor(self)
            .map(move |_, _, _| {
                let _ = full.send(Err(reason));
            }),
        );
    }
}

impl Actor for Membership {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_later(self.join_timeout, |act, ctx| {
            let reason = format!(
                "only {} of {} nodes joined within {} s",
                act.nodes.len(),
                act.wanted,
                act.join_timeout.as_secs()
            );
            act.give_up(reason, ctx);
        });
    }
}

async fn tell_and_close(n: &mut Joined, reason: &str, close: &'static [u8], code: u32) {
    let _ = wire::write(
        &mut n.send,
        &ToNode::Abort {
            reason: reason.to_string(),
        },
        wire::DEFAULT_MAX_FRAME,
    )
    .await;
    n.conn.close(code.into(), close);
}

impl Handler<Joined> for Membership {
    type Result = ();

    fn handle(&mut self, mut j: Joined, ctx: &mut Context<Self>) {
        let refusal = if self.full.is_none() {
            eprintln!(
                "coordinator: refused node {:?} from {}: the run is full",
                j.join.name,
                j.conn.remote_address()
            );
            Some((
                "the run already has all its nodes".to_string(),
                &b"run full"[..],
            ))
        } else if self.nodes.iter().any(|n| n.join.name == j.join.name) {
            eprintln!(
                "coordinator: refused a second node named {:?} from {}",
                j.join.name,
                j.conn.remote_address()
            );
            Some((
                format!("a node named {:?} already joined", j.join.name),
                &b"duplicate name"[..],
            ))
        } else {
            None
        };
        if let Some((reason, close)) = refusal {
            ctx.spawn(
                async move { tell_and_close(&mut j, &reason, close, 2).await }.into_actor(self),
            );
            return;
        }
        eprintln!(
            "coordinator: node {:?} joined from {} ({}/{})",
            j.join.name,
            j.conn.remote_address(),
            self.nodes.len() + 1,
            self.wanted
        );
        self.nodes.push(j);
        if self.nodes.len() == self.wanted
            && let Some(full) = self.full.take()
        {
            let _ = full.send(Ok(std::mem::take(&mut self.nodes)));
        }
    }
}

/// Stop waiting: the nodes joined so far are told `0`.
pub struct GiveUp(pub String);

impl Message for GiveUp {
    type Result = ();
}

impl Handler<GiveUp> for Membership {
    type Result = ();

    fn handle(&mut self, GiveUp(reason): GiveUp, ctx: &mut Context<Self>) {
        self.give_up(reason, ctx);
    }
}
