//! The results directory of a run and its digest.
//!
//! ```text
//! <dir>/scenario.toml        the scenario as run (seed and defaults filled in)
//! <dir>/metrics.json         documented in docs/metrics.md
//! <dir>/metrics.csv          the same metrics as `metric,value` rows
//! <dir>/timeseries.csv       powered servers and switches over time
//! <dir>/applications.csv     one row per finished application (if any)
//! <dir>/traces/<tenant>.csv  copies of replayed traces
//! <dir>/program/<file>       copies of the external scheduler's files
//! <dir>/actors/<name>.jsonl  one JSON object per event, per actor
//! <dir>/digest               hex SHA-256 over all of the above
//! <dir>/run.json             wall-clock facts (time, host, version): not digested
//! <dir>/work.csv             each actor's events and wall time: not digested
//! ```
//!
//! The digest is SHA-256 over every digested file in path order, each fed as
//! its relative path, a NUL byte, its length as 8 little-endian bytes, and its
//! contents. Nothing that depends on the machine or the partitioning is
//! digested, so the same scenario and seed give the same digest everywhere.
//!
//! A directory is built under a temporary name ([`Staging`]) and renamed into
//! place, so a results directory is either complete or absent; an existing one
//! is replaced only when asked to (`--force`), after the new one is complete.
//! Large files (actor logs) can be written into the staging directory while
//! the run goes on and are referenced here by path.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The content of one results file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Bytes(Vec<u8>),
    /// Already on disk (e.g. a log the engine wrote during the run).
    File(PathBuf),
}

impl Content {
    fn len(&self) -> io::Result<u64> {
        match self {
            Content::Bytes(b) => Ok(b.len() as u64),
            Content::File(p) => Ok(fs::metadata(p)?.len()),
        }
    }

    /// Feeds the content to `sink` in pieces, without loading a file whole.
    fn stream(&self, mut sink: impl FnMut(&[u8])) -> io::Result<()> {
        match self {
            Content::Bytes(b) => sink(b),
            Content::File(p) => {
                let mut file = fs::File::open(p)?;
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = file.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    sink(&buf[..n]);
                }
            }
        }
        Ok(())
    }
}

/// Files whose content the digest covers, by relative path (sorted).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ResultSet {
    files: Vec<(String, Content)>,
}

impl ResultSet {
    pub fn new(mut files: Vec<(String, Content)>) -> Self {
        files.sort_by(|a, b| a.0.cmp(&b.0));
        ResultSet { files }
    }

    /// Relative paths of the files, in digest order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(p, _)| p.as_str())
    }

    /// The content of one file, read from disk if it lives there.
    pub fn read(&self, path: &str) -> io::Result<Option<Vec<u8>>> {
        let Some((_, content)) = self.files.iter().find(|(p, _)| p == path) else {
            return Ok(None);
        };
        let mut out = Vec::new();
        content.stream(|b| out.extend_from_slice(b))?;
        Ok(Some(out))
    }

    /// Hex SHA-256 over the files (see the module docs).
    pub fn digest(&self) -> io::Result<String> {
        let mut hasher = Sha256::new();
        for (path, content) in &self.files {
            hash_header(&mut hasher, path, content.len()?);
            content.stream(|b| hasher.update(b))?;
        }
        Ok(hex(&hasher.finalize()))
    }
}

fn hash_header(hasher: &mut Sha256, path: &str, len: u64) {
    hasher.update(path.as_bytes());
    hasher.update([0u8]);
    hasher.update(len.to_le_bytes());
}

/// The results directory `dcemu run` picks without `--out`:
/// `<output_dir>/<name>-s<seed>`, followed by the `--set` overrides that
/// make this run differ from the file (other than `run.seed` and
/// `run.name`, which the name already carries), so that two policies on
/// the same scenario and seed land side by side:
/// `quickstart-s1-scheduler.placement=least-loaded`. Characters a file
/// name should not hold become `_`; past 80 characters the overrides are
/// named by a short hash of them instead (`-o1a2b3c4d`).
pub fn default_dir(output_dir: &Path, name: &str, seed: u64, overrides: &[String]) -> PathBuf {
    let shown: Vec<&String> = overrides
        .iter()
        .filter(|o| !(o.starts_with("run.seed=") || o.starts_with("run.name=")))
        .collect();
    let mut dir = format!("{name}-s{seed}");
    if !shown.is_empty() {
        let joined = shown
            .iter()
            .map(|o| o.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let safe: String = joined
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '=' | '-' | ',' | '+' => c,
                _ => '_',
            })
            .collect();
        if safe.len() <= 80 {
            dir.push('-');
            dir.push_str(&safe);
        } else {
            let hash = Sha256::digest(joined.as_bytes());
            dir.push_str(&format!("-o{}", &hex(&hash)[..8]));
        }
    }
    output_dir.join(dir)
}

/// Hex SHA-256 of `bytes` (`run.json`'s hashes of the program files).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A results directory under construction: `.<name>.tmp-<pid>` beside its
/// final place. Dropped without [`Staging::commit`], it is removed, and any
/// existing results directory is left as it was.
#[derive(Debug)]
pub struct Staging {
    target: PathBuf,
    tmp: PathBuf,
    parent: PathBuf,
    base: String,
    force: bool,
    committed: bool,
}

impl Staging {
    /// Refuses an existing `target` unless `force`; creates the temporary directory.
    pub fn create(target: &Path, force: bool) -> Result<Self, WriteError> {
        if target.exists() && !force {
            if let Ok(why) = fs::read_to_string(target.join("INCOMPLETE")) {
                return Err(WriteError::ExistsIncomplete(
                    target.to_path_buf(),
                    why.trim().to_string(),
                ));
            }
            return Err(WriteError::Exists(target.to_path_buf()));
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let base = target
            .file_name()
            .ok_or_else(|| WriteError::BadPath(target.to_path_buf()))?
            .to_string_lossy()
            .into_owned();
        let tmp = parent.join(format!(".{base}.tmp-{}", std::process::id()));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(|e| WriteError::io(&tmp, e))?;
        }
        fs::create_dir_all(tmp.join("actors")).map_err(|e| WriteError::io(&tmp, e))?;
        Ok(Staging {
            target: target.to_path_buf(),
            tmp,
            parent,
            base,
            force,
            committed: false,
        })
    }

    /// Where actor logs go while the run is on.
    pub fn logs_dir(&self) -> PathBuf {
        self.tmp.join("actors")
    }

    /// Writes the in-memory files, `extra` (not digested) and `digest`, then
    /// moves the directory into place (replacing an existing one only with `force`).
    pub fn commit(
        mut self,
        results: &ResultSet,
        digest: &str,
        extra: &[(&str, Vec<u8>)],
    ) -> Result<(), WriteError> {
        for (rel, content) in &results.files {
            let path = self.tmp.join(rel);
            match content {
                Content::File(p) if *p == path => {}
                Content::File(p) => {
                    if let Some(parent) = path.parent() {
                        fs::create_dir_all(parent).map_err(|e| WriteError::io(parent, e))?;
                    }
                    fs::copy(p, &path).map_err(|e| WriteError::io(&path, e))?;
                }
                Content::Bytes(b) => write_file(&path, b)?,
            }
        }
        for (rel, bytes) in extra {
            write_file(&self.tmp.join(rel), bytes)?;
        }
        write_file(&self.tmp.join("digest"), format!("{digest}\n").as_bytes())?;
        if self.target.exists() {
            if !self.force {
                return Err(WriteError::Exists(self.target.clone()));
            }
            let old = self
                .parent
                .join(format!(".{}.old-{}", self.base, std::process::id()));
            fs::rename(&self.target, &old).map_err(|e| WriteError::io(&self.target, e))?;
            fs::rename(&self.tmp, &self.target).map_err(|e| WriteError::io(&self.target, e))?;
            self.committed = true;
            fs::remove_dir_all(&old).map_err(|e| WriteError::io(&old, e))?;
        } else {
            fs::rename(&self.tmp, &self.target).map_err(|e| WriteError::io(&self.target, e))?;
            self.committed = true;
        }
        Ok(())
    }
}

impl Staging {
    /// Moves what a failed run left (e.g. partial logs) into place with a
    /// file `INCOMPLETE` saying why, and no `digest`, so it cannot pass for
    /// a complete results directory. With `force` it replaces whatever is
    /// at the target, complete or not, as a complete run would. Without,
    /// an existing directory (one that appeared while the run went on) is
    /// never replaced: the files then go to `<target>.incomplete`,
    /// replacing an older one of that name.
    pub fn mark_incomplete(mut self, reason: &str) -> Result<PathBuf, WriteError> {
        write_file(
            &self.tmp.join("INCOMPLETE"),
            format!("this run did not finish: {reason}\n").as_bytes(),
        )?;
        let target = match self.target.exists() && !self.force {
            true => self.parent.join(format!("{}.incomplete", self.base)),
            false => self.target.clone(),
        };
        if target.exists() {
            let old = self
                .parent
                .join(format!(".{}.old-{}", self.base, std::process::id()));
            fs::rename(&target, &old).map_err(|e| WriteError::io(&target, e))?;
            fs::rename(&self.tmp, &target).map_err(|e| WriteError::io(&target, e))?;
            self.committed = true;
            fs::remove_dir_all(&old).map_err(|e| WriteError::io(&old, e))?;
        } else {
            fs::rename(&self.tmp, &target).map_err(|e| WriteError::io(&target, e))?;
            self.committed = true;
        }
        Ok(target)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| WriteError::io(parent, e))?;
    }
    fs::write(path, bytes).map_err(|e| WriteError::io(path, e))
}

/// Recomputes the digest of a results directory from its files.
pub fn digest_dir(dir: &Path) -> io::Result<String> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.retain(|(p, _)| {
        p != "digest" && p != "run.json" && p != crate::engine::balance::WORK_FILE
    });
    ResultSet::new(files).digest()
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, Content)>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else {
            let rel = path
                .strip_prefix(root)
                .map_err(io::Error::other)?
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, Content::File(path)));
        }
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "results directory {} already exists (use --force to replace it, or --out to choose another)",
        .0.display()
    )]
    Exists(PathBuf),
    #[error(
        "results directory {} already exists, from a run that did not finish ({}); use --force to replace it, or --out to choose another",
        .0.display(), .1
    )]
    ExistsIncomplete(PathBuf, String),
    #[error("cannot use {} as a results directory", .0.display())]
    BadPath(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl WriteError {
    fn io(path: &Path, source: io::Error) -> Self {
        WriteError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_directory_names_the_overrides_that_differ() {
        let out = Path::new("results");
        let dir = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            default_dir(out, "quickstart", 1, &sets)
        };
        assert_eq!(dir(&[]), out.join("quickstart-s1"));
        assert_eq!(dir(&["run.seed=1"]), out.join("quickstart-s1"));
        assert_eq!(
            dir(&["scheduler.placement=least-loaded"]),
            out.join("quickstart-s1-scheduler.placement=least-loaded")
        );
        assert_eq!(
            dir(&["run.end=2h", "scheduler.external.command=python3 my/p.py"]),
            out.join("quickstart-s1-run.end=2h,scheduler.external.command=python3_my_p.py")
        );
        assert_ne!(
            dir(&["scheduler.placement=random"]),
            dir(&["scheduler.placement=best-fit"])
        );
        let long = ["tenants.0.arrivals.rate_per_s=0.25"; 4];
        let hashed = dir(&long).to_string_lossy().into_owned();
        assert!(hashed.starts_with("results/quickstart-s1-o"), "{hashed}");
        assert_eq!(hashed.len(), "results/quickstart-s1-o".len() + 8);
    }

    fn bytes(s: &str) -> Content {
        Content::Bytes(s.as_bytes().to_vec())
    }

    fn set() -> ResultSet {
        ResultSet::new(vec![
            ("metrics.json".into(), bytes("{}\n")),
            ("actors/a.jsonl".into(), bytes("{\"t_ns\":0}\n")),
        ])
    }

    #[test]
    fn digest_depends_on_names_and_contents() {
        let a = set().digest().unwrap();
        assert_eq!(a.len(), 64);
        assert_eq!(a, set().digest().unwrap());
        let renamed = ResultSet::new(vec![
            ("metrics.json".into(), bytes("{}\n")),
            ("actors/b.jsonl".into(), bytes("{\"t_ns\":0}\n")),
        ]);
        assert_ne!(a, renamed.digest().unwrap());
        let shifted = ResultSet::new(vec![
            ("metrics.json".into(), bytes("{}\n{")),
            ("actors/a.jsonl".into(), bytes("\"t_ns\":0}\n")),
        ]);
        assert_ne!(a, shifted.digest().unwrap(), "lengths are framed");
    }

    #[test]
    fn file_content_digests_like_the_same_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.jsonl");
        fs::write(&path, "{\"t_ns\":0}\n").unwrap();
        let on_disk = ResultSet::new(vec![
            ("metrics.json".into(), bytes("{}\n")),
            ("actors/a.jsonl".into(), Content::File(path)),
        ]);
        assert_eq!(on_disk.digest().unwrap(), set().digest().unwrap());
        assert_eq!(
            on_disk.read("actors/a.jsonl").unwrap().unwrap(),
            b"{\"t_ns\":0}\n"
        );
    }

    fn commit(dir: &Path, set: &ResultSet, force: bool) -> Result<(), WriteError> {
        let staging = Staging::create(dir, force)?;
        staging.commit(set, &set.digest().unwrap(), &[("run.json", b"{}".to_vec())])
    }

    #[test]
    fn a_committed_directory_digests_to_its_digest_and_is_kept_unless_forced() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run-s1");
        commit(&dir, &set(), false).unwrap();
        let digest = set().digest().unwrap();
        assert_eq!(digest_dir(&dir).unwrap(), digest);
        assert_eq!(
            fs::read_to_string(dir.join("digest")).unwrap().trim(),
            digest
        );
        let err = commit(&dir, &set(), false).unwrap_err();
        assert!(matches!(err, WriteError::Exists(_)), "{err}");
        let other = ResultSet::new(vec![("metrics.json".into(), bytes("{\"x\":1}\n"))]);
        commit(&dir, &other, true).unwrap();
        assert_eq!(digest_dir(&dir).unwrap(), other.digest().unwrap());
        assert!(!dir.join("actors/a.jsonl").exists(), "replaced, not merged");
        let entries: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(entries.len(), 1, "no temporary directories remain");
    }

    #[test]
    fn an_abandoned_staging_directory_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run-s1");
        commit(&dir, &set(), false).unwrap();
        let staging = Staging::create(&dir, true).unwrap();
        fs::write(staging.logs_dir().join("x.jsonl"), "partial").unwrap();
        drop(staging);
        assert_eq!(
            digest_dir(&dir).unwrap(),
            set().digest().unwrap(),
            "old results intact"
        );
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    /// A failed run leaves its files marked `INCOMPLETE`; a rerun without
    /// `--force` is refused naming why the first failed; one with `--force`
    /// replaces it whether it fails again or completes, and no
    /// `.incomplete` sibling appears.
    #[test]
    fn force_replaces_an_incomplete_directory_whatever_the_rerun_does() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        let failed = |force: bool, why: &str| {
            let staging = Staging::create(&dir, force).unwrap();
            fs::write(staging.logs_dir().join("a.jsonl"), why).unwrap();
            staging.mark_incomplete(why).unwrap()
        };
        assert_eq!(failed(false, "first"), dir);
        let err = Staging::create(&dir, false).unwrap_err();
        assert!(err.to_string().contains("did not finish"), "{err}");
        assert!(err.to_string().contains("first"), "{err}");
        assert_eq!(failed(true, "second"), dir);
        let why = fs::read_to_string(dir.join("INCOMPLETE")).unwrap();
        assert!(why.contains("second") && !why.contains("first"), "{why}");
        commit(&dir, &set(), true).unwrap();
        assert!(!dir.join("INCOMPLETE").exists());
        assert_eq!(digest_dir(&dir).unwrap(), set().digest().unwrap());
        assert_eq!(
            fs::read_dir(tmp.path()).unwrap().count(),
            1,
            "no t.incomplete"
        );
        // a directory that appears during a run without --force is kept
        let staging = Staging::create(&tmp.path().join("u"), false).unwrap();
        fs::create_dir(tmp.path().join("u")).unwrap();
        fs::write(tmp.path().join("u/digest"), "theirs").unwrap();
        let kept = staging.mark_incomplete("late").unwrap();
        assert_eq!(kept, tmp.path().join("u.incomplete"));
        assert!(kept.join("INCOMPLETE").exists());
        assert_eq!(
            fs::read_to_string(tmp.path().join("u/digest")).unwrap(),
            "theirs"
        );
    }
}
