//! What the files beside scenarios share (experiment and sweep files):
//! deserialising with `file:line:column` errors naming the field, and
//! collecting the problems found after that, each located in the file.

use serde::de::DeserializeOwned;

use crate::scenario::{self, Origin, ScenarioError, ScenarioErrors};

/// One error of file `label`, at `at` (line, column) if known.
pub fn one(
    label: &str,
    at: Option<(usize, usize)>,
    field: Option<String>,
    problem: String,
) -> ScenarioErrors {
    ScenarioErrors(vec![ScenarioError {
        origin: Origin::File {
            path: label.to_string(),
            at,
        },
        field,
        problem,
    }])
}

/// `text`, the file `label`, as a `T`: invalid TOML or a field of the
/// wrong type or name is an error at its line and column, naming the field.
pub fn deserialize<T: DeserializeOwned>(label: &str, text: &str) -> Result<T, ScenarioErrors> {
    match toml::Deserializer::parse(text) {
        Err(e) => {
            let at = e.span().map(|s| scenario::line_col(text, s.start));
            Err(one(
                label,
                at,
                None,
                format!("not valid TOML: {}", e.message().trim()),
            ))
        }
        Ok(de) => serde_path_to_error::deserialize::<_, T>(de).map_err(|err| {
            let field = scenario::error_field(err.path().to_string(), err.inner().message());
            let at = err
                .inner()
                .span()
                .map(|s| scenario::line_col(text, s.start));
            one(
                label,
                at,
                (!field.is_empty()).then_some(field),
                err.inner().message().trim().to_string(),
            )
        }),
    }
}

/// Problems found after deserialising, each located in the file by its
/// dotted field (`axis[0].values[1]`).
pub struct Problems<'a> {
    label: &'a str,
    text: &'a str,
    doc: Option<&'a toml_edit::Document<String>>,
    pub found: Vec<ScenarioError>,
}

impl<'a> Problems<'a> {
    /// Problems of file `label`, whose `text` parsed as `doc`.
    pub fn new(
        label: &'a str,
        text: &'a str,
        doc: Option<&'a toml_edit::Document<String>>,
    ) -> Self {
        Problems {
            label,
            text,
            doc,
            found: Vec::new(),
        }
    }

    pub fn add(&mut self, field: &str, problem: String) {
        let at = self
            .doc
            .and_then(|d| scenario::locate(d, field))
            .map(|span| scenario::line_col(self.text, span.start));
        self.found.push(ScenarioError {
            origin: Origin::File {
                path: self.label.to_string(),
                at,
            },
            field: Some(field.to_string()),
            problem,
        });
    }
}
