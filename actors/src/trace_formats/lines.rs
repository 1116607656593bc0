//! Line-by-line reading of a trace file, plain or gzip-compressed, in
//! bounded memory, and the fields of one line with their columns.

use std::fmt::Display;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::common::{ImportError, Tally};

/// Longest line accepted, in bytes; a longer one is a row error (and is
/// skipped without being held in memory).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Read buffer of the file and of the decompressor.
const BUFFER_BYTES: usize = 64 * 1024;

/// A file's lines, one at a time. `.gz` input (recognised by its magic
/// bytes, whatever the name) is decompressed as it is read, members after
/// members (`MultiGzDecoder`), never as a whole.
pub struct Lines {
    path: String,
    input: Box<dyn BufRead + Send>,
    /// The current line, without its `\n` / `\r\n`.
    pub buf: Vec<u8>,
    /// 1-based number of the current line.
    pub line: u64,
}

impl Lines {
    /// Opens `path`; `label` names it in errors.
    pub fn open(path: &Path, label: &str) -> Result<Self, ImportError> {
        Ok(Self::new(label, open_input(path, label)?))
    }

    /// Lines of any reader (tests, text in memory).
    pub fn new(label: &str, input: Box<dyn BufRead + Send>) -> Self {
        Lines {
            path: label.to_string(),
            input,
            buf: Vec::with_capacity(256),
            line: 0,
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// The next line a reader can use, counted in `tally`: a line refused
    /// as a row (too long) is skipped under `--lenient` and an error
    /// otherwise; `false` at the end of the input.
    pub(crate) fn next_counted(&mut self, tally: &mut Tally) -> Result<bool, ImportError> {
        loop {
            match self.next_line() {
                Ok(true) => {
                    tally.stats.lines += 1;
                    return Ok(true);
                }
                Ok(false) => return Ok(false),
                Err(e) => tally.skip(e)?,
            }
        }
    }

    /// Reads the next line into `buf`; `false` at the end of the input. A
    /// line longer than [`MAX_LINE_BYTES`] is consumed and refused as a row
    /// error; a read or decompression failure is an I/O error.
    pub fn next_line(&mut self) -> Result<bool, ImportError> {
        let io = |source| ImportError::Io {
            path: self.path.clone(),
            source,
        };
        self.buf.clear();
        let n = (&mut self.input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(io)?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if self.buf.len() > MAX_LINE_BYTES {
            loop {
                let chunk = self.input.fill_buf().map_err(io)?;
                if chunk.is_empty() {
                    break;
                }
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        self.input.consume(i + 1);
                        break;
                    }
                    None => {
                        let len = chunk.len();
                        self.input.consume(len);
                    }
                }
            }
            self.buf.clear();
            return Err(ImportError::Row {
                path: self.path.clone(),
                line: self.line,
                column: 1,
                problem: format!("the line is longer than the {MAX_LINE_BYTES} bytes allowed"),
            });
        }
        Ok(true)
    }
}

/// The bytes of the file at `path`, buffered; gzip input (recognised by its
/// magic bytes, whatever the name) decompressed as it is read.
pub fn open_input(path: &Path, label: &str) -> Result<Box<dyn BufRead + Send>, ImportError> {
    let io = |source| ImportError::Io {
        path: label.to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut raw = BufReader::with_capacity(BUFFER_BYTES, file);
    let gz = raw.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            BUFFER_BYTES,
            flate2::bufread::MultiGzDecoder::new(raw),
        ))
    } else {
        Box::new(raw)
    })
}

/// How a line's fields are separated.
#[derive(Clone, Copy)]
pub enum Sep {
    /// `,`: empty fields are kept (Google 2011, Alibaba, Azure).
    Comma,
    /// Runs of spaces and tabs (SWF).
    Whitespace,
}

/// Byte ranges of the fields of `line`, into `spans`.
pub fn split(line: &[u8], sep: Sep, spans: &mut Vec<(usize, usize)>) {
    spans.clear();
    match sep {
        Sep::Comma => {
            let mut start = 0;
            for (i, &b) in line.iter().enumerate() {
                if b == b',' {
                    spans.push((start, i));
                    start = i + 1;
                }
            }
            spans.push((start, line.len()));
        }
        Sep::Whitespace => {
            let mut start = None;
            for (i, &b) in line.iter().enumerate() {
                let blank = b == b' ' || b == b'\t';
                match (start, blank) {
                    (None, false) => start = Some(i),
                    (Some(s), true) => {
                        spans.push((s, i));
                        start = None;
                    }
                    _ => {}
                }
            }
            if let Some(s) = start {
                spans.push((s, line.len()));
            }
        }
    }
}

/// One line split into fields, with the names of the format's columns, for
/// values and errors that name `file:line:column` and the field.
pub struct Row<'a> {
    pub path: &'a str,
    pub line: u64,
    pub text: &'a [u8],
    pub spans: &'a [(usize, usize)],
    /// Name of each field, in order, as the format's schema document names it.
    pub names: &'static [&'static str],
}

impl Lines {
    /// The current line as a row of `names`, split into `spans`.
    pub fn row<'a>(
        &'a self,
        spans: &'a [(usize, usize)],
        names: &'static [&'static str],
    ) -> Row<'a> {
        Row {
            path: self.path(),
            line: self.line,
            text: &self.buf,
            spans,
            names,
        }
    }
}

impl Row<'_> {
    /// An error in field `i` (0-based): its column is the 1-based byte
    /// column where the field starts.
    pub fn err(&self, i: usize, problem: impl Display) -> ImportError {
        let column = self.spans.get(i).map_or(1, |s| s.0 as u64 + 1);
        let name = self.names.get(i).copied().unwrap_or("?");
        ImportError::Row {
            path: self.path.to_string(),
            line: self.line,
            column,
            problem: format!("field {} ({name}): {problem}", i + 1),
        }
    }

    /// The 1-based byte column where field `i` starts.
    pub fn column(&self, i: usize) -> Option<u64> {
        self.spans.get(i).map(|s| s.0 as u64 + 1)
    }

    /// An error in the line as a whole (column 1).
    pub fn line_err(&self, problem: impl Display) -> ImportError {
        ImportError::Row {
            path: self.path.to_string(),
            line: self.line,
            column: 1,
            problem: problem.to_string(),
        }
    }

    /// The row must have exactly the format's number of fields.
    pub fn expect_fields(&self) -> Result<(), ImportError> {
        if self.spans.len() == self.names.len() {
            Ok(())
        } else {
            Err(self.line_err(format!(
                "the row has {} fields; this format has {}",
                self.spans.len(),
                self.names.len()
            )))
        }
    }

    /// The trimmed text of field `i`.
    pub fn text(&self, i: usize) -> Result<&str, ImportError> {
        let Some(&(a, b)) = self.spans.get(i) else {
            return Err(self.line_err(format!("field {} is missing", i + 1)));
        };
        std::str::from_utf8(&self.text[a..b])
            .map(str::trim)
            .map_err(|_| self.err(i, "not valid UTF-8"))
    }

    /// Field `i` as a non-negative integer; empty is `None`.
    pub fn opt_u64(&self, i: usize) -> Result<Option<u64>, ImportError> {
        let t = self.text(i)?;
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<u64>()
            .map(Some)
            .map_err(|_| self.err(i, format!("must be a non-negative integer, got `{t}`")))
    }

    /// Field `i` as a non-negative integer; required.
    pub fn u64(&self, i: usize) -> Result<u64, ImportError> {
        self.opt_u64(i)?
            .ok_or_else(|| self.err(i, "a value is required"))
    }

    /// Field `i` as a finite non-negative number; empty is `None`.
    pub fn opt_f64(&self, i: usize) -> Result<Option<f64>, ImportError> {
        let t = self.text(i)?;
        if t.is_empty() {
            return Ok(None);
        }
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| Some(v + 0.0))
            .ok_or_else(|| self.err(i, format!("must be a non-negative number, got `{t}`")))
    }

    /// Field `i` as exact non-negative decimal seconds, in nanoseconds.
    pub fn seconds(&self, i: usize) -> Result<u64, ImportError> {
        let t = self.text(i)?;
        crate::trace::parse_seconds(t).map_err(|_| {
            self.err(
                i,
                format!("must be a non-negative decimal number of seconds, got `{t}`"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &'static [u8]) -> Lines {
        Lines::new("t", Box::new(text))
    }

    #[test]
    fn lines_strip_ends_and_count() {
        let mut l = lines(b"a\r\nb\n\nc");
        let mut got = Vec::new();
        while l.next_line().expect("read") {
            got.push((l.line, String::from_utf8(l.buf.clone()).expect("utf8")));
        }
        assert_eq!(
            got,
            vec![
                (1, "a".into()),
                (2, "b".into()),
                (3, String::new()),
                (4, "c".into())
            ]
        );
    }

    #[test]
    fn an_overlong_line_is_a_row_error_and_reading_goes_on() {
        let mut text = vec![b'x'; MAX_LINE_BYTES + 10];
        text.extend_from_slice(b"\nnext\n");
        let mut l = Lines::new("t", Box::new(std::io::Cursor::new(text)));
        let e = l.next_line().expect_err("too long");
        assert!(
            e.to_string().starts_with("t:1:1: the line is longer"),
            "{e}"
        );
        assert!(l.next_line().expect("read"));
        assert_eq!((l.line, l.buf.as_slice()), (2, b"next".as_slice()));
    }

    #[test]
    fn split_keeps_empty_comma_fields_and_collapses_blanks() {
        let mut s = Vec::new();
        split(b"1,,3,", Sep::Comma, &mut s);
        assert_eq!(s, vec![(0, 1), (2, 2), (3, 4), (5, 5)]);
        split(b"  1 \t 22  3", Sep::Whitespace, &mut s);
        assert_eq!(s, vec![(2, 3), (6, 8), (10, 11)]);
    }

    #[test]
    fn gz_input_is_read_as_it_is() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("x.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(b"one\ntwo\n").expect("write");
        std::fs::write(&path, enc.finish().expect("gz")).expect("write");
        let mut l = Lines::open(&path, "x.csv.gz").expect("open");
        assert!(l.next_line().expect("read"));
        assert_eq!(l.buf, b"one");
        assert!(l.next_line().expect("read"));
        assert!(!l.next_line().expect("read"));
    }
}
