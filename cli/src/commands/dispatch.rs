//! Which command runs: each variant of [`Command`] handed to its module.

use super::{
    abandon, access, budget, decisions, grammar, hash, inbox, memory, notify, pgvector, plan, run, schema, serve,
    status, validate, worker,
};
use crate::args::{Command, MemoryCommand};
use crate::error::CliError;
use crate::output::Output;

/// Runs `command`, its report written to `out`.
pub fn dispatch(command: Command, out: &mut Output) -> Result<u8, CliError> {
    match command {
        Command::Validate { file } => validate::validate(out, &file),
        Command::Hash { policy_root, parts, plan } => hash::hash(out, &policy_root, parts, &plan),
        Command::Schema => schema::schema(out),
        Command::Pgvector { database, dimension } => pgvector::install(out, &database, dimension),
        Command::Grammar { syntax, compact, of } => grammar::grammar(out, &syntax, compact, &of),
        Command::Plan {
            llm_url,
            llm_model,
            goal,
            constraint,
            seed,
            out: file,
            whole_plan,
            session_ref,
            existing_decision,
            existing_evidence,
            of,
        } => {
            let frame = plan::Frame { whole_plan, session_ref, existing_decision, existing_evidence };
            let ask =
                plan::Ask { url: &llm_url, model: &llm_model, goal: &goal, constraint: &constraint, seed, out: file };
            plan::plan(out, ask, frame, &of)
        }
        Command::Run { cycle } => run::run(out, cycle, None),
        Command::Resume { cycle, approve, step, reason, by, digest } => {
            let by = by.or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "cli".to_owned());
            let mut over = planlock::Override::new(approve, step, reason).by(by);
            if let Some(hex) = digest {
                let digest = hex
                    .parse()
                    .map_err(|_| CliError::usage("usage", format!("--digest `{hex}` is not 64 hex digits")))?;
                over = over.for_shown(digest);
            }
            run::run(out, cycle, Some(over))
        }
        Command::Inbox { command } => inbox::inbox(out, command),
        Command::Budget { command } => budget::budget(out, command),
        Command::Worker(args) => worker::worker(out, args),
        Command::Access { command } => access::access(out, command),
        Command::Notify { sessions, access, once, timeout, first_retry } => {
            let options = planlock::review::notify::NotifyOptions::default().timeout(timeout).first_retry(first_retry);
            notify::notify(out, &sessions, access.as_deref(), once, options)
        }
        Command::Serve { sessions, listen, read_only, user_header, access, proxy_secret_env, trace_url } => {
            let people = serve::People { user_header, access, proxy_secret_env };
            serve::serve(out, &sessions, listen, (read_only, trace_url), people)
        }
        Command::Abandon { place } => abandon::abandon(out, &place),
        Command::Memory { command: MemoryCommand::Search { place, top_k, embed, text } } => {
            memory::search(out, &place, top_k, &embed, &text)
        }
        Command::Decisions { place, domain } => decisions::decisions(out, &place, domain.as_deref()),
        Command::Status { place, history } => status::status(out, &place, history),
    }
}
