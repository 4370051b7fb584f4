//! [`PgStore`]'s decisions: the active ones in scope (read ahead by a cycle's memory search, or
//! read for themselves), ordered by meaning with an embedder; and the keyed writes of decisions,
//! evidence and links.

use super::{Begin, KeyedWrite, PgStore, backend};
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::contract::value::PositiveInt;
use crate::pg::cycle::KeptDecisions;
use crate::pg::{Conn, Query, Then};
use crate::store::{Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, Scope, StoreError};

/// The columns a decision is read from, in [`decision_row`]'s order.
macro_rules! decision_columns {
    () => {
        "id, root_id, version, text, strength, scope_kind, scope_domain, is_active, previous_version_id"
    };
}
const DECISION_COLUMNS: &str = decision_columns!();

fn decision_row(r: &tokio_postgres::Row) -> Decision {
    let scope = match (r.get::<_, &str>(5), r.get::<_, Option<&str>>(6)) {
        ("domain", Some(name)) => format!("domain:{name}"),
        (kind, _) => kind.to_owned(),
    };
    let version: i64 = r.get(2);
    Decision {
        id: r.get(0),
        root_id: r.get(1),
        version: PositiveInt::new(u64::try_from(version).unwrap_or(0)).unwrap_or(PositiveInt::MIN),
        text: r.get(3),
        strength: r.get(4),
        scope,
        is_active: r.get(7),
        previous_version_id: r.get(8),
    }
}

/// The most active decisions, and the most of their links, a cycle's memory search reads ahead
/// for its decision load. A namespace with more keeps nothing: the load reads for itself, for
/// its domain only, as it would outside a cycle.
pub const MAX_READ_AHEAD: i64 = 1_000;

/// Which active decisions to read.
#[derive(Clone, Copy)]
pub(super) enum Which<'a> {
    /// Every scope, for a load whose domain is not known yet: at most [`MAX_READ_AHEAD`].
    Ahead,
    /// Those a load for this domain (or none) can return: global, axis and the domain's.
    For(Option<&'a str>),
}

/// The two statements that read a namespace's active decisions (in the order they were stored)
/// and their links (in the order they were made), sent in one batch of the caller's transaction
/// so the links match the decisions.
pub(super) struct ActiveQueries<'a> {
    decisions: String,
    links: String,
    domain: Option<&'a str>,
    limit: i64,
}

impl<'a> ActiveQueries<'a> {
    pub(super) fn new(which: Which<'a>) -> ActiveQueries<'a> {
        // The SQL narrows by scope only to read less; `DecisionContext::in_scope` is the rule.
        let (scope, domain, limit) = match which {
            Which::Ahead => ("$2::text IS NULL", None, MAX_READ_AHEAD + 1),
            Which::For(domain) => (
                "(d.scope_kind IN ('global', 'axis') OR (d.scope_kind = 'domain' AND d.scope_domain = $2))",
                domain,
                i64::MAX,
            ),
        };
        let decisions = format!(
            "SELECT {DECISION_COLUMNS} FROM planlock_decisions d
             WHERE planlock_mine(d.tenant) AND d.namespace = $1 AND d.is_active AND {scope} ORDER BY d.seq LIMIT $3"
        );
        let links = format!(
            "SELECT de.decision_id, de.evidence_id FROM planlock_decision_evidence de
             JOIN planlock_decisions d
               ON d.tenant = de.tenant AND d.namespace = de.namespace AND d.id = de.decision_id
             WHERE planlock_mine(de.tenant) AND de.namespace = $1 AND d.is_active AND {scope} ORDER BY de.seq LIMIT $3"
        );
        ActiveQueries { decisions, links, domain, limit }
    }

    /// The decisions' statement and the links', for `namespace`.
    pub(super) fn queries<'q>(&'q self, namespace: &'q &'q str) -> [Query<'q>; 2] {
        let params: [&'q (dyn tokio_postgres::types::ToSql + Sync); 3] = [namespace, &self.domain, &self.limit];
        [Query::new(&self.decisions, &params), Query::new(&self.links, &params)]
    }

    /// What the two statements read; `None` when reading ahead found more than
    /// [`MAX_READ_AHEAD`].
    pub(super) fn kept(
        &self,
        decisions: &[tokio_postgres::Row],
        links: &[tokio_postgres::Row],
    ) -> Option<KeptDecisions> {
        if i64::try_from(decisions.len().max(links.len())).unwrap_or(i64::MAX) >= self.limit {
            return None;
        }
        let decisions = decisions.iter().map(decision_row).collect();
        let links = links.iter().map(|r| Anchor { decision_id: r.get(0), evidence_id: r.get(1) }).collect();
        Some(KeptDecisions { decisions, links, vectors: None })
    }
}

impl DecisionContextProviderPort for PgStore {
    /// In a cycle of the store's session, the decisions its memory search read in the same
    /// transaction (see [`search`](crate::store::MemoryRepositoryPort::search) on this type);
    /// otherwise one transaction of its own for both reads: one commit, and anchors that match
    /// the decisions read. By meaning, the context ordered as [`PgStore::by_meaning`] says.
    async fn load(
        &self,
        call: &Call<'_>,
        input: &str,
        current_domain: Option<&str>,
    ) -> Result<DecisionContext, StoreError> {
        if let Some(cycle) = self.cycle(call)?
            && let Some(kept) = cycle.take_kept().await
        {
            let mut context = DecisionContext::in_scope(&kept.decisions, &kept.links, current_domain);
            if let Some(m) = &self.meaning {
                m.order(self, call, &mut context.decisions, input, kept.vectors).await?;
            }
            return Ok(context);
        }
        let active = self
            .alone(
                "loading decisions",
                Begin { deadline: call.deadline(), custom_plans: false, async_commit: false },
                async |conn: &mut Conn, namespace: &str| {
                    let reads = ActiveQueries::new(Which::For(current_domain));
                    let rows = conn.pipeline(&reads.queries(&namespace), Then::Commit).await;
                    let rows = rows.map_err(backend("loading decisions"))?;
                    Ok(reads.kept(&rows[0], &rows[1]))
                },
            )
            .await?;
        let mut context =
            active.map(|a| DecisionContext::in_scope(&a.decisions, &a.links, current_domain)).unwrap_or_default();
        if let Some(m) = &self.meaning {
            m.order(self, call, &mut context.decisions, input, None).await?;
        }
        Ok(context)
    }
}

impl DecisionWritePort for PgStore {
    async fn persist_decision(&self, call: &Call<'_>, decision: &Decision) -> Result<String, StoreError> {
        let (kind, domain) = Scope::of(&decision.scope).columns();
        let mut write = KeyedWrite {
            doing: "storing a decision",
            sql: "SELECT planlock_persist_decision($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            values: vec![
                Box::new(decision.id.clone()),
                Box::new(decision.root_id.clone()),
                Box::new(i64::try_from(decision.version.get()).unwrap_or(i64::MAX)),
                Box::new(decision.text.clone()),
                Box::new(decision.strength.clone()),
                Box::new(kind),
                Box::new(domain.map(str::to_owned)),
                Box::new(decision.previous_version_id.clone()),
                Box::new(crate::store::now()),
            ],
            expected: decision.id.clone(),
        };
        // By meaning, with its vector (embedded within the call's deadline).
        if let Some(m) = &self.meaning {
            m.decision_write(&mut write, decision.text.clone(), call.deadline()).await?;
        }
        self.write(call, write).await
    }

    async fn persist_evidence(&self, call: &Call<'_>, evidence: &Evidence) -> Result<String, StoreError> {
        let write = KeyedWrite {
            doing: "storing evidence",
            sql: "SELECT planlock_persist_evidence($1, $2, $3, $4, $5, $6)",
            values: vec![
                Box::new(evidence.id.clone()),
                Box::new(evidence.summary.clone()),
                Box::new(evidence.source.clone()),
            ],
            expected: evidence.id.clone(),
        };
        self.write(call, write).await
    }

    async fn link(&self, call: &Call<'_>, anchor: &Anchor) -> Result<String, StoreError> {
        let write = KeyedWrite {
            doing: "linking",
            sql: "SELECT planlock_link($1, $2, $3, $4, $5)",
            values: vec![Box::new(anchor.decision_id.clone()), Box::new(anchor.evidence_id.clone())],
            expected: "linked".to_owned(),
        };
        self.write(call, write).await
    }
}
