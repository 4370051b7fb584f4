//! `planlock serve`: the library's console ([`planlock::console`]) on a listening address, its
//! token made here and printed once (or `PLANLOCK_CONSOLE_TOKEN`), on planlock's one I/O runtime.
//! With `--access`, people sign in with their own tokens instead, and no console token is shown.
//! The server is this command's own ([`server`]): the library gives the console as a service.

mod server;

use std::net::SocketAddr;

use planlock::console::{Console, ConsoleError, ConsoleOptions, RulesLog, new_token};
use planlock::review::access::Access;

use crate::args::SessionsArgs;
use crate::error::{CliError, EXIT_VALID};
use crate::output::Output;

/// Who may sign in: the flags of CONTRACT §18.
pub struct People {
    pub user_header: Option<String>,
    pub access: Option<std::path::PathBuf>,
    pub proxy_secret_env: Option<String>,
}

pub fn serve(
    out: &mut Output,
    sessions: &SessionsArgs,
    listen: SocketAddr,
    (read_only, trace_url): (bool, Option<String>),
    people: People,
) -> Result<u8, CliError> {
    let given = people.access.as_deref().map(Access::load).transpose().map_err(|e| CliError::of(&e))?;
    let proxy_secret = match &people.proxy_secret_env {
        Some(var) => Some(
            std::env::var(var)
                .map_err(|_| CliError::usage("usage", format!("--proxy-secret-env names `{var}`, which is not set")))?,
        ),
        None => None,
    };
    // One tenant per console: the one given, or the one the access file's users work in.
    let tenant = match &given {
        Some(access) => access.tenant(sessions.tenant_name().as_deref()).map_err(|e| CliError::of(&e))?,
        None => sessions.tenant_name(),
    };
    let inbox = planlock::review::inbox::Inbox::new(sessions.backend_in(tenant.as_deref())?);
    // The installed rules, followed as they change; `--access` only where none are installed.
    let (access, installed) = super::access::rules_here(inbox.backend(), people.access.as_deref())?;
    let personal = access.is_some();
    // The console delivers the access file's notifications too, when it names webhooks.
    let notifier = match &access {
        Some(access) if !access.webhooks().is_empty() && !read_only => Some(
            planlock::review::notify::Notifier::new(inbox.backend_arc(), access, Default::default())
                .map_err(|e| CliError::of(&e))?,
        ),
        _ => None,
    };
    let given = std::env::var("PLANLOCK_CONSOLE_TOKEN").ok();
    let token = given.clone().unwrap_or_else(new_token);
    let options = ConsoleOptions::default()
        .read_only(read_only)
        .user_header(people.user_header)
        .access_file(if installed { None } else { people.access.clone() })
        .rules_log(RulesLog(std::sync::Arc::new(|said: &str| {
            eprintln!("{}", planlock::text::escape_invisible(said));
        })))
        .proxy_secret(proxy_secret)
        .trace_url(trace_url);
    let console = Console::new(inbox, token.clone(), options).map_err(|e| match e {
        ConsoleError::Token => CliError::usage("usage", "PLANLOCK_CONSOLE_TOKEN must be at least 16 characters"),
        e => CliError::usage("usage", e.to_string()),
    })?;
    // The console serves on planlock's own I/O runtime, which its reads use too.
    let runtime = planlock::io_handle().map_err(|e| CliError::usage("io", e))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(listen))
        .map_err(|e| CliError::usage("io", format!("cannot listen on {listen}: {e}")))?;
    let addr = listener.local_addr().map_err(|e| CliError::usage("io", e.to_string()))?;
    // Said at once (the command serves until it is stopped): where, and the token if it was made
    // here; the only time the token is shown.
    let url = format!("http://{addr}/");
    // With an access file people use their own tokens: the console's is never shown.
    let generated = given.is_none() && !personal;
    let said = match out.is_json() {
        true => crate::output::json_line(&serde_json::json!({
            "listening": url,
            "token": generated.then_some(&token),
            "readOnly": read_only,
            "access": personal,
        })),
        false => {
            let token = if generated { format!(" (token: {token})") } else { String::new() };
            let mode = match (read_only, personal) {
                (true, _) => " (read-only)",
                (false, true) => " (personal tokens of the access file)",
                (false, false) => " (one operator: names recorded unverified)",
            };
            format!("planlock console on {url}{token}{mode}\n")
        }
    };
    {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(said.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| CliError::fail_fast("io", format!("cannot write the output: {e}")))?;
    }
    if let Some(notifier) = notifier {
        let report: std::sync::Arc<dyn Fn(&planlock::review::notify::Attempted) + Send + Sync> =
            std::sync::Arc::new(|a| {
                // Every attempt is said, delivered ones too: a console never delivers in silence.
                let why = a.why.as_deref().map(|w| format!(": {w}")).unwrap_or_default();
                let said = format!("planlock: notification {} ({}) {} to {}{why}", a.id, a.kind, a.outcome, a.url);
                eprintln!("{}", planlock::text::escape_invisible(&said));
            });
        runtime.spawn(notifier.run(report));
    }
    runtime.block_on(server::accept(listener, console));
    Ok(EXIT_VALID)
}
