//! `planlock access new-token`: a fresh personal token for the access file (CONTRACT §18),
//! printed once with the hash the file keeps. Nothing is written anywhere.

use planlock::review::access::new_token as fresh;
use serde::Serialize;

use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// The report: the token (for its person, shown once) and its `tokenSha256` (for the file).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NewTokenReport {
    token: String,
    token_sha256: String,
}

impl Report for NewTokenReport {
    fn text(&self, out: &mut Text) {
        line!(out, "token:       {}", self.token);
        line!(out, "tokenSha256: {}", self.token_sha256);
        line!(out, "give the token to its person (it is shown only now); the access file keeps only the hash:");
        line!(out, "  users:\n    NAME: {{ tokenSha256: \"{}\" }}", self.token_sha256);
    }
}

pub fn new_token(out: &mut Output) -> Result<u8, CliError> {
    let (token, token_sha256) = fresh().map_err(|e| CliError::of(&e))?;
    out.report(&NewTokenReport { token, token_sha256 });
    Ok(EXIT_VALID)
}
