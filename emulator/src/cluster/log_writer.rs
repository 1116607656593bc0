//! Writes the actors' logs that nodes hand to the coordinator, on a thread
//! of its own (an actix `SyncArbiter`), so that file writes never hold up
//! the links. Chunks of one actor's log arrive in order, since each node
//! sends an actor's log whole before the next.

use std::io::Write;
use std::path::PathBuf;

use actix::prelude::*;

/// Appends to the log files of one run.
pub struct LogWriter {
    dir: PathBuf,
    names: Vec<String>,
    /// The file being appended to, by actor id.
    open: Option<(u32, std::fs::File)>,
    failed: Option<String>,
    /// Told the first failure, so the run stops at once.
    on_failure: Recipient<LogFailed>,
}

impl LogWriter {
    /// Starts the writer on its own thread; `names[id]` names actor `id`'s file.
    pub fn start(
        dir: PathBuf,
        names: Vec<String>,
        on_failure: Recipient<LogFailed>,
    ) -> Addr<LogWriter> {
        SyncArbiter::start(1, move || LogWriter {
            dir: dir.clone(),
            names: names.clone(),
            open: None,
            failed: None,
            on_failure: on_failure.clone(),
        })
    }

    fn append(&mut self, id: u32, bytes: &[u8]) -> Result<(), String> {
        if self.open.as_ref().is_none_or(|(cur, _)| *cur != id) {
            let name = self
                .names
                .get(id as usize)
                .ok_or_else(|| format!("no actor #{id}"))?;
            let path = self.dir.join(format!("{name}.jsonl"));
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            self.open = Some((id, file));
        }
        if let Some((_, file)) = &mut self.open {
            file.write_all(bytes)
                .map_err(|e| format!("cannot write the log of actor #{id}: {e}"))?;
        }
        Ok(())
    }
}

impl Actor for LogWriter {
    type Context = SyncContext<Self>;
}

/// A chunk of actor `id`'s log.
pub struct Append {
    pub id: u32,
    pub bytes: Vec<u8>,
}

impl Message for Append {
    type Result = ();
}

impl Handler<Append> for LogWriter {
    type Result = ();

    fn handle(&mut self, chunk: Append, _: &mut SyncContext<Self>) {
        if self.failed.is_some() {
            return;
        }
        if let Err(why) = self.append(chunk.id, &chunk.bytes) {
            self.failed = Some(why.clone());
            self.on_failure.do_send(LogFailed(why));
        }
    }
}

/// The writer could not write; the run stops with this reason.
pub struct LogFailed(pub String);

impl Message for LogFailed {
    type Result = ();
}

/// Close the open file once everything before is written; the first
/// failure, if any.
pub struct Flush;

impl Message for Flush {
    type Result = Result<(), String>;
}

impl Handler<Flush> for LogWriter {
    type Result = Result<(), String>;

    fn handle(&mut self, _: Flush, _: &mut SyncContext<Self>) -> Result<(), String> {
        self.open = None;
        self.failed.clone().map_or(Ok(()), Err)
    }
}
