//! Tenants (CONTRACT §20): the checked name, and the refusal of a role that would see every
//! tenant. Row-level security (schema 10, `v10.sql`) does the isolating.

use std::sync::Arc;

use super::conn::Conn;
use super::{PgError, reason};

/// The longest tenant name.
pub const MAX_TENANT_BYTES: usize = 64;

/// `tenant`, if it can be one: 1 to [`MAX_TENANT_BYTES`] ASCII letters, digits, `.`, `_` or
/// `-` (it is written into the `BEGIN` batch and the connection's options, so nothing else may
/// be in it).
pub(super) fn checked(tenant: &str) -> Result<Arc<str>, PgError> {
    let ok = !tenant.is_empty()
        && tenant.len() <= MAX_TENANT_BYTES
        && tenant.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    match ok {
        true => Ok(Arc::from(tenant)),
        false => Err(PgError::Tenant {
            tenant: crate::text::printable(tenant).chars().take(80).collect(),
            reason: format!("a tenant is 1 to {MAX_TENANT_BYTES} ASCII letters, digits, `.`, `_` or `-`"),
        }),
    }
}

/// Refuses a role that bypasses row-level security (a superuser, or BYPASSRLS): with it, a
/// tenant's connection would see every tenant's rows.
pub(super) async fn refuse_bypass(conn: &mut Conn, target: &str, tenant: &str) -> Result<(), PgError> {
    let row = conn
        .query_opt(
            "SELECT current_user::text, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .await
        .map_err(|e| PgError::Query { target: target.to_owned(), doing: "reading the role", reason: reason(&e) })?;
    match row {
        Some(row) if row.get::<_, bool>(1) => Err(PgError::Tenant {
            tenant: tenant.to_owned(),
            reason: format!(
                "the role `{}` bypasses row-level security (a superuser, or BYPASSRLS) and would see every tenant; \
                 connect as a role without it",
                crate::text::printable(row.get::<_, &str>(0))
            ),
        }),
        _ => Ok(()),
    }
}

/// Without a tenant: a role that bypasses row-level security would read and write every
/// tenant's rows as if they were tenant `''`'s. Refused once the database holds another tenant,
/// unless `all_tenants` asks to read them all; then every transaction is read only. Whether the
/// connection's transactions are read only.
pub(super) async fn refuse_crossing(conn: &mut Conn, target: &str, all_tenants: bool) -> Result<bool, PgError> {
    let row = conn
        .query_opt(
            "SELECT current_user::text, rolsuper OR rolbypassrls,
                    EXISTS (SELECT 1 FROM planlock_sessions WHERE tenant <> '')
                    OR EXISTS (SELECT 1 FROM planlock_budgets WHERE tenant <> '')
                    OR EXISTS (SELECT 1 FROM planlock_access WHERE tenant <> '')
             FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .await
        .map_err(|e| PgError::Query { target: target.to_owned(), doing: "reading the role", reason: reason(&e) })?;
    let Some(row) = row else { return Ok(false) };
    let (role, bypasses, tenants): (&str, bool, bool) = (row.get(0), row.get(1), row.get(2));
    match (bypasses, tenants, all_tenants) {
        (_, _, true) => Ok(true),
        (true, true, false) => Err(PgError::Tenant {
            tenant: String::new(),
            reason: format!(
                "the role `{}` bypasses row-level security (a superuser, or BYPASSRLS) and the database holds several \
                 tenants: without a tenant it would read and write theirs as its own. Name one (--tenant), or read \
                 them all with --all-tenants (read only)",
                crate::text::printable(role)
            ),
        }),
        _ => Ok(false),
    }
}
