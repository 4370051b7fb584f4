//! `planlock budget show|set|remove`: the token budgets of the sessions under a directory or in
//! a tenant of a database (CONTRACT §20).

use planlock::budget::BudgetState;
use serde::Serialize;

use crate::args::BudgetCommand;
use crate::error::{CliError, EXIT_CYCLE_FAIL, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// The budgets, as they stand.
#[derive(Serialize)]
struct Shown {
    budgets: Vec<BudgetState>,
}

impl Report for Shown {
    fn text(&self, out: &mut Text) {
        if self.budgets.is_empty() {
            line!(out, "no token budget is set: model calls reserve nothing");
        }
        for b in &self.budgets {
            let covers = covered(&b.prefix);
            line!(
                out,
                "{covers}: {} of {} tokens left per {} s ({} used, {} reserved); resets at {}",
                b.left(),
                b.tokens,
                b.period_secs,
                b.used,
                b.reserved,
                b.resets_at
            );
        }
    }
}

/// The sessions a budget of `prefix` covers, as a person reads it.
fn covered(prefix: &str) -> String {
    match prefix {
        "" => "every session".to_owned(),
        prefix => format!("sessions `{}…`", planlock::text::printable(prefix)),
    }
}

/// What a change did.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Changed {
    prefix: String,
    action: &'static str,
}

impl Report for Changed {
    fn text(&self, out: &mut Text) {
        let covers = covered(&self.prefix);
        match self.action {
            "set" => line!(out, "the budget of {covers} is set"),
            "removed" => line!(out, "the budget of {covers} is removed"),
            _ => line!(out, "there is no budget of {covers}"),
        }
    }
}

pub fn budget(out: &mut Output, command: BudgetCommand) -> Result<u8, CliError> {
    let (sessions, change) = match &command {
        BudgetCommand::Show { sessions } => (sessions, None),
        BudgetCommand::Set { sessions, prefix, .. } | BudgetCommand::Remove { sessions, prefix } => {
            (sessions, Some(prefix.clone()))
        }
    };
    let backend = sessions.backend()?;
    let failed = |e: planlock::backend::BackendError| {
        if e.is_usage() { CliError::usage(planlock::Failure::code(&e), e.to_string()) } else { CliError::of(&e) }
    };
    let book = backend.budgets().ok_or(planlock::backend::BackendError::Lacks("token budgets")).map_err(failed)?;
    let (action, exit) = match command {
        BudgetCommand::Show { .. } => {
            let budgets = planlock::block_on(book.budgets()).map_err(failed)?;
            out.report(&Shown { budgets });
            return Ok(EXIT_VALID);
        }
        BudgetCommand::Set { prefix, tokens, period, .. } => {
            planlock::block_on(book.set_budget(&prefix, tokens, period)).map_err(failed)?;
            ("set", EXIT_VALID)
        }
        BudgetCommand::Remove { prefix, .. } => {
            match planlock::block_on(book.remove_budget(&prefix)).map_err(failed)? {
                true => ("removed", EXIT_VALID),
                false => ("none", EXIT_CYCLE_FAIL),
            }
        }
    };
    out.report(&Changed { prefix: change.unwrap_or_default(), action });
    Ok(exit)
}
