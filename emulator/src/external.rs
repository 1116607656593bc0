//! The external scheduler's program as a child process: the
//! [`Oracle`] the model's `external` placement asks (protocol v1 in
//! docs/external-scheduler.md; the messages themselves are
//! `dcemu_actors::external`). It starts the program at the first exchange
//! (so only the process hosting the scheduler actor runs it), writes one
//! line to its stdin and waits for one line from its stdout, at most
//! `timeout` of wall-clock time. Its stderr goes to dcemu's stderr, each
//! line prefixed with the program's name, and the last lines are kept for
//! the error if it dies.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, bounded};
use dcemu_actors::config::ExternalConfig;
use dcemu_actors::external::{MAX_LINE, Oracle};

/// Lines of the program's stderr an error quotes.
const STDERR_TAIL: usize = 8;

/// How long a program gets to exit after its stdin closed at the end of the
/// run, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The program of a `[scheduler.external]` section, run from `dir`.
pub struct Program {
    command: Vec<String>,
    dir: PathBuf,
    timeout: Duration,
    running: Option<Running>,
}

struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Result<String, String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Program {
    pub fn new(cfg: &ExternalConfig, dir: &Path) -> Self {
        Program {
            command: cfg.command.clone(),
            dir: dir.to_path_buf(),
            timeout: Duration::from_nanos(cfg.timeout.as_nanos()),
            running: None,
        }
    }

    fn start(&mut self) -> Result<&mut Running, String> {
        if self.running.is_some() {
            return self.running.as_mut().ok_or_else(String::new);
        }
        let (program, args) = self.command.split_first().ok_or("the command is empty")?;
        let dir = if self.dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.dir
        };
        let mut child = Command::new(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "cannot start it: no program {program:?} (relative to {}, or on PATH)",
                    dir.display()
                ),
                _ => format!("cannot start it in {}: {e}", dir.display()),
            })?;
        let (tx, lines) = bounded(1);
        let stdout = child.stdout.take().ok_or("no stdout")?;
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let line = read_line(&mut reader);
                let end = line.is_err();
                if tx.send(line).is_err() || end {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(err) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            let name = self.command.join(" ");
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    eprintln!("[{name}] {line}");
                    if let Ok(mut tail) = tail.lock() {
                        if tail.len() == STDERR_TAIL {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        Ok(self.running.insert(Running {
            child,
            stdin,
            lines,
            stderr,
        }))
    }
}

/// One line of at most [`MAX_LINE`] bytes, without its newline; an error
/// at the end of the output or on a line that is too long or not UTF-8.
/// What dcemu reads the program's output with (the `external` fuzz target
/// feeds it bytes).
pub fn read_line(reader: &mut impl BufRead) -> Result<String, String> {
    let mut bytes = Vec::new();
    let n = reader
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut bytes)
        .map_err(|e| format!("cannot read its output: {e}"))?;
    if n == 0 {
        return Err("it closed its output".into());
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    } else if bytes.len() > MAX_LINE {
        return Err(format!("it wrote a line longer than {MAX_LINE} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "it wrote a line that is not UTF-8".into())
}

/// `text` (a scenario) with its scheduler's program set to `command`, a
/// shell-quoted line (`dcemu run S.toml --scheduler 'python3 my.py'`):
/// `[scheduler.external]`'s `command` replaced (its other fields kept, or
/// the section made with the defaults), and, when the program decides
/// placement, `placement = "external"`. Words naming a file relative to
/// `cwd` become absolute paths, so the program runs as typed, from
/// wherever the scenario is, and the scenario recorded with the results
/// names it wherever that is re-run from.
pub fn attach_program(text: &str, command: &str, cwd: &Path) -> Result<String, String> {
    let words = shlex::split(command)
        .ok_or_else(|| format!("--scheduler {command:?}: unbalanced quotes"))?;
    if words.is_empty() {
        return Err("--scheduler: the command is empty".into());
    }
    let words: Vec<String> = words
        .into_iter()
        .enumerate()
        .map(|(i, w)| {
            let path = cwd.join(&w);
            let file = (i > 0 || w.contains('/')) && !w.starts_with('-') && path.is_file();
            match file.then(|| path.canonicalize().ok()).flatten() {
                Some(abs) => abs.display().to_string(),
                None => w,
            }
        })
        .collect();
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("not valid TOML: {}", e.message()))?;
    let scheduler = doc
        .entry("scheduler")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .ok_or("[scheduler] is not a table")?;
    let external = scheduler
        .entry("external")
        .or_insert(toml_edit::table())
        .as_table_like_mut()
        .ok_or("[scheduler.external] is not a table")?;
    external.insert(
        "command",
        toml_edit::value(
            words
                .iter()
                .map(String::as_str)
                .collect::<toml_edit::Array>(),
        ),
    );
    let places = external
        .get("stages")
        .and_then(toml_edit::Item::as_array)
        .is_none_or(|stages| stages.iter().any(|s| s.as_str() == Some("placement")));
    if places {
        scheduler.insert("placement", toml_edit::value("external"));
    }
    Ok(doc.to_string())
}

/// Whether `command` can start from `dir`: its program exists (a path,
/// relative to `dir`, or a name on `PATH`) and so does each argument that
/// names a script file (`*.py`, `*.sh`, … or a relative path with a `/`).
/// What `dcemu validate` and every run check before the first exchange, so
/// that a misspelt script is a scenario error, not a failed run.
pub fn check_command(command: &[String], dir: &Path) -> Result<(), String> {
    let Some((program, args)) = command.split_first() else {
        return Err("the command is empty".into());
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let shown = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let shown = shown.display();
    if program.contains('/') {
        if !dir.join(program).is_file() {
            return Err(format!(
                "the program {program:?} does not exist (relative to {shown})"
            ));
        }
    } else if !on_path(program) {
        return Err(format!("no program {program:?} on PATH (is it installed?)"));
    }
    for arg in args {
        if names_a_script(arg) && !dir.join(arg).is_file() {
            return Err(format!(
                "{program}'s file {arg:?} does not exist (relative to {shown}, the scenario file's directory)"
            ));
        }
    }
    Ok(())
}

/// The largest program file a results directory keeps a copy of, and how
/// many files at most: a scheduler's script, not its data.
const MAX_PROGRAM_FILE: u64 = 1 << 20;
const MAX_PROGRAM_FILES: usize = 16;

/// The files of `command` (run from `dir`) a results directory records as
/// `program/<name>`, so that the record of a run includes the scheduler
/// that made its decisions (issue 40): each argument naming a script file
/// ([`check_command`]'s rule), and the program itself when it is a path
/// to a file, up to [`MAX_PROGRAM_FILE`] bytes each, [`MAX_PROGRAM_FILES`]
/// in all. Returns (the name in the results, the file).
pub fn program_files(command: &[String], dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for (i, word) in command.iter().enumerate() {
        let named = if i == 0 {
            word.contains('/')
        } else {
            names_a_script(word) || Path::new(word).is_absolute()
        };
        let path = dir.join(word);
        let small =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_PROGRAM_FILE);
        if !named || !small || out.len() == MAX_PROGRAM_FILES {
            continue;
        }
        let file = path
            .file_name()
            .map_or_else(|| format!("file-{i}"), |n| n.to_string_lossy().into_owned());
        let mut name = format!("program/{file}");
        if out.iter().any(|(n, _)| *n == name) {
            name = format!("program/{i}-{file}");
        }
        out.push((name, path));
    }
    out
}

/// Script extensions an argument of the command is taken as a file by.
const SCRIPTS: &[&str] = &[
    ".py", ".sh", ".js", ".rb", ".pl", ".jl", ".r", ".R", ".lua", ".jar",
];

fn names_a_script(arg: &str) -> bool {
    !arg.starts_with('-')
        && !arg.contains('=')
        && !arg.contains('{')
        && (SCRIPTS.iter().any(|ext| arg.ends_with(ext))
            || (arg.contains('/') && !arg.contains(' ') && !arg.starts_with('/')))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
}

impl Running {
    /// What became of a program that stopped answering, with the end of
    /// its stderr.
    fn death(&mut self, why: &str) -> String {
        let deadline = Instant::now() + Duration::from_millis(500);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break None,
            }
        };
        let mut out = match status {
            Some(s) => format!("it exited ({s}) without answering"),
            None => why.to_string(),
        };
        std::thread::sleep(Duration::from_millis(50));
        // its stderr went to dcemu's as it came (above): only its last
        // line, the error a traceback ends with, is repeated here
        if let Ok(tail) = self.stderr.lock()
            && let Some(last) = tail.back()
        {
            out.push_str(&format!("; its stderr (above) ended with: {}", last.trim()));
        }
        out
    }
}

impl Oracle for Program {
    fn program(&self) -> String {
        self.command.join(" ")
    }

    fn exchange(&mut self, line: &str) -> Result<String, String> {
        let timeout = self.timeout;
        let running = self.start()?;
        let written = match running.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.write_all(b"\n"))
                .and_then(|()| stdin.flush()),
            None => Err(std::io::Error::other("its stdin is closed")),
        };
        if let Err(e) = written {
            return Err(running.death(&format!("cannot write to it ({e})")));
        }
        match running.lines.recv_timeout(timeout) {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(why)) => Err(running.death(&why)),
            Err(RecvTimeoutError::Timeout) => {
                let _ = running.child.kill();
                Err(format!(
                    "no answer within the timeout of {} s (wall clock, scheduler.external.timeout); \
                     the program was killed",
                    timeout.as_secs_f64()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(running.death("it closed its output")),
        }
    }
}

impl Drop for Program {
    /// Closes the program's stdin (its end of the run) and gives it
    /// [`EXIT_GRACE`] to exit before killing it.
    fn drop(&mut self) {
        let Some(mut running) = self.running.take() else {
            return;
        };
        drop(running.stdin.take());
        let deadline = Instant::now() + EXIT_GRACE;
        while Instant::now() < deadline {
            match running.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        let _ = running.child.kill();
        let _ = running.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_attached_from_the_command_line_replaces_the_placement() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("mine.py"), "").unwrap();
        let stock = "[run]\nname = \"x\"\n[scheduler]\nplacement = \"paragon\"\nslots = \"none\"\n";
        let text = attach_program(stock, "python3 'mine.py' --fast", tmp.path()).unwrap();
        let t: toml::Table = text.parse().unwrap();
        let abs = tmp.path().join("mine.py").canonicalize().unwrap();
        assert_eq!(
            t["scheduler"]["external"]["command"],
            toml::Value::Array(vec![
                "python3".into(),
                abs.display().to_string().into(),
                "--fast".into()
            ])
        );
        assert_eq!(t["scheduler"]["placement"].as_str(), Some("external"));
        assert_eq!(t["scheduler"]["slots"].as_str(), Some("none"));
        let only = "[scheduler.external]\ncommand = [\"old\"]\nstages = [\"preemption\"]\n";
        let text = attach_program(only, "sh run.sh", tmp.path()).unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(
            t["scheduler"]["external"]["stages"][0].as_str(),
            Some("preemption")
        );
        assert!(t["scheduler"].get("placement").is_none(), "preemption only");
        assert!(attach_program(stock, "python3 'mine.py", tmp.path()).is_err());
        assert!(attach_program(stock, "  ", tmp.path()).is_err());
    }

    #[test]
    fn the_programs_files_are_named_for_the_record() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("lib")).unwrap();
        std::fs::write(tmp.path().join("pack.py"), "x").unwrap();
        std::fs::write(tmp.path().join("lib/pack.py"), "y").unwrap();
        std::fs::write(
            tmp.path().join("big.py"),
            vec![b'#'; (MAX_PROGRAM_FILE + 1) as usize],
        )
        .unwrap();
        let cmd = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let files = program_files(
            &cmd(&[
                "python3",
                "pack.py",
                "--mode",
                "x",
                "lib/pack.py",
                "big.py",
                "gone.py",
            ]),
            tmp.path(),
        );
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["program/pack.py", "program/4-pack.py"]);
        assert_eq!(files[1].1, tmp.path().join("lib/pack.py"));
    }

    #[test]
    fn a_command_is_checked_for_its_program_and_script() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("mine.py"), "").unwrap();
        let cmd = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            check_command(&cmd(&["sh", "mine.py", "--fast"]), tmp.path()),
            Ok(())
        );
        let e = check_command(&cmd(&["sh", "mnie.py"]), tmp.path()).unwrap_err();
        assert!(e.contains("sh's file \"mnie.py\" does not exist"), "{e}");
        let e = check_command(&cmd(&["no-such-program-here"]), tmp.path()).unwrap_err();
        assert!(e.contains("on PATH"), "{e}");
        let e = check_command(&cmd(&["./run-me"]), tmp.path()).unwrap_err();
        assert!(e.contains("\"./run-me\" does not exist"), "{e}");
        assert!(check_command(&[], tmp.path()).is_err());
        assert_eq!(
            check_command(&cmd(&["sh", "-c", "exit 3", "mode=a/b"]), tmp.path()),
            Ok(()),
            "flags, inline code and settings are not files"
        );
    }

    #[test]
    fn lines_are_bounded_and_utf8() {
        let mut ok = BufReader::new(&b"{\"a\":1}\r\nrest"[..]);
        assert_eq!(read_line(&mut ok), Ok("{\"a\":1}".to_string()));
        assert_eq!(read_line(&mut ok), Ok("rest".to_string()));
        assert_eq!(read_line(&mut ok), Err("it closed its output".to_string()));
        let long = vec![b'x'; MAX_LINE + 10];
        assert!(
            read_line(&mut BufReader::new(&long[..]))
                .unwrap_err()
                .contains("longer")
        );
        assert!(
            read_line(&mut BufReader::new(&[0xff, b'\n'][..]))
                .unwrap_err()
                .contains("UTF-8")
        );
    }
}
