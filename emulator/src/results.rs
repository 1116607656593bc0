//! The results directory of a run and its digest.
//!
//! ```text
//! <dir>/scenario.toml        the scenario as run (seed and defaults filled in)
//! <dir>/metrics.json         documented in docs/metrics.md
//! <dir>/metrics.csv          the same metrics as `metric,value` rows
//! <dir>/actors/<name>.jsonl  one JSON object per event, per actor
//! <dir>/digest               hex SHA-256 over all of the above
//! <dir>/run.json             wall-clock facts (time, host, version): not digested
//! ```
//!
//! The digest is SHA-256 over every digested file in path order, each fed as
//! its relative path, a NUL byte, its length as 8 little-endian bytes, and its
//! contents. Nothing that depends on the machine or the partitioning is
//! digested, so the same scenario and seed give the same digest everywhere.
//!
//! A directory is written under a temporary name and renamed into place, so
//! a results directory is either complete or absent, and an existing one is
//! replaced only when asked to (`--force`), after the new one is complete.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Files whose content the digest covers, by relative path (sorted).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ResultSet {
    files: Vec<(String, Vec<u8>)>,
}

impl ResultSet {
    pub fn new(mut files: Vec<(String, Vec<u8>)>) -> Self {
        files.sort_by(|a, b| a.0.cmp(&b.0));
        ResultSet { files }
    }

    pub fn files(&self) -> &[(String, Vec<u8>)] {
        &self.files
    }

    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, c)| c.as_slice())
    }

    /// Hex SHA-256 over the files (see the module docs).
    pub fn digest(&self) -> String {
        digest_of(self.files.iter().map(|(p, c)| (p.as_str(), c.as_slice())))
    }

    /// Writes the directory atomically (temporary name, then rename).
    /// `extra` files (such as `run.json`) are written but not digested.
    pub fn write(
        &self,
        dir: &Path,
        extra: &[(&str, Vec<u8>)],
        force: bool,
    ) -> Result<(), WriteError> {
        if dir.exists() && !force {
            return Err(WriteError::Exists(dir.to_path_buf()));
        }
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let base = dir
            .file_name()
            .ok_or_else(|| WriteError::BadPath(dir.to_path_buf()))?
            .to_string_lossy()
            .into_owned();
        fs::create_dir_all(&parent).map_err(|e| WriteError::io(&parent, e))?;
        let tmp = parent.join(format!(".{base}.tmp-{}", std::process::id()));
        let result = self.write_into(&tmp, extra).and_then(|()| {
            if dir.exists() {
                let old = parent.join(format!(".{base}.old-{}", std::process::id()));
                fs::rename(dir, &old).map_err(|e| WriteError::io(dir, e))?;
                fs::rename(&tmp, dir).map_err(|e| WriteError::io(dir, e))?;
                fs::remove_dir_all(&old).map_err(|e| WriteError::io(&old, e))
            } else {
                fs::rename(&tmp, dir).map_err(|e| WriteError::io(dir, e))
            }
        });
        if result.is_err() {
            let _ = fs::remove_dir_all(&tmp);
        }
        result
    }

    fn write_into(&self, tmp: &Path, extra: &[(&str, Vec<u8>)]) -> Result<(), WriteError> {
        if tmp.exists() {
            fs::remove_dir_all(tmp).map_err(|e| WriteError::io(tmp, e))?;
        }
        fs::create_dir_all(tmp).map_err(|e| WriteError::io(tmp, e))?;
        let digest = format!("{}\n", self.digest());
        let all = self
            .files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_slice()))
            .chain(extra.iter().map(|(p, c)| (*p, c.as_slice())))
            .chain(std::iter::once(("digest", digest.as_bytes())));
        for (rel, content) in all {
            let path = tmp.join(rel);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| WriteError::io(parent, e))?;
            }
            fs::write(&path, content).map_err(|e| WriteError::io(&path, e))?;
        }
        Ok(())
    }
}

/// The digest rule, shared by runs and by checks of existing directories.
pub fn digest_of<'a>(files: impl Iterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut hasher = Sha256::new();
    for (path, content) in files {
        hasher.update(path.as_bytes());
        hasher.update([0u8]);
        hasher.update((content.len() as u64).to_le_bytes());
        hasher.update(content);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Recomputes the digest of a results directory from its files.
pub fn digest_dir(dir: &Path) -> io::Result<String> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.retain(|(p, _)| p != "digest" && p != "run.json");
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(digest_of(
        files.iter().map(|(p, c)| (p.as_str(), c.as_slice())),
    ))
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> io::Result<()> {
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
            out.push((rel, fs::read(&path)?));
        }
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "results directory {0} already exists (use --force to replace it, or --out to choose another)"
    )]
    Exists(PathBuf),
    #[error("cannot use {0} as a results directory")]
    BadPath(PathBuf),
    #[error("cannot write {path}: {source}")]
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

    fn set() -> ResultSet {
        ResultSet::new(vec![
            ("metrics.json".into(), b"{}\n".to_vec()),
            ("actors/a.jsonl".into(), b"{\"t_ns\":0}\n".to_vec()),
        ])
    }

    #[test]
    fn digest_depends_on_names_and_contents() {
        let a = set().digest();
        assert_eq!(a.len(), 64);
        assert_eq!(a, set().digest());
        let renamed = ResultSet::new(vec![
            ("metrics.json".into(), b"{}\n".to_vec()),
            ("actors/b.jsonl".into(), b"{\"t_ns\":0}\n".to_vec()),
        ]);
        assert_ne!(a, renamed.digest());
        // moving a byte between files changes the digest (lengths are framed)
        let shifted = ResultSet::new(vec![
            ("metrics.json".into(), b"{}\n{".to_vec()),
            ("actors/a.jsonl".into(), b"\"t_ns\":0}\n".to_vec()),
        ]);
        assert_ne!(a, shifted.digest());
    }

    #[test]
    fn written_directory_digests_to_the_same_value_and_is_not_overwritten() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run-s1");
        set()
            .write(&dir, &[("run.json", b"{\"wall\":1}".to_vec())], false)
            .unwrap();
        assert_eq!(digest_dir(&dir).unwrap(), set().digest());
        let on_disk = fs::read_to_string(dir.join("digest")).unwrap();
        assert_eq!(on_disk.trim(), set().digest());
        let err = set().write(&dir, &[], false).unwrap_err();
        assert!(matches!(err, WriteError::Exists(_)), "{err}");
        let other = ResultSet::new(vec![("metrics.json".into(), b"{\"x\":1}\n".to_vec())]);
        other.write(&dir, &[], true).unwrap();
        assert_eq!(digest_dir(&dir).unwrap(), other.digest());
        assert!(
            !dir.join("actors").exists(),
            "the old directory was replaced, not merged"
        );
        let leftovers: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary directories remain");
    }
}
