//! Ctrl-C as an actor: it publishes each interrupt on a watch channel, so
//! whatever waits (a run's driver, a node's partition) takes it as one more
//! event; it never decides anything that reaches a result.

use actix::prelude::*;
use tokio::sync::watch;

/// Listens for Ctrl-C for as long as it runs; counts interrupts on its channel.
pub struct Interrupts {
    count: watch::Sender<u32>,
}

impl Interrupts {
    /// Starts listening; the receiver sees the number of interrupts so far.
    pub fn start() -> (Addr<Interrupts>, watch::Receiver<u32>) {
        let (count, seen) = watch::channel(0);
        (Actor::start(Interrupts { count }), seen)
    }

    fn listen(&self, ctx: &mut Context<Self>) {
        ctx.wait(
            async { tokio::signal::ctrl_c().await.is_ok() }
                .into_actor(self)
                .map(|ok, act, ctx| {
                    if ok {
                        act.count.send_modify(|n| *n += 1);
                        act.listen(ctx);
                    }
                }),
        );
    }
}

impl Actor for Interrupts {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.listen(ctx);
    }
}

/// Resolves at the next interrupt after the ones `seen` already counts;
/// never, if the listener is gone.
pub async fn interrupted(seen: &mut watch::Receiver<u32>) {
    if seen.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}
