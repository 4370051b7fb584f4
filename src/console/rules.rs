//! The rules a running console follows (CONTRACT §18, amended): read again for every request, so
//! that a person removed from the access file can no longer sign in or decide, and a person
//! added signs in, without a restart. Rules that become unreadable leave the last good ones in
//! force, said on every page and in the log, until they are fixed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::backend::Backend;
use crate::review::access::Access;

/// Where a console's rules come from.
#[derive(Clone)]
pub enum Source {
    /// The access file installed where the sessions live (none: one operator).
    Installed(Arc<dyn Backend>),
    /// A file named when the console started (`--access FILE`), where none is installed.
    File(PathBuf),
    /// Rules a program gave, as they are.
    Given(Arc<Access>),
}

/// What a console says when its rules change or cannot be read (the CLI writes it to stderr).
#[derive(Clone)]
pub struct RulesLog(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for RulesLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RulesLog")
    }
}

/// The rules in force for one request.
#[derive(Clone, Default)]
pub struct Rules {
    /// The access file's rules; `None`: one operator, names unverified.
    pub access: Option<Arc<Access>>,
    /// Why the rules as written now are not in force (the last good ones are), if they are not.
    pub problem: Option<String>,
}

/// The rules, followed as they change.
pub struct LiveRules {
    source: Source,
    log: Option<RulesLog>,
    /// The text last read (`None`: no file), and the rules in force.
    kept: Mutex<(Option<String>, Rules)>,
}

impl LiveRules {
    /// Rules read from `source`, changes said to `log`.
    pub fn new(source: Source, log: Option<RulesLog>) -> LiveRules {
        let kept = match &source {
            Source::Given(access) => (None, Rules { access: Some(access.clone()), problem: None }),
            _ => (None, Rules::default()),
        };
        LiveRules { source, log, kept: Mutex::new(kept) }
    }

    /// Whether the rules come from the installed file (which [`decide`](crate::review::decide)
    /// reads itself) rather than from one given to this console.
    pub fn installed(&self) -> bool {
        matches!(self.source, Source::Installed(_))
    }

    /// The rules in force now: read again, and taken when they changed and can be read.
    pub async fn current(&self) -> Rules {
        let read = match &self.source {
            Source::Given(_) => return self.kept().1,
            Source::Installed(backend) => backend
                .installed_access()
                .await
                .map(|installed| installed.map(|i| (i.text.clone(), Access::installed(&i))))
                .map_err(|e| e.to_string()),
            Source::File(path) => match Access::read(path) {
                Ok((access, text)) => Ok(Some((text, Ok(access)))),
                Err(e) => Err(e.to_string()),
            },
        };
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let (text, rules) = &mut *kept;
        match read {
            Ok(None) if text.is_none() && rules.problem.is_none() => {}
            Ok(None) => {
                *text = None;
                *rules = Rules::default();
                self.say("planlock: the access file is gone: one operator decides, names unverified");
            }
            Ok(Some((now, _))) if text.as_deref() == Some(now.as_str()) => {}
            Ok(Some((now, Ok(access)))) => {
                let people = access.users().count();
                *text = Some(now);
                *rules = Rules { access: Some(Arc::new(access)), problem: None };
                self.say(&format!("planlock: the access file is read: {people} people may sign in"));
            }
            Ok(Some((now, Err(e)))) => {
                *text = Some(now);
                self.keep_last_good(rules, e.to_string());
            }
            Err(why) if rules.problem.as_deref() != Some(why.as_str()) => self.keep_last_good(rules, why),
            Err(_) => {}
        }
        rules.clone()
    }

    /// The rules as the last [`current`](Self::current) left them, without reading again.
    pub fn last(&self) -> Rules {
        self.kept().1
    }

    fn kept(&self) -> (Option<String>, Rules) {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn keep_last_good(&self, rules: &mut Rules, why: String) {
        self.say(&format!("planlock: the access file cannot be used ({why}); the last good rules stay in force"));
        rules.problem = Some(why);
    }

    fn say(&self, what: &str) {
        match &self.log {
            Some(log) => (log.0)(what),
            None => tracing::warn!("{what}"),
        }
    }
}
