//! `planlock access`: the rules of who may decide (CONTRACT §18). `new-token` prints a fresh
//! personal token once with the hash the file keeps; `install`, `show` and `remove` keep the
//! access file where the sessions live, so that every path that decides or acts applies it.

use planlock::review::access::{Access, new_token as fresh};
use serde::Serialize;

use crate::args::AccessCommand;
use crate::error::{CliError, EXIT_CYCLE_FAIL, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

pub fn access(out: &mut Output, command: AccessCommand) -> Result<u8, CliError> {
    match command {
        AccessCommand::NewToken { name } => new_token(out, name),
        AccessCommand::Install { sessions, file } => {
            let (checked, text) = Access::read(&file).map_err(|e| CliError::of(&e))?;
            let backend = sessions.backend()?;
            let book = book_of(backend.as_ref())?;
            planlock::block_on(book.install_access(&text)).map_err(|e| CliError::of(&e))?;
            let installed = planlock::block_on(book.installed_access()).map_err(|e| CliError::of(&e))?;
            let source = installed.map(|i| i.source).unwrap_or_default();
            out.report(&Rules::of(&checked, source, "installed"));
            Ok(EXIT_VALID)
        }
        AccessCommand::Show { sessions } => {
            let backend = sessions.backend()?;
            match planlock::block_on(backend.installed_access()).map_err(|e| CliError::of(&e))? {
                Some(installed) => {
                    let access = Access::installed(&installed).map_err(|e| CliError::of(&e))?;
                    out.report(&Rules::of(&access, installed.source, "installed"));
                }
                None => out.report(&Rules::none()),
            }
            Ok(EXIT_VALID)
        }
        AccessCommand::Remove { sessions } => {
            let backend = sessions.backend()?;
            if planlock::block_on(book_of(backend.as_ref())?.uninstall_access()).map_err(|e| CliError::of(&e))? {
                out.report(&Rules::none().action("removed"));
                Ok(EXIT_VALID)
            } else {
                Err(CliError {
                    exit: EXIT_CYCLE_FAIL,
                    code: "nothing-installed",
                    message: "no access file is installed here; nothing was removed".into(),
                })
            }
        }
    }
}

/// Where `backend` keeps its access file, or `backend-lacks`.
fn book_of(backend: &dyn planlock::backend::Backend) -> Result<&dyn planlock::backend::AccessBook, CliError> {
    backend.access().ok_or(planlock::backend::BackendError::Lacks("access file")).map_err(|e| CliError::of(&e))
}

/// The rules a command that decides or acts on `backend`'s sessions applies (CONTRACT §18,
/// amended): the installed ones; a file `given` only where none is installed, and refused when
/// it says other rules. Also whether they are the installed ones.
pub(super) fn rules_here(
    backend: &dyn planlock::backend::Backend,
    given: Option<&std::path::Path>,
) -> Result<(Option<Access>, bool), CliError> {
    let given = given.map(Access::load).transpose().map_err(|e| CliError::of(&e))?;
    let installed = planlock::block_on(backend.installed_access()).map_err(|e| CliError::of(&e))?;
    let Some(installed) = installed else { return Ok((given, false)) };
    let access = Access::installed(&installed).map_err(|e| CliError::of(&e))?;
    if let Some(given) = given
        && !given.same_rules(&access)
    {
        let e = planlock::review::DecideError::AccessMismatch {
            given: given.source().to_owned(),
            installed: installed.source,
        };
        return Err(CliError::of(&e));
    }
    Ok((Some(access), true))
}

/// The installed rules as `install` and `show` print them: who may decide what; no token hash.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rules {
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    users: Vec<String>,
    validators: Vec<ValidatorRule>,
    webhooks: usize,
}

#[derive(Serialize)]
struct ValidatorRule {
    validator: String,
    approvers: Vec<String>,
    required: usize,
}

impl Rules {
    fn of(access: &Access, source: String, action: &'static str) -> Rules {
        let validators = access
            .validators()
            .map(|(id, rule)| ValidatorRule {
                validator: id.to_owned(),
                approvers: rule.approvers.clone(),
                required: rule.required,
            })
            .collect();
        Rules {
            action,
            source: Some(source),
            users: access.users().map(str::to_owned).collect(),
            validators,
            webhooks: access.webhooks().len(),
        }
    }

    fn none() -> Rules {
        Rules { action: "none", source: None, users: vec![], validators: vec![], webhooks: 0 }
    }

    fn action(self, action: &'static str) -> Rules {
        Rules { action, ..self }
    }
}

impl Report for Rules {
    fn text(&self, out: &mut Text) {
        let Some(source) = &self.source else {
            match self.action {
                "removed" => line!(out, "the installed access file is removed: one operator decides, names unverified"),
                _ => line!(
                    out,
                    "no access file is installed: one operator decides, and every name is recorded unverified"
                ),
            }
            return;
        };
        line!(out, "{} rules: {source}", if self.action == "installed" { "installed" } else { "the" });
        line!(out, "people:     {}", self.users.join(", "));
        for v in &self.validators {
            line!(
                out,
                "validator `{}`: {} of {} ({})",
                v.validator,
                v.required,
                v.approvers.len(),
                v.approvers.join(", ")
            );
        }
        line!(out, "any other validator: 1 approval, by any of the people");
        if self.webhooks > 0 {
            line!(out, "webhooks:   {}", self.webhooks);
        }
        line!(out, "every path that decides or acts applies these rules: the inbox, resume, the console, the sender");
    }
}

/// The report: the token (for its person, shown once) and its `tokenSha256` (for the file).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NewTokenReport {
    name: String,
    token: String,
    token_sha256: String,
}

impl Report for NewTokenReport {
    fn text(&self, out: &mut Text) {
        line!(out, "token for {}: {}", self.name, self.token);
        line!(out, "give it to {} (it is shown only now); the access file keeps only its hash.", self.name);
        line!(out, "paste under `users:` in the access file:");
        line!(out, "  {}: {{ tokenSha256: \"{}\" }}", self.name, self.token_sha256);
    }
}

fn new_token(out: &mut Output, name: String) -> Result<u8, CliError> {
    planlock::review::check_decider(&name).map_err(|why| CliError::usage("usage", format!("--name: {why}")))?;
    let (token, token_sha256) = fresh().map_err(|e| CliError::of(&e))?;
    out.report(&NewTokenReport { name, token, token_sha256 });
    Ok(EXIT_VALID)
}
